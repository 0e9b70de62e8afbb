package server

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/stream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

const (
	// readBudget bounds socket reads per event, so a client streaming an
	// upload cannot starve the loop's other connections.
	readBudget = 8
	// lingerTimeout bounds how long a closing connection keeps reading
	// (and discarding) so that the peer sees our last bytes instead of a
	// reset caused by unread input.
	lingerTimeout = 2 * time.Second
	// plainKeep is the capacity of the plaintext staging buffer that an
	// idle connection keeps.
	plainKeep = 32 << 10
	// idleSweep is how often a loop releases the buffers of connections
	// that saw no traffic since the last sweep: an idle connection costs
	// its protocol state, not the buffers of its last exchange, while a
	// busy one keeps them and allocates nothing per request for it.
	idleSweep = time.Second
)

// acmeALPN is the protocol of ACME TLS-ALPN-01 validations (RFC 8737).
const acmeALPN = "acme-tls/1"

type connState uint8

const (
	stateHandshake connState = iota
	stateOpen
	stateClosing // flushing the last bytes, then linger
	stateLinger  // write side shut, discarding input until EOF or timeout
	stateClosed
)

// conn is one client connection: a socket registered once with the loop, a
// TLS session over it, and the front end (HTTP/2 or HTTP/1.1) chosen by
// ALPN. It implements stream.Transport for that front end.
//
// A cleartext connection (Config.Cleartext) has no session: the front end
// reads straight from the loop's read buffer and its output goes to the
// socket from the staging buffer. It is a flag here rather than a
// session-shaped pass-through behind an interface so that the TLS path
// keeps its direct, inlinable calls into *pptls.Session: what it costs TLS
// is one predictable branch on a field already in cache.
type conn struct {
	ls     *loopState
	desc   *netpoll.Desc
	sess   *pptls.Session
	proto  stream.ServerConn
	remote netip.AddrPort
	local  netip.AddrPort // the address the client connected to, once asked (LocalAddr)
	state  connState

	plain       []byte // plaintext from the front end, encrypted at Flush
	sent        int    // cleartext: bytes of plain already on the socket
	cleartext   bool   // no TLS: plain is written as it is, from sent on
	active      bool   // bytes moved since the last idle sweep
	released    bool   // the sweep released the buffers and no byte moved since
	flushQueued bool
	writeBlock  bool // the socket refused bytes: waiting for writable
	readPaused  bool
	protoFlush  bool        // the front end asked for its Flush this iteration
	feedOwed    bool        // reads resumed: the front end gets a Feed, bytes or not
	readKicked  bool        // a synthetic read event is queued
	peerDone    bool        // the poller reported the peer's close: read on to EOF
	hsPosted    atomic.Bool // a handshake notification is queued on the loop
	// Until the client's first TLS record (its ClientHello) is complete,
	// the handshake is not handed to the worker pool: a worker waiting on
	// a silent client would be lost to every other client (slowloris).
	hsStarted bool
	hello     [5]byte // the first record's header
	helloN    int     // bytes of the first record seen so far
	// hsFed counts ciphertext fed to the session during the handshake; at
	// pptls.MaxBufferedInput reading stops (hsFull) until the handshake is
	// done, rather than overflowing the session: a client may send its
	// request, and a large body, right behind its Finished.
	hsFed  int
	hsFull bool
	// A PROXY protocol header comes first (ppWait, proxyheader.go) under
	// ppPolicy; its bytes so far are in ppBuf when one read did not hold
	// it all. A cleartext connection with h2c keeps there, after the
	// header, the prefix of the HTTP/2 preface that has come so far. ppTimed: the timer is proxy_protocol's timeout, armed at
	// accepted.
	ppWait   bool
	ppTimed  bool
	ppPolicy ProxyPolicy
	ppBuf    []byte
	accepted time.Time
	timer    *netpoll.Timer
	wtArmed  bool // timer is the write timeout (WriteTimeout)
	closeErr error
	// A tunnel's half-close: readEOF when the client's stream ended and
	// the front end kept the connection (stream.EOFReceiver); writeShut
	// once the front end ended our direction (CloseWrite), shutDone when
	// the socket's write side is shut.
	readEOF, writeShut, shutDone bool
}

