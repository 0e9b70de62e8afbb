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
	"io"

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
	t := hc.pool.h.cfg.TLS
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = hc.pool.h.cfg.ConnectTimeout
	}
	loop, progress := hc.pool.loop, hc.handshakeProgress
	notify := func() { loop.PostFor(hc, progress) } // on the handshake worker: it only posts
	if err := t.Handshakes.StartWithin(hc.sess, notify, timeout); err != nil {
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
	buf := hc.pool.h.tlsInBuf()
	for {
		n, err := hc.desc.Read(buf)
		switch {
		case n > 0:
			if ferr := hc.sess.Feed(buf[:n]); ferr != nil {
				hc.handshakeFailed(ferr)
				return
			}
			continue
		case n == 0 && err == nil:
			hc.sockEOF = true
			hc.sess.FeedEOF()
			hc.setHandshakeInterest()
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			hc.handshakeFailed(err)
		}
		return
	}
}

// flushHandshake writes the handshake's output; false: the connection failed.
func (hc *h2Conn) flushHandshake() bool {
	for {
		p := hc.sess.Output()
		if len(p) == 0 {
			break
		}
		n, err := hc.desc.Write(p)
		if n > 0 {
			hc.sess.Consume(n)
		}
		switch {
		case err == nil || err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if !hc.writeWait {
				hc.writeWait = true
				hc.setHandshakeInterest()
			}
			return true
		}
		hc.handshakeFailed(err)
		return false
	}
	if hc.writeWait {
		hc.writeWait = false
		hc.setHandshakeInterest()
	}
	return true
}

func (hc *h2Conn) setHandshakeInterest() {
	var want netpoll.Interest
	if !hc.sockEOF {
		want = netpoll.Read
	}
	if hc.writeWait {
		want |= netpoll.Write
	}
	hc.desc.SetInterest(want)
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
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errHandshakeEOF
	}
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
	s := hc.sess
	total, lent := 0, false
	defer func() {
		if lent {
			s.Keep()
		}
	}()
	for total < len(p) {
		n, err := s.Read(p[total:])
		if s.Buffered() > 0 {
			hc.later() // crypto/tls answered something (a KeyUpdate)
		}
		if n > 0 {
			total += n
			continue
		}
		if total > 0 {
			break
		}
		switch {
		case err == io.EOF:
			return 0, nil
		case !errors.Is(err, pptls.ErrWouldBlock):
			return 0, tlsError{err}
		case hc.sockEOF:
			return 0, nil
		}
		if lent {
			s.Keep()
			lent = false
		}
		buf := hc.pool.h.tlsInBuf()
		m, rerr := hc.desc.Read(buf)
		switch {
		case m > 0:
			if lerr := s.Lend(buf[:m]); lerr != nil {
				return 0, tlsError{lerr}
			}
			lent = true
		case m == 0 && rerr == nil:
			hc.sockEOF = true
		case rerr == unix.EINTR:
		default:
			return 0, rerr
		}
	}
	return total, nil
}
