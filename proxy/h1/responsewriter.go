package h1

import (
	"errors"
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Errors of HTTP/1.1's own a handler may see from the ResponseWriter,
// besides the contract's stream.ErrStreamClosed, stream.ErrHeadWritten,
// stream.ErrNoHead and stream.ErrBadStatus.
var (
	// ErrBadField: a field that would corrupt the wire (CR, LF, NUL...).
	ErrBadField = errors.New("h1: invalid response field")
	// ErrBodyLength: more body than the declared content-length, or a
	// non-zero content-length on a response that ends with its head.
	ErrBodyLength = errors.New("h1: response body does not match content-length")
)

// response progress
const (
	rsNone uint8 = iota // no final head yet
	rsBody              // final head written, body may follow
	rsDone              // response complete
)

// response body framing
const (
	fwNone    uint8 = iota // no body bytes go on the wire
	fwLength               // content-length
	fwChunked              // chunked, trailers allowed
	fwClose                // close-delimited (HTTP/1.0 clients)
	fwTunnel               // after a 101: raw bytes both ways
)

// responseWriter is the handler's view of the exchange on a ServerConn:
// it serialises the response as the handler writes it, choosing its
// framing (framing.go's responseBody) and the connection management
// fields itself. A separate type so that ServerConn's own method set
// stays that of stream.ServerConn.
type responseWriter struct{ c *ServerConn }

var _ stream.ResponseWriter = (*responseWriter)(nil)

// CloseConnection implements stream.ConnCloser: the head says
// "connection: close" and the connection closes after this response.
func (w *responseWriter) CloseConnection() { w.c.keepAlive = false }

// RefuseBody implements stream.BodyRefuser: the handler reads no more of
// the body. When more is left than settle drops to keep the connection (a
// chunked body's rest is unknown), the connection will close after the
// response, and the head is to say so (RFC 9112 §9.6), or a client that
// sends its next request on this connection loses it.
func (w *responseWriter) RefuseBody() {
	c := w.c
	if c.resp == rsNone && !c.reqDone && (c.p.br.mode != bodyLength || c.p.br.remaining > c.cfg.MaxDiscard) {
		c.keepAlive = false
	}
}

// WriteHeader implements stream.ResponseWriter.
func (w *responseWriter) WriteHeader(status int, fields []stream.Field, endStream bool) error {
	c := w.c
	if c.state != scActive || c.resp == rsDone {
		return stream.ErrStreamClosed
	}
	if c.resp != rsNone {
		return stream.ErrHeadWritten
	}
	if status == 101 && c.upgrade != "" {
		for _, f := range fields {
			if !ValidField(f) {
				return ErrBadField
			}
		}
		c.startTunnel(fields)
		return nil
	}
	if status < 100 || status > 599 || status == 101 || status < 200 && endStream {
		return stream.ErrBadStatus
	}
	for _, f := range fields {
		if !ValidField(f) {
			return ErrBadField
		}
	}
	if status < 200 {
		if c.http10 || status == 100 && (c.sent100 || !c.expect) {
			return nil // 1.0 has no interim responses; one 100 is enough
		}
		if status == 100 {
			c.sent100 = true
		}
		b := appendStatusLine(c.wbuf[:0], status)
		b = appendResponseFields(b, fields)
		b = append(b, '\r', '\n')
		c.wbuf = b
		c.t.Write(b)
		return nil
	}

	// The handler's Content-Length is read by the parsers' rule; the
	// framing on the wire is the front end's (field.NotToClient).
	fr := newFraming(nil)
	for _, f := range fields {
		if f.Name == "content-length" && fr.addLength(f.Value) != framingOK {
			return ErrBodyLength
		}
	}
	if c.expect && !c.sent100 && !c.reqDone {
		// The client is still waiting to be told to send its body; it will
		// not be, so the connection cannot be reused after this response.
		c.expect = false
		c.keepAlive = false
	}
	b := appendStatusLine(c.wbuf[:0], status)
	b = appendResponseFields(b, fields)
	c.framing = fwNone
	switch responseBody(status, c.isHead, fr.body(false)) {
	case bodyNone:
		// HEAD, 204, 304, or an announced empty body. The response to a
		// HEAD and a 304 may announce the representation's length; a 204
		// has none, also to a HEAD (RFC 9110 §8.6).
		if fr.length >= 0 && status != 204 {
			b = appendContentLength(b, fr.length)
		}
		if fr.length == 0 && !endStream && !c.isHead && status != 304 {
			c.framing, c.remaining = fwLength, 0 // a Write is refused, not dropped
		}
	case bodyLength:
		if endStream {
			return ErrBodyLength
		}
		c.framing, c.remaining = fwLength, fr.length
		b = appendContentLength(b, fr.length)
	default:
		// No length given: the front end frames the body itself.
		switch {
		case endStream:
			b = appendContentLength(b, 0)
		case !c.http10:
			c.framing = fwChunked
			b = append(b, "transfer-encoding: chunked\r\n"...)
		default:
			c.framing = fwClose
			c.keepAlive = false
		}
	}
	if c.shutdown || status == 408 {
		// A 408 says the server stopped waiting for this client (RFC 9110
		// §15.5.9): the rest of its request is not read.
		c.keepAlive = false
	}
	switch {
	case !c.keepAlive:
		b = append(b, "connection: close\r\n"...)
	case c.http10:
		b = append(b, "connection: keep-alive\r\n"...)
	}
	b = append(b, '\r', '\n')
	c.wbuf = b
	c.t.Write(b)
	c.resp = rsBody
	if endStream {
		c.resp = rsDone
		c.settle()
		c.wake()
	}
	return nil
}

// appendResponseFields writes the handler's fields minus what the front end
// owns: framing and connection management.
func appendResponseFields(b []byte, fields []stream.Field) []byte {
	for _, f := range fields {
		if field.Lookup(f.Name).Has(field.NotToClient) {
			continue
		}
		b = appendField(b, f)
	}
	return b
}

func appendContentLength(b []byte, n int64) []byte {
	b = append(b, "content-length: "...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// smallChunk is the largest chunk copied into scratch to go out in one
// transport write; larger ones are written in three pieces rather than
// growing a per-connection buffer.
const smallChunk = 8 << 10

// Write implements stream.ResponseWriter. It takes no more than the
// transport's room below WriteHighWater; when it takes less than offered,
// OnWritable follows once the transport drains.
func (w *responseWriter) Write(p []byte) (int, error) {
	c := w.c
	if c.state != scActive || c.resp == rsDone {
		return 0, stream.ErrStreamClosed
	}
	if c.resp == rsNone {
		return 0, stream.ErrNoHead
	}
	if c.framing == fwNone {
		return len(p), nil // HEAD, 204, 304: there is no body to write
	}
	if len(p) == 0 {
		return 0, nil
	}
	room := c.cfg.WriteHighWater - c.t.Buffered()
	if room <= 0 {
		c.wantWrite = true
		return 0, nil
	}
	n := min(len(p), room)
	var err error
	if c.framing == fwLength && int64(n) > c.remaining {
		n = int(c.remaining)
		err = ErrBodyLength
	}
	if n == 0 {
		return 0, err
	}
	switch c.framing {
	case fwChunked:
		if n <= smallChunk {
			b := AppendChunk(c.wbuf[:0], p[:n])
			c.wbuf = b
			c.t.Write(b)
		} else {
			b := AppendChunkHeader(c.wbuf[:0], n)
			c.wbuf = b
			c.t.Write(b)
			c.t.Write(p[:n])
			c.t.Write(crlf)
		}
	case fwLength:
		c.remaining -= int64(n)
		c.t.Write(p[:n])
	default:
		c.t.Write(p[:n])
	}
	if n < len(p) && err == nil {
		c.wantWrite = true
	}
	return n, err
}

var crlf = []byte("\r\n")

// Close implements stream.ResponseWriter. Trailers go out only on a chunked
// response. A response shorter than its content-length ends the
// connection, the only way left to tell the client it was cut short.
func (w *responseWriter) Close(trailers []stream.Field) error {
	c := w.c
	if c.state != scActive || c.resp == rsDone {
		return stream.ErrStreamClosed
	}
	if c.resp == rsNone {
		c.abortAll(stream.ErrNoHead)
		return stream.ErrNoHead
	}
	switch c.framing {
	case fwChunked:
		b := append(c.wbuf[:0], '0', '\r', '\n')
		for _, f := range trailers {
			if ValidField(f) && !field.Lookup(f.Name).Has(field.NotInTrailer) {
				b = appendField(b, f)
			}
		}
		b = append(b, '\r', '\n')
		c.wbuf = b
		c.t.Write(b)
	case fwLength:
		if c.remaining > 0 {
			c.keepAlive = false
		}
	case fwClose:
		c.keepAlive = false
	case fwTunnel:
		c.resp = rsDone
		c.tunnelWriteDone()
		return nil
	}
	c.resp = rsDone
	c.settle()
	c.wake()
	return nil
}

// Reset implements stream.ResponseWriter: on HTTP/1.1 the only way to abort
// a response is to close the connection.
func (w *responseWriter) Reset(code uint32) {
	c := w.c
	if c.state == scClosed {
		return
	}
	c.closeNow()
}

// Consumed implements stream.ResponseWriter, reopening the body window.
func (w *responseWriter) Consumed(n int) {
	c := w.c
	if c.state != scActive || !c.deliver || n <= 0 {
		return
	}
	c.unconsumed = max(0, c.unconsumed-n)
	c.wake()
}