func (c *conn) interest() netpoll.Interest {
	var want netpoll.Interest
	if (!c.readPaused && !c.readEOF || c.state != stateOpen) && !c.hsFull {
		want |= netpoll.Read
	}
	if c.writeBlock {
		want |= netpoll.Write
	}
	return want
}

// HandleEvent is called by the loop when the socket is ready.
func (c *conn) HandleEvent(ev netpoll.Event) {
	if ev&netpoll.EventWrite != 0 {
		c.writeSocket()
	}
	if ev&(netpoll.EventHup|netpoll.EventErr) != 0 {
		c.peerDone = true
	}
	if ev&(netpoll.EventRead|netpoll.EventHup|netpoll.EventErr) != 0 && c.state != stateClosed {
		c.readKicked = false
		if c.feedOwed && c.state == stateOpen && !c.readPaused {
			c.feedOwed = false
			if !c.resumeFeed() {
				return
			}
		}
		if c.readEOF && c.state == stateOpen {
			if ev&netpoll.EventErr != 0 {
				c.destroy(unix.ECONNRESET)
			}
			return // nothing more to read: the client's stream ended
		}
		c.readSocket()
	}
}

// resumeFeed gives a front end that resumed reading what the session holds
// already, or an empty Feed so it takes up input it held back. It reports
// false when the connection went away meanwhile.
func (c *conn) resumeFeed() bool {
	if c.cleartext {
		return c.feed(nil)
	}
	ok, fed := c.decrypt()
	if !ok || fed || c.readPaused {
		return ok
	}
	if err := c.proto.Feed(nil); err != nil {
		c.Close()
		return false
	}
	return true
}

func (c *conn) readSocket() {
	buf := c.ls.readBuf
	for i := 0; i < readBudget; i++ {
		if c.state == stateOpen && c.readPaused {
			return
		}
		rb := buf
		if c.state == stateHandshake {
			room := pptls.MaxBufferedInput - c.hsFed
			if room <= 0 {
				c.hsFull = true
				c.desc.SetInterest(c.interest())
				return
			}
			if room < len(rb) {
				rb = rb[:room]
			}
		}
		n, err := c.desc.Read(rb)
		if n > 0 {
			c.active = true
			if c.state == stateLinger {
				continue
			}
			if c.state == stateOpen && c.cleartext {
				if !c.feed(rb[:n]) {
					return
				}
			} else if c.state == stateOpen {
				// Records are decrypted straight from the read buffer;
				// only a partial record's bytes (or all of them when the
				// front end stopped reading) are copied into the session.
				if ferr := c.sess.Lend(rb[:n]); ferr != nil {
					c.destroy(ferr)
					return
				}
				ok, _ := c.decrypt()
				c.sess.Keep()
				if !ok {
					return
				}
			} else {
				data := rb[:n]
				if c.ppWait {
					var ok bool
					if data, ok = c.readProxyHeader(data); !ok {
						return
					}
				}
				switch {
				case c.cleartext:
					// Nothing to keep: a cleartext connection reads here
					// only before its front end starts, and while closing.
					if c.state == stateHandshake && len(data) > 0 && !c.openCleartext(data) {
						return
					}
				default:
					if c.state == stateHandshake {
						c.hsFed += n
					}
					if ferr := c.sess.Feed(data); ferr != nil {
						if c.state == stateHandshake {
							// The handshake failed and its task has
							// not run yet: the alert still goes.
							c.handshakeFailed(ferr)
						} else {
							c.destroy(ferr)
						}
						return
					}
					if len(data) > 0 && !c.hsStarted && c.state == stateHandshake && !c.noteHello(data) {
						return
					}
				}
			}
			if n < len(rb) && !c.peerDone {
				// The receive queue was emptied by this read: data that
				// arrives later raises a new edge. Not so the end of the
				// stream: a FIN that came with the last bytes was reported
				// once, with them, and only reading on finds it.
				return
			}
			continue
		}
		switch {
		case n == 0 && err == nil:
			c.peerClosed()
			return
		case err == unix.EAGAIN:
			return
		case err == unix.EINTR:
			continue
		default:
			c.destroy(err)
			return
		}
	}
	c.desc.Kick(netpoll.EventRead)
}

