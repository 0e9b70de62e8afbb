package proxy

// TLS to origins: a backendConn whose pool has a client configuration
// carries a pollproxy/tls Session, the same split as the server's. The
// connect completes on the loop; the handshake runs on the transport's
// handshake pool, off the loop, while the loop moves its ciphertext
// (Feed, Output) and learns of its progress through the task queue; then
// the record layer runs on the loop. Everything else — the pool, the
// parser, tunnels, timeouts — is the plain connection's.

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// tlsError is a failure of the TLS layer to an origin (a handshake that
// failed, a certificate that does not verify, an alert): an upstream
// failure whose reason is observe.ReasonTLS.
type tlsError struct{ err error }

func (e tlsError) Error() string { return e.err.Error() }
func (e tlsError) Unwrap() error { return e.err }

// errHandshakeEOF is a handshake the origin ended by closing the
// connection without an alert (crypto/tls says only "EOF").
var errHandshakeEOF = errors.New("the origin closed the connection during the TLS handshake")

// tlsBatch is the most plaintext encrypted at once: the ciphertext the
// session holds stays that small, so a slow origin stops the client's
// body (bodyWritten is told only once the socket took it).
const tlsBatch = sendBatch

// startTLS runs on the connect's completion: the handshake goes to the
// pool, and whatever must precede it in clear (a PROXY header) is
// written.
func (bc *backendConn) startTLS() {
	bc.handshaking()
	if err := bc.pool.h.startHandshake(bc.sess, bc.pool.loop, bc, bc.handshakeProgress); err != nil {
		bc.handshakeFailed(err)
		return
	}
	bc.desc.SetInterest(netpoll.Read)
	bc.flushHandshake()
}

// handshakeEvent moves the handshake's ciphertext: the rest of its
// output once the socket takes more, the origin's bytes into the
// session.
func (bc *backendConn) handshakeEvent(ev netpoll.Event) {
	if ev&netpoll.EventWrite != 0 {
		if bc.advanceHandshake(); bc.phase != bcHandshaking {
			return
		}
	}
	if ev&(netpoll.EventRead|netpoll.EventHup|netpoll.EventErr) == 0 || bc.sockEOF {
		return
	}
	eof, err := feedHandshake(bc.desc, bc.sess, bc.pool.h.tlsInBuf())
	if err != nil {
		bc.handshakeFailed(err)
		return
	}
	if eof {
		bc.sockEOF = true
		bc.setHandshakeInterest()
	}
}

// flushHandshake writes what waits in clear, then the handshake's
// output. It reports false when the connection failed.
func (bc *backendConn) flushHandshake() bool {
	blocked, err := writeHandshake(bc.desc, bc.sess, &bc.raw)
	if err != nil {
		bc.handshakeFailed(err)
		return false
	}
	if blocked != bc.writeWait {
		bc.writeWait = blocked
		bc.setHandshakeInterest()
	}
	return true
}

func (bc *backendConn) setHandshakeInterest() {
	bc.desc.SetInterest(handshakeInterest(bc.sockEOF, bc.writeWait))
}

// handshakeProgress is the loop's task for a notify of the handshake
// worker: output to write, or the handshake's end.
func (bc *backendConn) handshakeProgress() {
	if bc.phase == bcHandshaking {
		bc.advanceHandshake()
	}
}

// advanceHandshake writes what waits for the origin and, once all of it
// is written (what goes in clear must precede the first record) and the
// handshake is over, turns the connection busy: its request goes out.
func (bc *backendConn) advanceHandshake() {
	if !bc.flushHandshake() || bc.writeWait {
		return // the rest when the socket takes more
	}
	done, err := bc.sess.HandshakeDone()
	if !done {
		return
	}
	if err != nil {
		bc.handshakeFailed(err)
		return
	}
	if bc.sockEOF {
		// The origin closed during the handshake: what it sent is read,
		// then the end.
		bc.hup = true
	}
	bc.becomeBusy()
	if bc.phase == bcBusy {
		// Records that came with the handshake's end, and bytes whose
		// edge this event took, raise no new edge.
		bc.desc.Kick(netpoll.EventRead)
	}
}

// handshakeFailed closes a connection whose handshake failed: the
// exchange fails over as for a refused connect, and the failure gets its
// log line (off the loop).
func (bc *backendConn) handshakeFailed(err error) {
	err = handshakeError(err)
	ex, up := bc.ex, bc.pool.up
	bc.pool.h.cfg.TLS.Failed(up, err)
	bc.close()
	if ex != nil {
		if errors.Is(err, pptls.ErrHandshakeTimeout) {
			ex.connectFailed(errConnectTimeout)
			return
		}
		ex.connectFailed(tlsError{err})
	}
}

// writeTLS encrypts out[outOff:] a batch at a time, each once the socket
// took the last: ciphertext never piles up in the session.
func (bc *backendConn) writeTLS() bool {
	s := bc.sess
	wrote := false
	for {
		if p := s.Output(); len(p) > 0 {
			n, err := bc.desc.Write(p)
			if n > 0 {
				s.Consume(n)
				wrote = true
			}
			if err == nil || err == unix.EINTR {
				continue
			}
			bc.writeStopped(err, wrote)
			return false
		}
		if bc.outOff == len(bc.out) {
			return true
		}
		end := min(len(bc.out), bc.outOff+tlsBatch)
		n, err := s.Write(bc.out[bc.outOff:end])
		bc.outOff += n
		if err != nil {
			bc.broken(tlsError{err})
			return false
		}
	}
}

// readTLS reads the origin's plaintext into p, as many records as fit:
// (n, nil), (0, nil) at the end of the origin's stream (its close_notify,
// or the socket's EOF once the records before it were read), unix.EAGAIN
// when no whole record waits, or the error that broke the connection
// (readSessionTLS, with the loop's buffer).
func (bc *backendConn) readTLS(p []byte) (int, error) {
	return readSessionTLS(bc.sess, bc.desc, bc.pool.h.tlsInBuf(), &bc.sockEOF, bc.flushLater, p)
}

// quietTLS reports whether a connection whose response ended has nothing
// more from the origin: no plaintext nobody asked for, no part of a
// record. Records without data (a session ticket) are taken in passing.
func (bc *backendConn) quietTLS() bool {
	var b [1]byte
	n, err := bc.sess.Read(b[:])
	if bc.sess.Buffered() > 0 {
		bc.flushLater()
	}
	return n == 0 && errors.Is(err, pptls.ErrWouldBlock) && bc.sess.Pending() == 0
}

// idleTLS reads what an idle TLS connection received, and reports
// whether the connection may stay idle: only records without data came
// (a session ticket, a key update). The origin's close_notify or EOF
// teaches the pool the origin's idle timeout, as a plain close does.
func (bc *backendConn) idleTLS() bool {
	buf := bc.pool.h.getBuf()
	n, err := bc.readTLS(buf)
	bc.pool.h.putBuf(buf)
	if n == 0 && err == nil {
		bc.pool.up.LearnIdleClose(bc.pool.loop.Now().Sub(bc.idleSince))
	}
	return n == 0 && err == unix.EAGAIN && bc.sess.Pending() == 0
}

// tlsInBuf is the loop's buffer for ciphertext read from origins, lent
// to a session for one readTLS (Lend, Keep).
func (h *Handler) tlsInBuf() []byte {
	if h.tlsIn == nil {
		h.tlsIn = make([]byte, 64<<10)
	}
	return h.tlsIn
}
