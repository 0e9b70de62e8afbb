package proxy

// HTTP/2 over TLS to origins: an h2Conn of an https:// upstream whose
// versions allow 2 (Caddy's default, 1.1 and 2) offers ALPN h2 and
// http/1.1, with the handshake off the loop as for any upstream TLS
// (upstreamtls.go). An origin that picks h2 gets the connection's
// streams; one that picks http/1.1 turns its pool to HTTP/1.1 for good
// (on this loop), and the streams waiting on the connection move to it,
// as if they had just arrived.

import (
	stdtls "crypto/tls"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// errSpeaksHTTP1 ends the streams of a connection whose origin picked
// http/1.1: they move to an HTTP/1.1 connection.
var errSpeaksHTTP1 = errors.New("the origin chose HTTP/1.1")

// h2ClientConfig is the TLS client configuration of an h2 pool's
// connections: the upstream's, offering h2 first.
func h2ClientConfig(c *stdtls.Config) *stdtls.Config {
	c = c.Clone()
	c.NextProtos = []string{"h2", "http/1.1"}
	return c
}

// startTLS runs once the connect completed: the handshake goes to the
// pool, and the connection waits for its progress.
func (hc *h2Conn) startTLS() {
	hc.state = h2Handshaking
	if err := hc.pool.h.startHandshake(hc.sess, hc.pool.loop, hc, hc.handshakeProgress); err != nil {
		hc.handshakeFailed(err)
		return
	}
	hc.desc.SetInterest(netpoll.Read)
	hc.flushHandshake()
}

// handshakeEvent moves the handshake's ciphertext both ways.
func (hc *h2Conn) handshakeEvent(ev netpoll.Event) {
	if ev&netpoll.EventWrite != 0 {
		if hc.advanceHandshake(); hc.state != h2Handshaking {
			return
		}
	}
	if ev&(netpoll.EventRead|netpoll.EventHup|netpoll.EventErr) == 0 || hc.sockEOF {
		return
	}
	eof, err := feedHandshake(hc.desc, hc.sess, hc.pool.h.tlsInBuf())
	if err != nil {
		hc.handshakeFailed(err)
		return
	}
	if eof {
		hc.sockEOF = true
		hc.setHandshakeInterest()
	}
}

// flushHandshake writes the handshake's output; false: the connection failed.
func (hc *h2Conn) flushHandshake() bool {
	blocked, err := writeHandshake(hc.desc, hc.sess, nil)
	if err != nil {
		hc.handshakeFailed(err)
		return false
	}
	if blocked != hc.writeWait {
		hc.writeWait = blocked
		hc.setHandshakeInterest()
	}
	return true
}

func (hc *h2Conn) setHandshakeInterest() {
	hc.desc.SetInterest(handshakeInterest(hc.sockEOF, hc.writeWait))
}

// handshakeProgress is the loop's task for the handshake worker's notify.
func (hc *h2Conn) handshakeProgress() {
	if hc.state == h2Handshaking {
		hc.advanceHandshake()
	}
}

// advanceHandshake writes what waits and, once the handshake is over,
// looks at what the origin chose.
func (hc *h2Conn) advanceHandshake() {
	if !hc.flushHandshake() || hc.writeWait {
		return
	}
	done, err := hc.sess.HandshakeDone()
	if !done {
		return
	}
	if err != nil {
		hc.handshakeFailed(err)
		return
	}
	if hc.sess.ALPN() != "h2" {
		// HTTP/1.1 only: this loop's pool speaks it to the upstream from
		// now on, and the streams that waited here move there.
		hc.pool.h2 = false
		hc.err = errSpeaksHTTP1
		hc.cc.Close()
		hc.close()
		return
	}
	hc.up()
	if hc.state == h2Up {
		// Records that came with the handshake's end raise no new edge.
		hc.desc.Kick(netpoll.EventRead)
	}
}

// handshakeFailed fails the connection's streams as a refused connect
// fails a request, and logs the failure off the loop.
func (hc *h2Conn) handshakeFailed(err error) {
	err = handshakeError(err)
	hc.pool.h.cfg.TLS.Failed(hc.pool.up, err)
	if errors.Is(err, pptls.ErrHandshakeTimeout) {
		hc.fail(errConnectTimeout)
		return
	}
	hc.fail(tlsError{err})
}

// writeTLS encrypts the protocol's output a batch at a time, each once
// the socket took the last. It reports false when it stopped: the socket
// is full (writeWait) or the connection failed.
func (hc *h2Conn) writeTLS() bool {
	s := hc.sess
	for {
		if p := s.Output(); len(p) > 0 {
			n, err := hc.desc.Write(p)
			if n > 0 {
				s.Consume(n)
			}
			if err == nil || err == unix.EINTR {
				continue
			}
			hc.writeStopped(err)
			return false
		}
		if len(hc.cc.Output()) < h2OutHigh {
			hc.cc.Flush()
		}
		out := hc.cc.Output()
		if len(out) == 0 {
			return true
		}
		n, err := s.Write(out[:min(len(out), tlsBatch)])
		hc.cc.Wrote(n)
		if err != nil {
			hc.fail(tlsError{err})
			return false
		}
	}
}

// readTLS reads the origin's plaintext into p: (n, nil), (0, nil) at the
// end of the origin's stream, unix.EAGAIN when no whole record waits, or
// the error that broke the connection. As a backendConn does, ciphertext
// is lent to the session straight from the loop's buffer.
func (hc *h2Conn) readTLS(p []byte) (int, error) {
	return readSessionTLS(hc.sess, hc.desc, hc.pool.h.tlsInBuf(), &hc.sockEOF, hc.later, p)
}