// decrypt feeds every complete record to the front end. ok is false when
// the connection went away meanwhile; fed reports that Feed was called.
func (c *conn) decrypt() (ok, fed bool) {
	plain := c.ls.plainBuf
	if c.readEOF {
		return c.state != stateClosed, false
	}
	for c.state == stateOpen && !c.readPaused {
		n, err := c.sess.Read(plain)
		if n > 0 {
			fed = true
			if perr := c.proto.Feed(plain[:n]); perr != nil {
				c.Close()
				return false, fed
			}
			continue
		}
		switch {
		case errors.Is(err, pptls.ErrWouldBlock):
			if c.sess.Buffered() > 0 {
				c.queueFlush() // crypto/tls answered something (KeyUpdate)
			}
			return c.state != stateClosed, fed
		case err == io.EOF:
			c.peerClosed()
		default:
			c.destroy(err)
		}
		return false, fed
	}
	return c.state != stateClosed, fed
}

// peerClosed handles the client's end of stream: whatever is queued is
// still written, then the connection goes.
func (c *conn) peerClosed() {
	if c.state == stateLinger || c.state == stateClosing {
		c.destroy(nil)
		return
	}
	if c.readEOF {
		return
	}
	if r, ok := c.proto.(stream.EOFReceiver); ok && c.state == stateOpen && r.PeerEOF() {
		// A tunnel carries the half-close: the front end goes on writing.
		if c.state == stateOpen {
			c.readEOF = true
			c.desc.SetInterest(c.interest())
		}
		return
	}
	c.abortProto(io.EOF)
	c.writeSocket()
	c.destroy(nil)
}

func (c *conn) abortProto(err error) {
	if p := c.proto; p != nil {
		c.proto = nil
		p.Abort(err)
	}
}

// noteHello counts the bytes of the client's first TLS record and starts
// the handshake on the worker pool once the record is complete (or is not
// a handshake record at all: crypto/tls then rejects it). It reports false
// when the connection went away.
func (c *conn) noteHello(p []byte) bool {
	before := c.helloN
	for len(p) > 0 && c.helloN < len(c.hello) {
		c.hello[c.helloN] = p[0]
		c.helloN++
		p = p[1:]
	}
	c.helloN += len(p)
	if c.helloN < len(c.hello) {
		return true
	}
	if before < len(c.hello) && c.ls.srv.cfg.HTTPRedirect && looksLikeHTTP(c.hello[:]) {
		// Every byte so far: the header's, and the rest of this read.
		return c.redirectHTTP(append(c.hello[:len(c.hello):len(c.hello)], p...))
	}
	need := len(c.hello) + (int(c.hello[3])<<8 | int(c.hello[4]))
	if c.hello[0] == recordTypeHandshake && need <= maxRecord && c.helloN < need {
		return true
	}
	return c.startHandshake()
}

const (
	recordTypeHandshake = 0x16
	maxRecord           = 5 + 16384 + 2048 // header + the largest ciphertext
)

// startHandshake hands the session to the worker pool.
func (c *conn) startHandshake() bool {
	c.hsStarted = true
	c.timer.Stop()
	c.timer = nil
	s := c.ls.srv
	if err := s.pool.Start(c.sess, c.notifyHandshake); err != nil {
		s.rejected.Add(1)
		c.destroy(err)
		return false
	}
	return true
}

// helloTimeout closes a connection whose ClientHello did not arrive
// within the handshake timeout.
func (c *conn) helloTimeout() {
	if c.state == stateHandshake && !c.hsStarted {
		c.ls.srv.handshakeErrors.Add(1)
		c.destroy(pptls.ErrHandshakeTimeout)
	}
}

// notifyHandshake is called by a handshake worker when the session has
// output or has finished; the loop picks it up as a task.
func (c *conn) notifyHandshake() {
	if c.hsPosted.CompareAndSwap(false, true) {
		c.ls.loop.PostFor(c, c.handshakeProgress)
	}
}

