package h2

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

// ErrConnClosed is returned by Feed and ResponseWriter methods once the
// connection is closed or closing after a graceful shutdown. The other
// ResponseWriter errors are the contract's: stream.ErrStreamClosed,
// stream.ErrHeadWritten, stream.ErrNoHead and stream.ErrBadStatus.
var ErrConnClosed = errors.New("h2: connection closed")

// ErrBodyLength is WriteHeader's answer to a head that ends the stream
// yet announces content: a response no client could take.
var ErrBodyLength = errors.New("h2: response announces content it does not send")

// ResetError is what Events.OnAbort receives when a stream is reset: by the
// client (Remote) or by pollproxy after a stream error.
type ResetError struct {
	Code   http2.ErrCode
	Remote bool
	Reason string
}

// Error implements error.
func (e *ResetError) Error() string {
	if e.Remote {
		return fmt.Sprintf("h2: stream reset by client: %v", e.Code)
	}
	return fmt.Sprintf("h2: stream reset: %v: %s", e.Code, e.Reason)
}

// ConnError is a connection error: a GOAWAY we sent (Remote false) after a
// protocol violation or resource abuse. Feed returns it, and every open
// stream's OnAbort receives it.
type ConnError struct {
	Code   http2.ErrCode
	Reason string
}

// Error implements error.
func (e *ConnError) Error() string {
	return fmt.Sprintf("h2: connection error %v: %s", e.Code, e.Reason)
}

// connErr and streamErr are the internal error values every frame handler
// returns; ServerConn.handleError maps them to GOAWAY or RST_STREAM.
type connErr struct {
	code   http2.ErrCode
	reason string
}

func (e connErr) Error() string { return e.reason }

type streamErr struct {
	id     uint32
	code   http2.ErrCode
	reason string
}

func (e streamErr) Error() string { return e.reason }

// mapFramerError turns an error from http2.Framer.ReadFrame into ours.
// Errors while parsing HEADERS are always connection errors: the header
// block was not decoded, so the HPACK state would be lost.
func mapFramerError(err error, detail error, typ http2.FrameType) error {
	reason := "frame error"
	if detail != nil {
		reason = detail.Error()
	}
	switch e := err.(type) {
	case http2.ConnectionError:
		return connErr{http2.ErrCode(e), reason}
	case http2.StreamError:
		if typ == http2.FrameHeaders {
			return connErr{e.Code, reason}
		}
		return streamErr{e.StreamID, e.Code, reason}
	}
	// A payload too short for its fixed fields (io.ErrUnexpectedEOF).
	return connErr{http2.ErrCodeFrameSize, "frame too short: " + err.Error()}
}
