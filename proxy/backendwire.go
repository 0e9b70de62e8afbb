package proxy

// The wire: how a backend connection's bytes meet its socket, in clear or
// through the TLS session newBackendConn gave it. The choice is made once,
// when the connection is made, and these methods are the only ones that
// ask which it is: the rest of the connection's code (h1client.go,
// backendphase.go, tunnel.go) is the same for both, and the TLS side's
// work is in upstreamtls.go. Each asks with one branch on the session
// rather than through an interface, so the plain path costs no indirect
// call and no allocation.

import (
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/proxy/proxyproto"
)

// announce queues a PROXY protocol header of version v for client: it
// goes out ahead of the request, in the same write, or for TLS in clear
// before the ClientHello. The connection then serves only that client.
func (bc *backendConn) announce(v int, client netip.AddrPort) {
	bc.client = client
	if bc.sess != nil {
		bc.raw = proxyproto.Append(bc.raw, v, client)
	} else {
		bc.out = proxyproto.Append(bc.out, v, client)
	}
}

// connectDone runs once the connect succeeded: the request goes out, for
// TLS once the handshake is over.
func (bc *backendConn) connectDone() {
	if bc.sess != nil {
		bc.startTLS()
		return
	}
	bc.becomeBusy()
}

// write puts out[outOff:] on the socket, through the session for TLS. It
// reports false when it stopped short: the socket is full (the
// connection waits for writable) or broke (the connection is closed).
func (bc *backendConn) write() bool {
	if bc.sess != nil {
		return bc.writeTLS()
	}
	wrote := false
	for bc.outOff < len(bc.out) {
		n, err := bc.desc.Write(bc.out[bc.outOff:])
		if n > 0 {
			bc.outOff += n
			wrote = true
		}
		if err == nil || err == unix.EINTR {
			continue
		}
		bc.writeStopped(err, wrote)
		return false
	}
	return true
}

// outWaiting reports whether bytes wait for the socket: request bytes in
// out, or for TLS ciphertext the session holds (a record of the request,
// an answer crypto/tls owes the origin, a close_notify).
func (bc *backendConn) outWaiting() bool {
	return bc.outOff < len(bc.out) || bc.sess != nil && bc.sess.Buffered() > 0
}

// read is a read of the origin's bytes: RawRead, or for TLS the
// session's plaintext (readTLS).
func (bc *backendConn) read(p []byte) (int, error) {
	if bc.sess != nil {
		return bc.readTLS(p)
	}
	return bc.desc.Read(p)
}

// quiet reports whether a connection whose response ended has nothing
// more from the origin in hand: for TLS, no plaintext nobody asked for
// and no part of a record (quietTLS); a plain connection's unread bytes
// are in its own buffer, which done looks at.
func (bc *backendConn) quiet() bool {
	return bc.sess == nil || bc.quietTLS()
}

// halfCloseNotify starts a tunnel's half-close to the origin: over TLS it
// is a close_notify first, and it reports true when one was queued (the
// socket's shutdown follows once it is written). In clear there is
// nothing before the socket's shutdown.
func (bc *backendConn) halfCloseNotify() bool {
	return bc.sess != nil && bc.sess.CloseNotify() == nil
}

// wireIdle lets go of what the wire holds while the connection is idle:
// the TLS session's buffers.
func (bc *backendConn) wireIdle() {
	if bc.sess != nil {
		bc.sess.ReleaseIdle()
	}
}

// wireClose ends the TLS session with the socket. A handshake in progress
// ends too; its last notify finds the connection closed.
func (bc *backendConn) wireClose() {
	if bc.sess != nil {
		bc.sess.Close()
	}
}

// idleEvent handles an idle connection's event. An idle connection has
// nothing to say: EOF or garbage, it is done. An orderly close is the
// origin's idle timeout: learn it, so the next connections close first.
// A TLS origin may send records that carry no data (a session ticket, a
// key update). A report with nothing behind it (io_uring's poll reports
// the socket's readiness again when it is re-armed) leaves it idle.
func (bc *backendConn) idleEvent() {
	if bc.sess != nil {
		if bc.idleTLS() {
			return
		}
	} else {
		closed, dead := bc.peek()
		if !dead {
			return
		}
		if closed {
			bc.pool.up.LearnIdleClose(bc.pool.loop.Now().Sub(bc.idleSince))
		}
	}
	bc.close()
}

// peekAfter is how long a connection must have been idle before reuse
// checks it with a peek. Under load connections are idle for microseconds
// and their readiness events have been seen; the system call is spent only
// where the origin had time to close.
const peekAfter = 500 * time.Millisecond

// dead reports, without blocking, whether an idle connection was closed by
// the origin since it went idle (the event may not have been handled yet).
// Bytes from a TLS origin may be records without data, which leave it
// usable.
func (bc *backendConn) dead(now time.Time) bool {
	if now.Sub(bc.idleSince) < peekAfter {
		return false
	}
	closed, dead := bc.peek()
	if closed {
		bc.pool.up.LearnIdleClose(now.Sub(bc.idleSince))
	}
	if dead && !closed && bc.sess != nil {
		return !bc.idleTLS()
	}
	return dead
}

// peek looks at an idle connection without reading: closed when the
// origin closed it in order (FIN), dead when it is unusable for any reason
// (closed, reset, or bytes nobody asked for).
func (bc *backendConn) peek() (closed, dead bool) {
	var b [1]byte
	n, err := bc.desc.Peek(b[:])
	return n == 0 && err == nil, n > 0 || err != unix.EAGAIN
}