func (c *conn) handshakeProgress() {
	c.hsPosted.Store(false)
	if c.state != stateHandshake {
		return
	}
	c.writeSocket()
	done, err := c.sess.HandshakeDone()
	if !done || c.state != stateHandshake {
		return
	}
	if err != nil {
		c.handshakeFailed(err)
		return
	}
	if c.sess.ALPN() == acmeALPN {
		// A TLS-ALPN-01 validation: the certificate was the answer.
		c.destroy(nil)
		return
	}
	c.state = stateOpen
	t := c.ls.srv
	cs := c.sess.ConnectionState()
	info := &stream.TLSState{Resumed: cs.DidResume, Version: cs.Version, CipherSuite: cs.CipherSuite,
		Proto: cs.NegotiatedProtocol, ServerName: cs.ServerName, ECH: cs.ECHAccepted}
	if len(cs.PeerCertificates) > 0 {
		info.PeerCertificate = cs.PeerCertificates[0]
	}
	if cs.NegotiatedProtocol == "h2" {
		cfg := t.cfg.H2
		cfg.TLS = info
		c.proto = h2.NewServerConn(c, c.ls, cfg)
	} else {
		cfg := t.cfg.H1
		cfg.TLS = info
		c.proto = h1.NewServerConn(c, c.ls, cfg)
	}
	if c.ls.draining {
		c.proto.Shutdown()
	}
	// Application data may have arrived along with the client's Finished.
	if ok, _ := c.decrypt(); ok {
		c.queueFlush()
		if c.hsFull {
			// The rest is still in the socket, whose edge has passed.
			c.hsFull = false
			c.desc.SetInterest(c.interest())
			c.desc.Kick(netpoll.EventRead)
		}
	}
}

// Write queues plaintext for the client (stream.Transport).
func (c *conn) Write(p []byte) {
	if c.state != stateOpen || c.writeShut {
		return
	}
	c.plain = append(c.plain, p...)
	c.queueFlush()
}

// Buffered reports the bytes queued and not yet on the socket.
func (c *conn) Buffered() int {
	if c.cleartext {
		return len(c.plain) - c.sent
	}
	return len(c.plain) + c.sess.Buffered()
}

// PauseRead stops or resumes feeding client bytes to the front end
// (stream.Transport). Resuming only re-arms: a synthetic read event feeds
// the front end from the loop — records already buffered in the session
// first, then the socket, whose edge may have passed while paused.
func (c *conn) PauseRead(pause bool) {
	if c.state != stateOpen {
		return
	}
	if pause {
		if !c.readPaused {
			c.readPaused = true
			c.desc.SetInterest(c.interest())
		}
		return
	}
	c.feedOwed = true
	if c.readPaused {
		c.readPaused = false
		c.desc.SetInterest(c.interest())
	}
	if !c.readKicked {
		c.readKicked = true
		c.desc.Kick(netpoll.EventRead)
	}
}

// FlushLater asks for the front end's Flush before this iteration's write
// (stream.Transport).
func (c *conn) FlushLater() {
	if c.state != stateOpen {
		return
	}
	c.protoFlush = true
	c.queueFlush()
}

// Close flushes what is queued, sends close_notify and closes.
func (c *conn) Close() {
	if c.state != stateOpen {
		return
	}
	c.state = stateClosing
	c.proto = nil
	c.Flush()
}

// CloseWrite ends the write direction after what is queued: close_notify,
// then shutdown(SHUT_WR) once the output is on the socket, while reading
// goes on (stream.HalfCloser, for a tunnel's half-close).
func (c *conn) CloseWrite() {
	if c.state != stateOpen || c.writeShut {
		return
	}
	c.writeShut = true
	c.queueFlush()
}

// Clock schedules on the owning loop, in timers the connection owns: a
// panic in the front end's timer abandons the connection.
func (c *conn) Clock() stream.Clock { return (*connClock)(c) }

// RemoteAddr is the client's address.
func (c *conn) RemoteAddr() netip.AddrPort { return c.remote }

