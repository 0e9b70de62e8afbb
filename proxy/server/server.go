package server

import (
	"cmp"
	"context"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/stream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// Config describes one listening address and how to serve it.
type Config struct {
	// Addr is the TCP address to listen on, "host:port".
	Addr string
	// TLS is the server configuration; its NextProtos decide which front
	// ends clients can reach. Nil with Cleartext.
	TLS *stdtls.Config
	// Cleartext serves plain HTTP, without TLS: HTTP/1.1, and HTTP/2
	// with prior knowledge (h2c) when H2C is set too (Caddy's site
	// addresses http://, :PORT, the http_port).
	Cleartext bool
	// H2C lets a cleartext client speak HTTP/2 with prior knowledge
	// (servers { protocols ... h2c }).
	H2C bool
	// NewHandler returns the handler for one loop; it is called once per
	// loop, on that loop, so a handler may keep per-loop state (pools)
	// without locks. A handler with a Close method is closed on its loop
	// when the server closes (after its connections).
	NewHandler func(l *netpoll.Loop) stream.Handler
	// H2 and H1 configure the front ends.
	H2 h2.Config
	H1 h1.ServerConfig
	// HandshakeWorkers, HandshakeQueue and HandshakeTimeout size the TLS
	// handshake pool (defaults: 256 or 8 per P workers, whichever is more,
	// 1024 queued, 10s).
	HandshakeWorkers int
	HandshakeQueue   int
	HandshakeTimeout time.Duration
	// WriteTimeout, when set, closes a connection whose socket write stays
	// blocked that long with no byte taken (Caddy's servers { timeouts {
	// write } }), unless it carries a tunnel.
	WriteTimeout time.Duration
	// ProxyProtocol, when set, reads a PROXY protocol header in front of
	// the TLS of the clients it allows (Caddy's listener_wrappers {
	// proxy_protocol }).
	ProxyProtocol *ProxyProtocol
	// KeepAlive, when set, is the TCP keep-alive of client connections
	// (Caddy's keepalive_* options), set once on the listening sockets,
	// which accepted connections inherit.
	KeepAlive *netpoll.KeepAlive
	// HTTPRedirect answers a client that speaks plain HTTP where TLS is
	// expected with a 308 to the same URL over https, and closes (Caddy's
	// listener_wrappers { http_redirect }). Only with TLS.
	HTTPRedirect bool
}

// Server serves one address on every loop of a group.
type Server struct {
	cfg   Config
	group *netpoll.Group
	pool  *pptls.HandshakePool
	addr  netip.AddrPort
	fds   []int
	loops []*loopState

	hsTimeout time.Duration

	active          atomic.Int64
	lastCollect     atomic.Int64 // unix ns of the last collectReleased
	released        atomic.Int64 // bytes the idle sweeps let go of since
	accepted        atomic.Uint64
	handshakeErrors atomic.Uint64
	rejected        atomic.Uint64
	handedOff       atomic.Uint64 // connections accepted by one loop, served by another
}

// loopState is what the server keeps per loop: only that loop touches it.
type loopState struct {
	srv       *Server
	loop      *netpoll.Loop
	handler   stream.Handler
	conns     map[*conn]struct{}
	listener  *netpoll.Listener
	readBuf   []byte // shared by the loop's connections: a read is fed on at once
	plainBuf  []byte
	draining  bool
	localAddr net.Addr
	wildcard  bool           // listening on every address: ask each socket its own
	sweep     *netpoll.Timer // the idle sweep, armed while there are connections
	// load is the loop's connections and those handed to it not yet
	// adopted: read by the other loops' accepts (leastLoaded).
	load atomic.Int64
}

// idleCollect is how many bytes the sweeps must have let go of before
// memory is returned, and idleCollectEvery the least time between two
// returns. Idle connections allocate nothing, so without it the released
// buffers stayed resident until the runtime's two-minute forced collection;
// and a collection alone leaves the freed pages (the buffers, and the
// garbage of the handshakes that opened the connections) resident until
// the background scavenger, which keeps the heap's whole growth room,
// gets to them.
const (
	idleCollect      = 1 << 20
	idleCollectEvery = 10 * time.Second
)

// collectReleased counts the bytes a sweep let go of and, once they add up
// to idleCollect, returns the free memory to the operating system
// (debug.FreeOSMemory: a collection, then every free page scavenged) off
// the loops, at most once per idleCollectEvery (what a sweep releases
// meanwhile waits for the next). It changes no GC setting: the heap may
// still grow to its goal when traffic resumes; it gives back what nothing
// uses now.
func (s *Server) collectReleased(released int) {
	if s.released.Add(int64(released)) < idleCollect {
		return
	}
	now := time.Now().UnixNano()
	last := s.lastCollect.Load()
	if now-last < int64(idleCollectEvery) || !s.lastCollect.CompareAndSwap(last, now) {
		return
	}
	s.released.Store(0)
	go debug.FreeOSMemory()
}

// armSweep starts the idle sweep (conn.releaseIdle) if it is not running.
func (ls *loopState) armSweep() {
	if ls.sweep == nil {
		ls.sweep = ls.loop.AfterFunc(idleSweep, ls.sweepIdle)
	}
}

// sweepIdle visits every connection of the loop once a second, and stops
// while the loop has none.
func (ls *loopState) sweepIdle() {
	released := 0
	for c := range ls.conns {
		released += c.releaseIdle()
	}
	ls.srv.collectReleased(released)
	if len(ls.conns) == 0 {
		ls.sweep = nil
		return
	}
	ls.sweep.Reset(idleSweep)
}

// New opens the listeners and registers them with the group's loops, which
// must be running. On Linux every loop gets its own SO_REUSEPORT listener so
// the kernel balances connections; elsewhere the loops share one.
func New(g *netpoll.Group, cfg Config) (*Server, error) {
	if cfg.TLS == nil && !cfg.Cleartext || cfg.NewHandler == nil {
		return nil, errors.New("server: TLS config (or Cleartext) and handler are required")
	}
	addrs, err := netpoll.ResolveTCP(context.Background(), cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	if cfg.Cleartext {
		// Requests report how they arrived (X-Forwarded-Proto, the
		// {scheme} placeholder, the protocol matcher).
		cfg.H1.Scheme = cmp.Or(cfg.H1.Scheme, "http")
		cfg.H2.Scheme = cmp.Or(cfg.H2.Scheme, "http")
	}
	s := &Server{cfg: cfg, group: g}
	perLoop := runtime.GOOS == "linux"
	addr := addrs[0]
	if perLoop && addr.Port() != 0 {
		// SO_REUSEPORT would let this process share a port another
		// process (a second pollproxy) already listens on, splitting its
		// traffic silently; a plain bind first makes that an error.
		probe, err := netpoll.Listen(addr, false, 1)
		if err != nil {
			return nil, err
		}
		unix.Close(probe)
	}
	for i := range g.Loops() {
		if i > 0 && !perLoop {
			break
		}
		fd, err := netpoll.Listen(addr, perLoop, 0)
		if err != nil {
			s.closeFDs()
			return nil, err
		}
		if cfg.KeepAlive != nil {
			if err := netpoll.SetKeepAlive(fd, *cfg.KeepAlive); err != nil {
				unix.Close(fd)
				s.closeFDs()
				return nil, fmt.Errorf("listen %s: %w", addr, err)
			}
		}
		if i == 0 {
			// With port 0 the first listener picks the port; the rest of
			// the group binds the same one.
			addr, _ = netpoll.LocalAddr(fd)
		}
		s.fds = append(s.fds, fd)
	}
	s.addr = addr
	// A worker is held for a whole handshake, also while it waits for the
	// client's Finished, so workers are many more than cores: a client
	// that stalls mid-handshake costs one goroutine until the timeout, and
	// it takes that many stalled clients per timeout to delay the rest.
	workers := cfg.HandshakeWorkers
	if workers <= 0 {
		workers = max(handshakeWorkersMin, 8*runtime.GOMAXPROCS(0))
	}
	if !cfg.Cleartext { // no handshakes, no workers
		s.pool = pptls.NewHandshakePool(workers, orDefault(cfg.HandshakeQueue, 1024), cfg.HandshakeTimeout)
	}
	s.hsTimeout = cfg.HandshakeTimeout
	if s.hsTimeout <= 0 {
		s.hsTimeout = pptls.DefaultHandshakeTimeout
	}

	// Every loop's state exists before any loop accepts: an accept reads
	// them all (leastLoaded).
	for _, l := range g.Loops() {
		s.loops = append(s.loops, &loopState{
			srv: s, loop: l,
			conns:     make(map[*conn]struct{}),
			readBuf:   make([]byte, 64<<10),
			plainBuf:  make([]byte, 32<<10),
			localAddr: net.TCPAddrFromAddrPort(addr),
			wildcard:  addr.Addr().IsUnspecified(),
		})
	}
	errs := make(chan error, len(g.Loops()))
	for i, l := range g.Loops() {
		ls := s.loops[i]
		fd := s.fds[0]
		if perLoop {
			fd = s.fds[i]
		}
		l.Post(func() {
			ls.handler = cfg.NewHandler(l)
			ln, err := l.Listen(fd, ls.accept)
			ls.listener = ln
			errs <- err
		})
	}
	for range g.Loops() {
		if err := <-errs; err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// SetHandler replaces every loop's handler (a configuration reload). New
// requests, also on open connections, go to the new handler; requests in
// flight finish with the old one. It returns once every loop switched.
func (s *Server) SetHandler(newHandler func(l *netpoll.Loop) stream.Handler) {
	done := make(chan struct{}, len(s.loops))
	for _, ls := range s.loops {
		ls.loop.Post(func() {
			ls.handler = newHandler(ls.loop)
			done <- struct{}{}
		})
	}
	for range s.loops {
		<-done
	}
}

// handshakeWorkersMin is the least number of handshake workers by default.
const handshakeWorkersMin = 256

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

// Cleartext reports whether the server serves plain HTTP (Config.Cleartext).
func (s *Server) Cleartext() bool { return s.cfg.Cleartext }

// Addr is the address the server listens on (with the real port when the
// configured one was 0).
func (s *Server) Addr() netip.AddrPort { return s.addr }

// accept takes a connection a loop's listener accepted. The kernel's
// SO_REUSEPORT hash spreads connections unevenly (three times as many on
// one loop as on another is common with a handful of clients), and a
// busier loop batches more per wait, which is what an A/B comparison of
// pollers must not measure: a connection accepted by a loop holding more
// than the least-loaded one goes to that one instead, through its task
// queue, before it is registered anywhere. The loops' counts then differ
// by at most one while they fill.
func (ls *loopState) accept(fd int, remote netip.AddrPort) {
	ls.srv.accepted.Add(1)
	if to := ls.leastLoaded(); to != ls {
		to.load.Add(1)
		ls.srv.handedOff.Add(1)
		to.loop.Post(func() { to.adopt(fd, remote, true) })
		return
	}
	ls.adopt(fd, remote, false)
}

// leastLoaded is the loop with the fewest connections, ls itself on a tie.
func (ls *loopState) leastLoaded() *loopState {
	best, n := ls, ls.load.Load()
	for _, o := range ls.srv.loops {
		if m := o.load.Load(); m < n {
			best, n = o, m
		}
	}
	return best
}

// adopt makes fd a connection of this loop; counted says its load was
// already taken (a hand-off).
func (ls *loopState) adopt(fd int, remote netip.AddrPort, counted bool) {
	s := ls.srv
	if !counted {
		ls.load.Add(1)
	}
	if ls.draining {
		ls.load.Add(-1)
		unix.Close(fd)
		return
	}
	netpoll.SetNoDelay(fd)
	c := &conn{ls: ls, remote: remote}
	if s.cfg.Cleartext {
		c.cleartext = true
	} else {
		c.sess = pptls.NewServerSession(s.cfg.TLS, ls.connLocalAddr(fd), net.TCPAddrFromAddrPort(remote))
	}
	d, err := ls.loop.Register(fd, c, netpoll.Read)
	if err != nil {
		ls.load.Add(-1)
		unix.Close(fd)
		s.rejected.Add(1)
		return
	}
	c.desc = d
	ls.conns[c] = struct{}{}
	ls.armSweep()
	s.active.Add(1)
	// The handshake starts on the pool once the ClientHello is in
	// (conn.noteHello), a cleartext front end on the first bytes
	// (conn.openCleartext); until then only this timer and the socket's
	// registration are spent on the client.
	c.timer = c.after(s.hsTimeout, c.helloTimeout)
	if pp := s.cfg.ProxyProtocol; pp != nil {
		if c.ppPolicy = pp.policy(remote.Addr()); c.ppPolicy != PolicySkip {
			c.ppWait = true
			if pp.Timeout > 0 && pp.Timeout < s.hsTimeout {
				c.timer.Stop()
				c.timer = c.after(pp.Timeout, c.proxyHeaderTimeout)
				c.ppTimed, c.accepted = true, ls.loop.Now()
			}
		}
	}
	c.desc.Kick(netpoll.EventRead) // bytes may have arrived with the connection
}

// connLocalAddr is the address a client connected to. On a wildcard
// listener that is the accepted socket's own address: without SNI (a
// client asking for an IP address) the certificate is chosen by it, as
// Caddy does, so a site named 127.0.0.1 answers on [::]:port.
func (ls *loopState) connLocalAddr(fd int) net.Addr {
	if !ls.wildcard {
		return ls.localAddr
	}
	ap, err := netpoll.LocalAddr(fd)
	if err != nil {
		return ls.localAddr
	}
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
}

// Stats are a server's connection counters.
type Stats struct {
	Active          int64
	Accepted        uint64
	HandshakeErrors uint64
	Rejected        uint64
	// HandedOff counts connections one loop accepted and handed to a
	// less loaded one; Loads is each loop's connections now.
	HandedOff uint64
	Loads     []int64
}

// Stats returns the server's counters; safe from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Active:          s.active.Load(),
		Accepted:        s.accepted.Load(),
		HandshakeErrors: s.handshakeErrors.Load(),
		Rejected:        s.rejected.Load(),
		HandedOff:       s.handedOff.Load(),
		Loads:           s.loads(),
	}
}

func (s *Server) loads() []int64 {
	n := make([]int64, len(s.loops))
	for i, ls := range s.loops {
		n[i] = ls.load.Load()
	}
	return n
}

// Shutdown stops accepting, asks every connection to finish gracefully
// (GOAWAY on h2, Connection: close after the current response on h1) and
// waits until they are gone or ctx ends; then it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, ls := range s.loops {
		ls.loop.Post(func() {
			ls.draining = true
			if ls.listener != nil {
				ls.listener.Close()
			}
			for c := range ls.conns {
				switch {
				case c.proto != nil:
					c.proto.Shutdown()
				case c.state == stateHandshake:
					c.destroy(errShutdown)
				}
			}
		})
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
	s.Close()
	return nil
}

var errShutdown = errors.New("server shutting down")

// Close closes every connection and listener at once.
func (s *Server) Close() {
	done := make(chan struct{}, len(s.loops))
	for _, ls := range s.loops {
		ls.loop.Post(func() {
			ls.draining = true
			if ls.listener != nil {
				ls.listener.Close()
				ls.listener = nil
			}
			for c := range ls.conns {
				c.destroy(errShutdown)
			}
			if h, ok := ls.handler.(closer); ok {
				h.Close()
			}
			done <- struct{}{}
		})
	}
	for range s.loops {
		select {
		case <-done:
		case <-time.After(5 * time.Second): // a loop that is gone
		}
	}
	s.closeFDs()
	if s.pool != nil {
		s.pool.Close()
	}
}

// closer is a handler that holds something of its own on the loop
// (proxy.Handler: its pools' idle origin connections). Close runs on the
// loop when the server closes, after the connections, while the loop
// still runs: a stopped loop closes no descriptor.
type closer interface{ Close() }

// closeFDs closes the listening sockets. Each is shut down first: an
// io_uring ring keeps a reference to a socket it polled until the kernel
// tears the ring down, after Close returns and in its own time, and the
// socket would go on listening, holding its port, until then (a new
// server on the port got "address already in use"). Shut down, it stops
// listening at once, whoever still holds it.
func (s *Server) closeFDs() {
	for _, fd := range s.fds {
		unix.Shutdown(fd, unix.SHUT_RDWR)
		unix.Close(fd)
	}
	s.fds = nil
}
