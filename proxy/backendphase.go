package proxy

// A backend connection's lifecycle: its phases and every transition
// between them. Nothing else assigns backendConn.phase.
//
//	connecting ──▶ handshaking (TLS) ──▶ busy ◀──▶ idle
//	connecting ──────────────────────▶ busy ──▶ tunnel
//	any phase ──▶ closed
//
// connecting goes to handshaking for a TLS upstream, straight to busy
// otherwise; busy and idle alternate while the pool reuses the
// connection; busy turns into a tunnel when the origin switches
// protocols, for good. Every phase may end in closed.

import (
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
)

// bcPhase is where a backend connection is in its life.
type bcPhase uint8

const (
	bcConnecting  bcPhase = iota // the connect is in progress (connect timeout armed)
	bcHandshaking                // TLS upstreams: connected, the handshake runs off the loop (upstreamtls.go)
	bcIdle                       // in the pool's idle list, registered for reads (idle timeout armed)
	bcBusy                       // bound to an exchange: its request goes out, its response comes in
	bcTunnel                     // the origin switched protocols: a byte tunnel off the pool's books (tunnel.go)
	bcClosed                     // the socket is closed; the value is garbage once its exchange lets go
)

// comingUp reports whether the connection is still connecting (or, for
// TLS, still in its handshake): nothing it was sent is on the wire yet.
func (bc *backendConn) comingUp() bool {
	return bc.phase == bcConnecting || bc.phase == bcHandshaking
}

// live reports whether the connection moves an exchange's bytes: busy,
// or carrying a tunnel.
func (bc *backendConn) live() bool { return bc.phase == bcBusy || bc.phase == bcTunnel }

// handshaking: a TLS upstream's connect completed; the handshake starts
// (startTLS).
func (bc *backendConn) handshaking() {
	bc.phase = bcHandshaking
}

// becomeBusy: the connect (and for TLS the handshake) completed. The
// exchange hears of it, and the request that waited goes out.
func (bc *backendConn) becomeBusy() {
	bc.phase = bcBusy
	if bc.ex != nil {
		bc.ex.connected()
	}
	bc.setInterest() // write interest only while a write is blocked: poll is level-triggered
	bc.flush()
}

// bind gives the connection to ex: a new one (still coming up) or one
// taken from the idle list, which turns busy.
func (bc *backendConn) bind(ex *exchange) {
	bc.ex = ex
	if bc.phase == bcIdle {
		bc.timer.Stop() // the idle timeout
		bc.phase = bcBusy
	}
}

// goIdle: the pool keeps the connection for reuse, for at most timeout.
func (bc *backendConn) goIdle(timeout time.Duration) {
	bc.phase = bcIdle
	bc.idleSince = bc.pool.loop.Now()
	bc.pool.h.putBuf(bc.in) // an idle connection holds no buffer
	bc.in = nil
	bc.wireIdle()
	if bc.fcgi != nil {
		bc.fcgi.idle()
	}
	if cap(bc.out) > idleOutCap {
		bc.out = nil // an upload's batches; a request head needs less
	}
	bc.desc.SetInterest(netpoll.Read)
	bc.timer.Reset(timeout)
}

// becomeTunnel: the origin switched protocols, and the connection leaves
// the pool for good. Its one timer is not the tunnel's: a tunnel's idle
// timer is its exchange's (stream_timeout).
func (bc *backendConn) becomeTunnel() {
	bc.phase = bcTunnel
	bc.timer.Stop()
	bc.pool.detach()
}

// close closes the socket and leaves the pool's books right. The
// connection lets go of its exchange; one that closes on its own (a
// socket error, a timeout) then tells the exchange, which lets go of it.
func (bc *backendConn) close() {
	if bc.phase == bcClosed {
		return
	}
	wasActive, tunnel := bc.ex != nil, bc.phase == bcTunnel
	bc.ex = nil
	bc.phase = bcClosed
	bc.timer.Stop()
	bc.desc.Close()
	bc.pool.h.putBuf(bc.in)
	bc.out, bc.in = nil, nil
	bc.wireClose()
	if tunnel {
		bc.pool.up.OpenConns.Add(-1) // detach took it off the pool's books
		return
	}
	bc.pool.forget(bc, wasActive)
}
