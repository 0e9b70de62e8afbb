package proxy

// HTTP/2 to origins: an upstream whose transport speaks h2 (h2c://, or
// transport http { versions h2c 2 }) has pools of h2Conns, each carrying
// many exchanges at once, one stream each, up to the origin's
// SETTINGS_MAX_CONCURRENT_STREAMS; then the pool opens another, up to
// MaxConns (max_conns_per_host), and past that requests wait in its
// queue. The protocol is proxy/h2's ClientConn; this file moves its
// bytes between the socket and the loop and keeps the pool's books.
//
// Timers: an h2Conn has one, for its connect and then for its idle time
// with no stream open. Nothing else closes a connection with open
// streams: a stream's timeouts are its exchange's (response_header_timeout,
// read_timeout when set), and they reset that stream alone. pollproxy
// sends no keep-alive PINGs, so a gRPC origin's too_many_pings policy has
// nothing to count.

import (
	"errors"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h2"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// h2OutHigh is the most output an h2Conn lets wait for its socket before
// it stops framing request bodies: a slow origin holds them back in their
// streams, and their clients' windows stop the rest.
const h2OutHigh = 64 << 10

// h2State is where an h2Conn is in its life.
type h2State uint8

const (
	h2Connecting  h2State = iota // the connect is in progress (the timer: connect_timeout)
	h2Handshaking                // TLS: the handshake runs off the loop (h2origintls.go)
	h2Up                         // frames flow; idle (the timer armed) while no stream is open
	h2Closed                     // the socket is closed
)

// h2Conn is one HTTP/2 connection to an origin, registered with the loop
// for its life.
type h2Conn struct {
	pool  *pool
	desc  *netpoll.Desc
	cc    *h2.ClientConn
	state h2State
	timer netpoll.Timer
	in    []byte // the read buffer, while streams are open

	// err, once set, is why the connection is ending under its streams:
	// each stream's exchange hears it (connectFailed while connecting,
	// backendFailed after).
	err         error
	writeWait   bool
	flushQueued bool
	streams     int  // streams opened on it, for reuse counting
	idleArmed   bool // the timer guards the idle time: no stream is open

	// sess is the TLS session of an https:// upstream's connection (nil
	// in clear), sockEOF its socket's end (h2origintls.go).
	sess    *pptls.Session
	sockEOF bool
}

// takeStream binds ex to a stream: on a connection with room, or on a
// new one while under MaxConns and no connection is still waiting for
// the origin's SETTINGS (which may allow many streams, and a burst would
// otherwise open a connection per request). false: ex must wait.
func (p *pool) takeStream(ex *exchange) bool {
	hc, mayDial := p.freeConn()
	if hc != nil {
		p.active++
		p.up.Requests.Add(1)
		reused := hc.streams > 0
		if reused {
			p.up.Reuses.Add(1)
		}
		hc.open(ex, reused)
		return true
	}
	if !mayDial {
		return false
	}
	hc, err := p.dialH2()
	if err != nil {
		ex.connectFailed(err)
		return true
	}
	p.active++
	p.up.Requests.Add(1)
	hc.open(ex, false)
	return true
}

// speaksH2 reports whether a pool of the group may still speak HTTP/2 to
// its upstream (none learned that its origin picks http/1.1).
func (g *group) speaksH2() bool {
	for _, p := range g.pools {
		if p.h2 {
			return true
		}
	}
	return false
}

// flushStreams serves the waiters, in order, while connections have room
// (Flush). A waiter leaves the queue before it is bound, as in Flush: a
// failed dial moves it on (connectFailed), which must not find it queued.
func (p *pool) flushStreams() {
	for len(p.waiters) > 0 {
		ex := p.waiters[0]
		if !p.room(ex) {
			return
		}
		p.dequeueFirst()
		p.serving = ex
		p.take(ex, false)
		p.serving = nil
	}
}

// room reports whether take can bind ex now: a connection with a free
// stream, or room for a new connection while none waits for the origin's
// SETTINGS; for a tunnel over HTTP/1.1, an idle connection or room for one.
func (p *pool) room(ex *exchange) bool {
	if ex.h2req == nil {
		return len(p.idle) > 0 || p.open < p.cfg.MaxConns
	}
	hc, mayDial := p.freeConn()
	return hc != nil || mayDial
}

// freeConn is the first connection with a free stream; without one,
// mayDial says whether a new connection may open: under MaxConns, and
// none still waiting for the origin's SETTINGS.
func (p *pool) freeConn() (hc *h2Conn, mayDial bool) {
	waiting := false
	for _, c := range p.conns {
		if c.state == h2Closed {
			continue
		}
		if c.cc.Free() > 0 {
			return c, false
		}
		if !c.cc.Settled() && !c.cc.Closing() {
			waiting = true
		}
	}
	return nil, !waiting && p.open < p.cfg.MaxConns
}

// dialH2 opens a new connection; its connect completes on the loop.
func (p *pool) dialH2() (*h2Conn, error) {
	fd, err := p.connect()
	if err != nil {
		return nil, err
	}
	// The loop's free list, not one per connection: one with no stream
	// open holds no stream struct.
	hc := &h2Conn{pool: p, cc: h2.NewClientConn(h2.ClientConfig{Free: &p.h.freeStreams})}
	if p.h2tls != nil {
		hc.sess = pptls.NewClientSession(p.h2tls, nil, nil)
	}
	d, err := p.loop.Register(fd, hc, netpoll.Write)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	hc.desc = d
	p.loop.InitTimer(&hc.timer, hc.timedOut)
	hc.timer.SetOwner(hc) // a panic in it is the connection's (Abandon)
	hc.timer.Reset(p.h.cfg.ConnectTimeout)
	p.conns = append(p.conns, hc)
	p.open++
	p.up.OpenConns.Add(1)
	p.up.Connects.Add(1)
	return hc, nil
}

// open starts ex's stream on the connection.
func (hc *h2Conn) open(ex *exchange, reused bool) {
	hc.streams++
	if hc.idleArmed {
		hc.idleArmed = false
		hc.timer.Stop() // the idle timeout
	}
	ex.attachStream(hc, reused)
	hc.later()
}

// streamDone takes an ended stream off the pool's books; a connection
// with room again serves a waiting request at the end of the iteration.
func (hc *h2Conn) streamDone() {
	p := hc.pool
	p.active--
	if len(p.waiters) > 0 {
		p.kick()
	}
	hc.later()
}

// HandleEvent runs the connection on the loop.
func (hc *h2Conn) HandleEvent(ev netpoll.Event) {
	switch hc.state {
	case h2Connecting:
		err := netpoll.SocketError(hc.desc.FD())
		if err == nil && ev&(netpoll.EventErr|netpoll.EventHup) != 0 {
			err = unix.ECONNRESET
		}
		hc.timer.Stop()
		if err != nil {
			hc.fail(err)
			return
		}
		if hc.sess != nil {
			hc.startTLS()
			return
		}
		hc.up()
	case h2Handshaking:
		hc.handshakeEvent(ev)
	case h2Up:
		if ev&netpoll.EventWrite != 0 && hc.writeWait {
			hc.writeWait = false
			hc.desc.SetInterest(netpoll.Read)
			hc.flush()
		}
		if hc.state == h2Up && ev&(netpoll.EventRead|netpoll.EventHup|netpoll.EventErr) != 0 {
			hc.read()
		}
	}
}

// up: the connection (and its TLS) is established; what the streams
// queued goes out.
func (hc *h2Conn) up() {
	hc.state = h2Up
	hc.desc.SetInterest(netpoll.Read)
	hc.flush()
	hc.settle()
}

// read feeds what the origin sent to the protocol, whose events reach
// the streams' exchanges, then writes what it answered.
func (hc *h2Conn) read() {
	if hc.in == nil {
		hc.in = hc.pool.h.getBuf()
	}
	settled := hc.cc.Settled()
	for hc.state == h2Up {
		var n int
		var err error
		if hc.sess != nil {
			n, err = hc.readTLS(hc.in)
		} else {
			n, err = hc.desc.Read(hc.in)
		}
		switch {
		case n > 0:
			hc.cc.Feed(hc.in[:n])
			continue
		case n == 0 && err == nil:
			err = errOriginClosed
		case err == unix.EAGAIN:
		case err == unix.EINTR:
			continue
		}
		if err != nil && err != unix.EAGAIN {
			hc.fail(err)
			return
		}
		break
	}
	if hc.state != h2Up {
		return
	}
	if !settled && hc.cc.Settled() && len(hc.pool.waiters) > 0 {
		hc.pool.kick() // the origin's SETTINGS may allow more streams
	}
	hc.flush()
	hc.settle()
}

// errOriginClosed is the origin's close of a connection that still had
// something to say (its GOAWAY, or streams open).
var errOriginClosed error = originClosed{}

type originClosed struct{}

func (originClosed) Error() string { return "upstream closed the connection" }

// later queues a Flush at the end of the iteration.
func (hc *h2Conn) later() {
	if !hc.flushQueued && hc.state != h2Closed {
		hc.flushQueued = true
		hc.pool.loop.FlushLater(hc)
	}
}

// Flush writes what the streams queued in this iteration (netpoll.Flusher).
func (hc *h2Conn) Flush() {
	hc.flushQueued = false
	if hc.state == h2Up {
		hc.flush()
		hc.settle()
	}
}

// flush frames request bodies while the output is small and writes the
// output to the socket.
func (hc *h2Conn) flush() {
	if hc.writeWait {
		return
	}
	if hc.sess != nil {
		hc.writeTLS()
		return
	}
	for {
		if len(hc.cc.Output()) < h2OutHigh {
			hc.cc.Flush()
		}
		out := hc.cc.Output()
		if len(out) == 0 {
			return
		}
		n, err := hc.desc.Write(out)
		if n > 0 {
			hc.cc.Wrote(n)
		}
		if err == nil || err == unix.EINTR {
			continue
		}
		hc.writeStopped(err)
		return
	}
}

// writeStopped handles a socket write that failed with err: a full
// socket waits for writable, anything else fails the connection.
func (hc *h2Conn) writeStopped(err error) {
	if err == unix.EAGAIN {
		hc.writeWait = true
		hc.desc.SetInterest(netpoll.Read | netpoll.Write)
		return
	}
	hc.fail(err)
}

// settle closes a connection the protocol is done with, and arms the
// idle timer of one with no stream open.
func (hc *h2Conn) settle() {
	if hc.state != h2Up {
		return
	}
	if hc.cc.Dead() {
		hc.close()
		return
	}
	if hc.cc.Active() == 0 {
		if hc.pool.retired && len(hc.pool.waiters) == 0 {
			hc.closeIdle()
			return
		}
		if hc.in != nil {
			hc.pool.h.putBuf(hc.in) // an idle connection holds no read buffer
			hc.in = nil
		}
		if !hc.idleArmed {
			hc.idleArmed = true
			hc.timer.Reset(hc.pool.idleTimeoutH2())
		}
	}
}

// idleTimeoutH2 is how long a connection with no open stream is kept.
func (p *pool) idleTimeoutH2() time.Duration {
	d := p.cfg.IdleTimeout
	if c := p.up.IdleCap(); c > 0 && c < d {
		d = c
	}
	return d
}

// timedOut: the connect took too long, or the connection stayed without
// a stream for its idle time.
func (hc *h2Conn) timedOut() {
	switch hc.state {
	case h2Connecting, h2Handshaking:
		hc.fail(errConnectTimeout)
	case h2Up:
		hc.idleArmed = false
		if hc.cc.Active() == 0 {
			hc.closeIdle()
		}
	}
}

// closeIdle closes a connection with no stream open: GOAWAY, then the
// socket.
func (hc *h2Conn) closeIdle() {
	hc.cc.Close()
	hc.flush()
	hc.close()
}

// fail ends the connection under its streams after a socket error (or a
// failed connect): each stream's exchange hears err.
func (hc *h2Conn) fail(err error) {
	if hc.state == h2Closed {
		return
	}
	hc.err = err
	hc.cc.Close() // each stream's OnReset: see originStream.OnReset
	hc.close()
}

// connecting reports whether the connect (or the TLS handshake) is still
// in progress: what was sent on it is not on the wire yet.
func (hc *h2Conn) connecting() bool { return hc.state == h2Connecting || hc.state == h2Handshaking }

// close closes the socket and takes the connection off the pool's books.
// Its streams were ended first (fail, or the protocol's end).
func (hc *h2Conn) close() {
	if hc.state == h2Closed {
		return
	}
	if hc.cc.Active() > 0 {
		if hc.err == nil {
			hc.err = errOriginClosed
		}
		hc.cc.Close()
	}
	hc.state = h2Closed
	hc.timer.Stop()
	hc.desc.Close()
	if hc.sess != nil {
		hc.sess.Close()
	}
	hc.pool.h.putBuf(hc.in)
	hc.in = nil
	p := hc.pool
	for i, c := range p.conns {
		if c == hc {
			copy(p.conns[i:], p.conns[i+1:])
			p.conns[len(p.conns)-1] = nil
			p.conns = p.conns[:len(p.conns)-1]
			break
		}
	}
	p.open--
	p.up.OpenConns.Add(-1)
	if len(p.waiters) > 0 {
		p.kick()
	}
}

// Abandon implements netpoll.Owner: a panic in the connection's event or
// flush. The connection closes with a reset under every stream.
func (hc *h2Conn) Abandon(any) (site, request string) {
	if hc.state != h2Closed {
		hc.desc.ResetOnClose()
	}
	hc.fail(errAbandoned)
	return "", ""
}

// errAbandoned ends the streams of a connection abandoned after a panic.
var errAbandoned = errors.New("upstream connection abandoned after a panic")

// resetCode is the RST_STREAM code for an exchange that ended without
// the origin's full response: CANCEL, as for a client gone.
const resetCode = http2.ErrCodeCancel
