package proxy

// Pools are per loop and per upstream, so they need no lock: a backend
// connection lives and dies on the loop that owns the client streams it
// serves.

import (
	stdtls "crypto/tls"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// PoolConfig bounds one loop's connections to one upstream.
type PoolConfig struct {
	// MaxConns caps open connections (connecting, busy and idle); requests
	// beyond it wait in a queue of at most MaxQueue, then get 503.
	MaxConns int
	MaxQueue int
	// MaxIdle caps kept-alive idle connections; IdleTimeout closes one that
	// stayed idle that long. It is lowered per connection below the
	// origin's announced keep-alive timeout, and per upstream below the
	// idle time after which the origin was seen closing a connection.
	MaxIdle     int
	IdleTimeout time.Duration
	// MaxRequests retires a connection after that many requests (0: no cap).
	MaxRequests int
	// ProxyProtocol, 1 or 2, starts every connection with a PROXY protocol
	// header of that version announcing the client (transport http {
	// proxy_protocol }); such a connection is reused only for requests
	// from the same client address, as in Caddy. 0: none.
	ProxyProtocol int
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.MaxConns <= 0 {
		c.MaxConns = 256
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = 1024
	}
	if c.MaxIdle <= 0 {
		// Idle connections cost a descriptor and no buffer. A cap below
		// the concurrency a loop sees makes every burst open and close
		// connections (docs/performance.md has the count).
		c.MaxIdle = c.MaxConns
	}
	if c.MaxIdle > c.MaxConns {
		c.MaxIdle = c.MaxConns
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 4 * time.Second
	}
	return c
}

// pool is one loop's connections to one upstream. Only that loop touches
// it: no locks. Idle connections stay registered with the loop (an idle
// connection that turns readable has been closed by the origin, or is
// speaking out of turn, and is dropped).
type pool struct {
	loop    *netpoll.Loop
	up      *upstream.Upstream
	cfg     PoolConfig
	h       *Handler
	idle    []*backendConn // most recently used last: reuse the warmest
	open    int            // connecting + busy + idle
	active  int            // exchanges bound to a connection of this pool
	waiters []*exchange    // FIFO, at most cfg.MaxQueue
	kicked  bool           // Flush is queued on the loop to serve waiters
	serving *exchange      // the waiter Flush is binding: blamed for a panic (abandon.go)
	dials   uint           // connections dialled: the cursor over the upstream's addresses
	index   int            // in the group's pools
	// tls, when set, is the client configuration of this upstream's
	// connections (Config.TLS): they speak TLS, and the pool holds no
	// other kind, so an idle connection is always one it may reuse.
	tls *stdtls.Config
	// h2: the upstream speaks HTTP/2 (Config.H2C, or Config.H2 over TLS
	// until an origin picks http/1.1), over conns, each carrying many
	// exchanges (h2origin.go); h2tls is their TLS configuration, which
	// offers h2 by ALPN. Tunnels over TLS take HTTP/1.1 connections; over
	// h2c they are streams too (h2tunnel.go).
	h2    bool
	conns []*h2Conn
	h2tls *stdtls.Config
	// retired: no new request comes to this pool (its handler was
	// replaced by a reload, or its server or instance closed). A
	// connection is kept only for a request already waiting in its
	// queue; any other closes as soon as it has nothing in flight.
	retired bool
}

// load is the least-connections measure: requests in flight or waiting.
func (p *pool) load() int { return p.active + len(p.waiters) }

// acquired is what a pool did with a request for a connection.
type acquired uint8

const (
	poolBound  acquired = iota // a connection was bound (attach), or the dial failed (connectFailed)
	poolQueued                 // the exchange waits in the queue
	poolFull                   // no connection and no room in the queue
)

// acquire binds ex to a connection: an idle one unless fresh is asked for,
// a new one while under MaxConns, else a place in the queue. While others
// wait, ex joins them: first come, first served.
func (p *pool) acquire(ex *exchange, fresh bool) acquired {
	if len(p.waiters) == 0 && p.take(ex, fresh) {
		return poolBound
	}
	if len(p.waiters) >= p.cfg.MaxQueue {
		return poolFull
	}
	p.waiters = append(p.waiters, ex)
	return poolQueued
}

// take binds ex to an idle connection (unless fresh is asked for) or a new
// one, and reports false when the pool has neither to give.
func (p *pool) take(ex *exchange, fresh bool) bool {
	if p.h2 && ex.h2req != nil {
		return p.takeStream(ex) // h2origin.go; a tunnel over TLS is HTTP/1.1's
	}
	if !fresh {
		for bc := p.takeIdle(ex); bc != nil; bc = p.takeIdle(ex) {
			if bc.dead(p.loop.Now()) {
				bc.close()
				continue
			}
			p.up.Reuses.Add(1)
			p.bind(ex, bc, true)
			return true
		}
	}
	if p.open >= p.cfg.MaxConns && p.cfg.ProxyProtocol != 0 && len(p.idle) > 0 {
		// Every slot is taken, some by connections idle for other
		// clients: the coldest makes room.
		bc := p.idle[0]
		p.idle = p.idle[1:]
		bc.close()
	}
	if p.open < p.cfg.MaxConns {
		bc, err := p.dial(ex.client)
		if err != nil {
			ex.connectFailed(err)
			return true
		}
		p.bind(ex, bc, false)
		return true
	}
	return false
}

// takeIdle takes the warmest idle connection ex may use off the idle
// list: any, or with the PROXY protocol one that announced ex's client.
func (p *pool) takeIdle(ex *exchange) *backendConn {
	for i := len(p.idle) - 1; i >= 0; i-- {
		bc := p.idle[i]
		if !bc.serves(ex.client) {
			continue
		}
		copy(p.idle[i:], p.idle[i+1:])
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		return bc
	}
	return nil
}

func (p *pool) bind(ex *exchange, bc *backendConn, reused bool) {
	p.active++
	p.up.Requests.Add(1)
	bc.bind(ex)
	ex.attach(bc, reused)
}

// detach takes a connection that now carries a tunnel off the pool's
// books: it never comes back, and must not hold a slot of MaxConns (ten
// thousand WebSockets would starve every other request). Its slot serves
// a waiting request at the end of the iteration.
func (p *pool) detach() {
	p.open--
	p.active--
	if len(p.waiters) > 0 {
		p.kick()
	}
}

// dequeue removes ex from the queue (its client went away).
func (p *pool) dequeue(ex *exchange) {
	for i, w := range p.waiters {
		if w == ex {
			copy(p.waiters[i:], p.waiters[i+1:])
			p.waiters[len(p.waiters)-1] = nil
			p.waiters = p.waiters[:len(p.waiters)-1]
			return
		}
	}
}

// release takes back a connection whose exchange finished cleanly and
// which may be reused: it goes idle (or is closed when the idle list is
// full), and a waiting request gets it at the end of the iteration.
func (p *pool) release(bc *backendConn) {
	p.active--
	if p.retired && len(p.waiters) == 0 {
		bc.close()
		return
	}
	if p.cfg.MaxRequests > 0 && bc.requests >= p.cfg.MaxRequests {
		bc.close()
		return
	}
	// Waiters have first claim on it: keep it even beyond MaxIdle.
	if len(p.idle) >= p.cfg.MaxIdle && len(p.idle) >= len(p.waiters) {
		bc.close()
		return
	}
	idle := p.idleTimeout(bc)
	if idle <= 0 {
		bc.close()
		return
	}
	bc.goIdle(idle)
	p.idle = append(p.idle, bc)
	if len(p.waiters) > 0 {
		p.kick()
	}
}

// idleTimeout is how long bc may stay idle: the pool's IdleTimeout, capped
// below the origin's own idle close — the one it announced on this
// connection (Keep-Alive: timeout=N) and the one it was seen to use
// (Upstream.IdleCap) — so that the origin's close never races a request.
func (p *pool) idleTimeout(bc *backendConn) time.Duration {
	d := p.cfg.IdleTimeout
	if c := p.up.IdleCap(); c > 0 && c < d {
		d = c
	}
	if bc.kaTimeout > 0 {
		d = min(d, upstream.IdleBelow(bc.kaTimeout))
	}
	return d
}

// retire closes the pool's idle connections, HTTP/1.1, TLS, FastCGI
// and HTTP/2 alike, and makes every connection in flight close once its
// exchange is done (release, settle): nothing would ever take them again,
// and each holds a descriptor here and a connection at the origin — a
// php-fpm worker, which serves one connection at a time — until its idle
// timeout, or for ever once the loop has stopped. Waiting requests are
// still served. Idempotent.
func (p *pool) retire() {
	p.retired = true
	for len(p.idle) > 0 {
		p.idle[len(p.idle)-1].close() // forget takes it off the list
	}
	for i := len(p.conns) - 1; i >= 0; i-- {
		if i < len(p.conns) {
			p.conns[i].settle()
		}
	}
}

func (p *pool) dequeueFirst() {
	copy(p.waiters, p.waiters[1:])
	p.waiters[len(p.waiters)-1] = nil
	p.waiters = p.waiters[:len(p.waiters)-1]
}

// forget drops a closed connection from the pool's books; its slot lets a
// waiting request open a replacement at the end of the iteration.
func (p *pool) forget(bc *backendConn, wasActive bool) {
	p.open--
	p.up.OpenConns.Add(-1)
	if wasActive {
		p.active--
	}
	for i, c := range p.idle {
		if c == bc {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			break
		}
	}
	if len(p.waiters) > 0 && p.open < p.cfg.MaxConns {
		p.kick()
	}
}

// kick asks the loop to serve the waiters once this iteration's events are
// handled. release and forget run inside a connection's done or close,
// often inside an exchange's call; starting another exchange from there
// would run it in the middle of the first one's call.
func (p *pool) kick() {
	if !p.kicked {
		p.kicked = true
		p.loop.FlushLater(p)
	}
}

// Flush serves the waiters, in order, while the pool has idle connections
// or room for new ones. It runs on the loop (netpoll.Flusher).
func (p *pool) Flush() {
	p.kicked = false
	if p.h2 {
		p.flushStreams()
		return
	}
	for len(p.waiters) > 0 {
		ex := p.waiters[0]
		if len(p.idle) == 0 && p.open >= p.cfg.MaxConns {
			return
		}
		p.dequeueFirst()
		p.serving = ex
		p.take(ex, false)
		p.serving = nil
	}
}

// connect starts a non-blocking connect to the upstream (its unix
// socket, or the next of its addresses in turn) for an HTTP/1.1, TLS,
// FastCGI or h2 connection alike.
func (p *pool) connect() (int, error) {
	if p.up.Path != "" {
		return netpoll.ConnectUnix(p.up.Path)
	}
	fd, err := netpoll.Connect(p.up.DialAddr(p.dials))
	p.dials++
	return fd, err
}

// dial opens a new connection for a request from client (whom its PROXY
// header announces, with PoolConfig.ProxyProtocol); the connect completes
// on the loop.
func (p *pool) dial(client netip.AddrPort) (*backendConn, error) {
	fd, err := p.connect()
	if err != nil {
		return nil, err
	}
	bc, err := newBackendConn(p, fd, client)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	p.open++
	p.up.OpenConns.Add(1)
	p.up.Connects.Add(1)
	return bc, nil
}
