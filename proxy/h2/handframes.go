package h2

import (
	"encoding/binary"

	"golang.org/x/net/http2"
)

// The frames both ends read by hand, not through x/net's Framer, which
// makes a frame struct for each (it reuses only DATA's): HEADERS and
// WINDOW_UPDATE come with every request, and having seen no HEADERS the
// Framer would refuse every CONTINUATION, so that goes by hand too. Each
// gives the verdicts the Framer gave (mapFramerError), so that a
// malformed frame gets the same error code as before (h2spec checks the
// server's).

// headersFragment is the header block fragment of a complete HEADERS
// frame b, its payload without padding and priority, and the stream the
// priority names as its dependency (0 without one). A frame it cannot
// read is a connection error: its block goes undecoded, so the HPACK
// state would be lost.
func headersFragment(b []byte) (frag []byte, dep uint32, err *connErr) {
	if streamID(b) == 0 {
		return nil, 0, &connErr{http2.ErrCodeProtocol, "HEADERS frame with stream ID 0"}
	}
	flags := http2.Flags(b[4])
	p := b[frameHeaderLen:]
	pad := 0
	if flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return nil, 0, &connErr{http2.ErrCodeFrameSize, "HEADERS too short for its pad length"}
		}
		pad, p = int(p[0]), p[1:]
	}
	if flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return nil, 0, &connErr{http2.ErrCodeFrameSize, "HEADERS too short for its priority"}
		}
		dep, p = binary.BigEndian.Uint32(p)&(1<<31-1), p[5:]
	}
	if pad > len(p) {
		return nil, 0, &connErr{http2.ErrCodeProtocol, "HEADERS padding longer than its payload"}
	}
	return p[:len(p)-pad], dep, nil
}

// windowIncrement is the increment of a complete WINDOW_UPDATE frame b,
// or the error of a malformed one: a length other than 4, a connection
// error; an increment of 0, a stream error (a connection error on stream
// 0), RFC 9113 §6.9.
func windowIncrement(b []byte) (int64, error) {
	id := streamID(b)
	if frameLen(b) != 4 {
		return 0, connErr{http2.ErrCodeFrameSize, "WINDOW_UPDATE length is not 4"}
	}
	inc := int64(binary.BigEndian.Uint32(b[frameHeaderLen:]) & (1<<31 - 1))
	if inc == 0 {
		if id == 0 {
			return 0, connErr{http2.ErrCodeProtocol, "WINDOW_UPDATE with increment 0"}
		}
		return 0, streamErr{id, http2.ErrCodeProtocol, "WINDOW_UPDATE with increment 0"}
	}
	return inc, nil
}
