package proxy

// The socket side of a TLS session to an origin, the same for an
// HTTP/1.1 connection (upstreamtls.go) and an HTTP/2 one
// (h2origintls.go): handing the handshake to the workers, moving its
// ciphertext, and reading records once it is over. Each connection keeps
// its own state (phase, writeWait, sockEOF) and what follows from it.

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// startHandshake hands sess's handshake to the transport's handshake
// pool, within the TLS timeout (the connect timeout when it has none);
// each step of it posts progress for owner to loop.
func (h *Handler) startHandshake(sess *pptls.Session, loop *netpoll.Loop, owner netpoll.Owner, progress func()) error {
	t := h.cfg.TLS
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = h.cfg.ConnectTimeout
	}
	// notify runs on the handshake worker: it only posts to the loop.
	notify := func() { loop.PostFor(owner, progress) }
	return t.Handshakes.StartWithin(sess, notify, timeout)
}

// feedHandshake gives sess what the origin sent until the socket has no
// more. eof reports the socket's end, which sess has been told of: the
// worker reads what came before it (an alert, often) and then EOF, and
// reports back through the task queue. err is a failure of the socket
// or of the session.
func feedHandshake(desc *netpoll.Desc, sess *pptls.Session, buf []byte) (eof bool, err error) {
	for {
		n, err := desc.Read(buf)
		switch {
		case n > 0:
			if ferr := sess.Feed(buf[:n]); ferr != nil {
				return false, ferr
			}
			continue
		case n == 0 && err == nil:
			sess.FeedEOF()
			return true, nil
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return false, err
		}
		return false, nil
	}
}

// writeHandshake writes *raw, what goes in clear before the handshake (a
// PROXY header; raw may be nil), then the handshake's output, until
// everything is written or the socket is full (blocked).
func writeHandshake(desc *netpoll.Desc, sess *pptls.Session, raw *[]byte) (blocked bool, err error) {
	for {
		var p []byte
		fromSess := raw == nil || len(*raw) == 0
		if fromSess {
			p = sess.Output()
		} else {
			p = *raw
		}
		if len(p) == 0 {
			return false, nil
		}
		n, err := desc.Write(p)
		if n > 0 {
			if fromSess {
				sess.Consume(n)
			} else if *raw = (*raw)[n:]; len(*raw) == 0 {
				*raw = nil
			}
		}
		switch {
		case err == nil || err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true, nil
		}
		return false, err
	}
}

// handshakeInterest is what a handshaking connection waits for: the
// origin's bytes until its socket ended, and room to write while its
// output waits.
func handshakeInterest(sockEOF, writeWait bool) netpoll.Interest {
	var want netpoll.Interest
	if !sockEOF {
		want = netpoll.Read
	}
	if writeWait {
		want |= netpoll.Write
	}
	return want
}

// handshakeError names a handshake the origin ended by closing the
// connection (crypto/tls says only "EOF") as such.
func handshakeError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errHandshakeEOF
	}
	return err
}

// readSessionTLS reads the origin's plaintext into p, as many records
// as fit, reading the socket into buf when no whole record waits:
// (n, nil), (0, nil) at the end of the origin's stream (its close_notify,
// or the socket's EOF once the records before it were read; *sockEOF
// records the latter), unix.EAGAIN when no whole record waits, or the
// error that broke the connection. Ciphertext read from the socket is
// lent to sess (Lend): whole records are decrypted straight from buf,
// and only what is left of it is copied, by Keep, before buf is read
// into again. answered runs when crypto/tls answered something (a
// KeyUpdate) that waits to be written.
func readSessionTLS(sess *pptls.Session, desc *netpoll.Desc, buf []byte, sockEOF *bool, answered func(), p []byte) (int, error) {
	n, lent, err := decryptTLS(sess, desc, buf, sockEOF, answered, p)
	if lent {
		sess.Keep()
	}
	return n, err
}

// decryptTLS is readSessionTLS but for the last Keep: lent reports that
// sess still holds buf's ciphertext.
func decryptTLS(sess *pptls.Session, desc *netpoll.Desc, buf []byte, sockEOF *bool, answered func(), p []byte) (total int, lent bool, err error) {
	for total < len(p) {
		var n int
		n, err = sess.Read(p[total:])
		if sess.Buffered() > 0 {
			answered()
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
			return 0, lent, nil
		case !errors.Is(err, pptls.ErrWouldBlock):
			return 0, lent, tlsError{err}
		case *sockEOF:
			return 0, lent, nil
		}
		if lent {
			sess.Keep() // the buffer is read into again
			lent = false
		}
		m, rerr := desc.Read(buf)
		switch {
		case m > 0:
			if lerr := sess.Lend(buf[:m]); lerr != nil {
				return 0, false, tlsError{lerr}
			}
			lent = true
		case m == 0 && rerr == nil:
			*sockEOF = true
		case rerr == unix.EINTR:
		default:
			return 0, false, rerr
		}
	}
	return total, lent, nil
}
