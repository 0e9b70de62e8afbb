package server

import (
	"bytes"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
)

// openCleartext starts a cleartext connection's front end on its first
// bytes, p (the PROXY header, if any, already taken): HTTP/2 when h2c is
// allowed and p begins with the HTTP/2 client preface (prior knowledge,
// RFC 9113 §3.3), HTTP/1.1 otherwise. The front end is made only now so
// that it sees the client address a PROXY header names. A prefix of the
// preface is kept until the rest decides. It reports false when the
// connection went away.
func (c *conn) openCleartext(p []byte) bool {
	h2c := false
	if c.ls.srv.cfg.H2C {
		if c.ppBuf != nil {
			c.ppBuf = append(c.ppBuf, p...)
			p = c.ppBuf
		}
		n := min(len(p), len(http2.ClientPreface))
		if bytes.Equal(p[:n], []byte(http2.ClientPreface[:n])) {
			if n < len(http2.ClientPreface) {
				if c.ppBuf == nil {
					// p is the loop's shared read buffer: keep a copy.
					c.ppBuf = append(make([]byte, 0, len(http2.ClientPreface)), p...)
				}
				return true
			}
			h2c = true
		}
	}
	c.timer.Stop()
	c.timer = nil
	c.state = stateOpen
	t := c.ls.srv
	if h2c {
		c.proto = h2.NewServerConn(c, c.ls, t.cfg.H2)
	} else {
		c.proto = h1.NewServerConn(c, c.ls, t.cfg.H1)
	}
	if c.ls.draining {
		c.proto.Shutdown()
	}
	ok := c.feed(p)
	c.ppBuf = nil
	return ok
}

// feed hands a cleartext connection's bytes to its front end, which keeps
// what it cannot take yet (stream.ServerConn.Feed). It reports false when
// the connection went away.
func (c *conn) feed(p []byte) bool {
	if c.state != stateOpen || c.proto == nil {
		return c.state != stateClosed
	}
	if err := c.proto.Feed(p); err != nil {
		c.Close()
		return false
	}
	return c.state != stateClosed
}

// output is what waits for the socket: the session's ciphertext, or a
// cleartext connection's staging buffer from its first unsent byte.
func (c *conn) output() []byte {
	if c.cleartext {
		return c.plain[c.sent:]
	}
	return c.sess.Output()
}

// consume notes n bytes of output written. A cleartext connection's
// staging buffer starts over once all of it is on the socket, and a big
// one is dropped after a small flush, as the TLS path does at Flush.
func (c *conn) consume(n int) {
	if !c.cleartext {
		c.sess.Consume(n)
		return
	}
	c.sent += n
	if c.sent < len(c.plain) {
		return
	}
	if cap(c.plain) > 4*plainKeep && len(c.plain) <= plainKeep {
		c.plain = nil
	} else {
		c.plain = c.plain[:0]
	}
	c.sent = 0
}
