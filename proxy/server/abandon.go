package server

import (
	"errors"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// errAbandoned is what a connection's handlers hear (OnAbort) when a panic
// in work for the connection made the loop abandon it.
var errAbandoned = errors.New("connection abandoned after a panic")

// serving is a front end that can name the request it was serving when
// a panic struck (h1.ServerConn, h2.ServerConn).
type serving interface{ Serving() *stream.Request }

// lastWorder is a front end with a last frame to send when abandoned
// (h2.ServerConn: a GOAWAY).
type lastWorder interface{ LastWords() []byte }

var (
	_ netpoll.Owner    = (*conn)(nil)
	_ stream.Abandoner = (*conn)(nil)
)

// Abandon implements netpoll.Owner: work for this connection panicked, on
// its socket's event, its timer, its handshake's task, its flush, or an
// origin connection's event relaying an answer to it. Its state may be
// half-updated, so it is discarded whole: an HTTP/2 client is told
// GOAWAY(INTERNAL_ERROR) when that can still be written, the socket is
// closed, the connection's gauges and its session released, and only
// then its front end aborted, so that its handlers close their origin
// connections and release what they hold. A panic in that last step
// reaches the loop, which reports it: by then the socket and the
// connection's own books are already right.
func (c *conn) Abandon(any) (site, request string) {
	if c.state == stateClosed {
		return "", ""
	}
	p := c.proto
	if s, ok := p.(serving); ok {
		if r := s.Serving(); r != nil {
			site, request = r.Authority, r.RequestLine()
		}
	}
	c.proto = nil
	if lw, ok := p.(lastWorder); ok && c.state == stateOpen && !c.writeShut {
		c.lastWords(lw)
	}
	c.destroy(errAbandoned)
	if p != nil {
		p.Abort(errAbandoned)
	}
	return site, request
}

// lastWords writes the front end's last frame after what is queued, as
// far as the socket takes it now, and reads what the client had sent, so
// that the close ends in a FIN the client reads the frame before, not a
// reset for unread input. Best effort: the session or the front end may
// be what panicked, and a panic here only costs the frame.
func (c *conn) lastWords(lw lastWorder) {
	defer func() { _ = recover() }()
	c.plain = append(c.plain, lw.LastWords()...)
	if !c.cleartext {
		if _, err := c.sess.Write(c.plain); err != nil {
			return
		}
		c.plain = c.plain[:0]
	}
	for out := c.output(); len(out) > 0; out = c.output() {
		n, err := c.desc.Write(out)
		if n <= 0 || err != nil {
			break
		}
		c.consume(n)
	}
	buf := c.ls.readBuf
	for i := 0; i < readBudget; i++ {
		if n, _ := c.desc.Read(buf); n <= 0 {
			break
		}
	}
}