// LocalAddr implements stream.LocalAddresser: the listener's address, or
// on a wildcard listener the socket's own, asked of the kernel the first
// time a request wants it.
func (c *conn) LocalAddr() netip.AddrPort {
	if !c.local.IsValid() && c.desc != nil {
		if ta, ok := c.ls.connLocalAddr(c.desc.FD()).(*net.TCPAddr); ok {
			ap := ta.AddrPort()
			c.local = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	return c.local
}

// HandshakeRTT is the round trip the TLS handshake measured.
// A cleartext connection measured none: 0.
func (c *conn) HandshakeRTT() time.Duration {
	if c.cleartext {
		return 0
	}
	return c.sess.HandshakeRTT()
}

var _ stream.PathRTT = (*conn)(nil)

func (c *conn) queueFlush() {
	if !c.flushQueued {
		c.flushQueued = true
		c.ls.loop.FlushLater(c)
	}
}

// Flush encrypts what the front end wrote this iteration in one go and
// writes it to the socket: one write per connection per loop iteration.
func (c *conn) Flush() {
	if c.protoFlush && c.state == stateOpen && c.proto != nil {
		// The front end's output joins this flush: its Writes find
		// flushQueued still set and queue nothing more.
		c.protoFlush = false
		c.proto.Flush()
	}
	c.flushQueued = false
	if c.state == stateClosed {
		return
	}
	if c.cleartext {
		c.active = c.active || len(c.plain) > 0
	} else if len(c.plain) > 0 {
		c.active = true
		if _, err := c.sess.Write(c.plain); err != nil {
			c.destroy(err)
			return
		}
		// A big staging buffer is kept while flushes stay big (a
		// download) and dropped after the first small one.
		if cap(c.plain) > 4*plainKeep && len(c.plain) <= plainKeep {
			c.plain = nil
		} else {
			c.plain = c.plain[:0]
		}
	}
	if (c.state == stateClosing || c.writeShut) && c.closeErr == nil {
		c.closeErr = errClosing
		if !c.cleartext {
			c.sess.CloseNotify()
		}
	}
	c.writeSocket()
	if c.protoFlush && c.state == stateOpen {
		// Asked for again while flushing (a handler writing from
		// OnDrained or OnWritable): next iteration.
		c.queueFlush()
	}
}

var errClosing = errors.New("closing")

// idleReleaser is a front end that can let go of buffers an idle
// connection does not need (h2.ServerConn, h1.ServerConn).
type idleReleaser interface{ ReleaseIdle() int }

// releaseIdle is the sweep's visit: a connection that moved no bytes since
// the previous sweep, with nothing queued, gives back its staging buffer,
// the session's ciphertext buffers and its front end's buffers, once: the
// next sweeps pass it by until bytes move again. It returns the bytes let
// go of.
func (c *conn) releaseIdle() int {
	if c.active {
		c.active, c.released = false, false
		return 0
	}
	if c.released || c.state != stateOpen || c.Buffered() > 0 {
		return 0
	}
	n := cap(c.plain)
	if !c.cleartext {
		n += c.sess.ReleaseIdle()
	}
	c.plain, c.sent = nil, 0
	if r, ok := c.proto.(idleReleaser); ok {
		n += r.ReleaseIdle()
	}
	c.released = true
	return n
}

func (c *conn) writeSocket() {
	wrote := false
	for {
		out := c.output()
		if len(out) == 0 {
			break
		}
		n, err := c.desc.Write(out)
		if n > 0 {
			c.consume(n)
			wrote = true
		}
		if err == nil || err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if wrote || !c.writeBlock {
				c.armWrite()
			}
			if !c.writeBlock {
				c.writeBlock = true
				c.desc.SetInterest(c.interest())
			}
			return
		}
		c.destroy(err)
		return
	}
	if c.wtArmed {
		c.wtArmed = false
		c.timer.Stop()
	}
	if c.writeBlock {
		c.writeBlock = false
		c.desc.SetInterest(c.interest())
	}
	switch c.state {
	case stateClosing:
		c.linger()
	case stateOpen:
		if c.writeShut && !c.shutDone {
			c.shutDone = true
			c.desc.Shutdown()
		}
		// Everything is on the socket: the front end hears so after every
		// flush, not only after big ones. A front end may stop producing
		// for reasons of its own (a fairness bound per round, a writer
		// refused while the output was full) and resumes only here; a
		// drained-only-if-big rule left such streams stalled for good.
		if c.proto != nil {
			c.proto.OnDrained()
		}
	}
}

// armWrite (re)starts the write timeout when a socket write blocks, from
// the last byte taken. Only an open or closing connection has one: the
// timer is otherwise the hello or linger timer.
func (c *conn) armWrite() {
	d := c.ls.srv.cfg.WriteTimeout
	if d <= 0 || c.state != stateOpen && c.state != stateClosing {
		return
	}
	if !c.wtArmed {
		c.timer.Stop()
		c.timer = c.after(d, c.writeTimedOut)
		c.wtArmed = true
		return
	}
	c.timer.Reset(d)
}

// writeTimedOut: the client took no byte for WriteTimeout. The
// connection is closed, unless it carries a tunnel, which only its own
// idle timer may end.
func (c *conn) writeTimedOut() {
	c.wtArmed = false
	if tc, ok := c.proto.(stream.TunnelCarrier); ok && c.state == stateOpen && tc.CarriesTunnel() {
		return
	}
	// A reset: the bytes the client stopped taking are dropped, not left
	// for the kernel to keep sending after the close.
	c.desc.ResetOnClose()
	c.destroy(errWriteTimeout)
}

// errWriteTimeout is why a connection closed by the write timeout went.
var errWriteTimeout = errors.New("write to client timed out")

// handshakeFailed ends a connection whose handshake failed. The alert
// crypto/tls queued goes out first, and the connection then lingers as
// after a last response: under TLS 1.3 the client thinks the handshake
// done once it sent its Finished, and its request follows at once, both
// before the server has looked at the client's certificate. Closed with
// that request unread, the socket would send a reset, which the client's
// kernel may act on before the client reads the alert ("certificate
// required" becomes "connection reset").
func (c *conn) handshakeFailed(err error) {
	c.ls.srv.handshakeErrors.Add(1)
	if len(c.output()) == 0 {
		c.destroy(err)
		return
	}
	c.state = stateClosing
	c.timer.Stop() // the handshake's timeout; linger sets its own
	c.writeSocket()
	if c.state == stateClosing {
		// The socket took not even the alert's few bytes.
		c.destroy(err)
	}
}

// linger shuts the write side and discards input for a while, so the
// client reads our last response before the socket is closed.
func (c *conn) linger() {
	c.state = stateLinger
	c.desc.Shutdown()
	c.desc.SetInterest(netpoll.Read)
	c.timer.Stop() // a write timeout: everything was written
	c.wtArmed = false
	c.timer = c.after(lingerTimeout, func() { c.destroy(nil) })
	c.desc.Kick(netpoll.EventRead)
}

// destroy releases everything at once: socket, session, front end.
func (c *conn) destroy(err error) {
	if c.state == stateClosed {
		return
	}
	c.abortProto(connGone(err))
	c.state = stateClosed
	c.timer.Stop()
	c.desc.Close()
	if !c.cleartext {
		c.sess.Close()
	}
	c.plain, c.ppBuf = nil, nil
	delete(c.ls.conns, c)
	c.ls.load.Add(-1)
	c.ls.srv.active.Add(-1)
}

func connGone(err error) error {
	if err == nil {
		return net.ErrClosed
	}
	return err
}

// connClock is a connection as its front end's stream.Clock: a pointer
// conversion, so handing it out allocates nothing.
type connClock conn

func (c *connClock) AfterFunc(d time.Duration, f func()) stream.Timer { return (*conn)(c).after(d, f) }

func (c *connClock) Now() time.Time { return c.ls.loop.Now() }

// after runs f on the loop after d, in a timer the connection owns.
func (c *conn) after(d time.Duration, f func()) *netpoll.Timer {
	t := c.ls.loop.NewTimer(f)
	t.SetOwner(c)
	t.Reset(d)
	return t
}
