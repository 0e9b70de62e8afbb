package proxy

import (
	"net/netip"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Config is one reverse-proxy route: where requests go and how.
type Config struct {
	// Upstreams are the origins, shared by every loop.
	Upstreams []*Upstream
	// Policy spreads requests across upstreams (default round_robin).
	Policy Policy
	Pool   PoolConfig
	Health Health
	// ConnectTimeout bounds a connect and a wait in the pool's queue (504
	// or 503); ResponseHeaderTimeout bounds the wait for the response head
	// once the request is sent (504); ReadTimeout, when set, bounds the
	// silence between two reads of a response body (stream reset).
	ConnectTimeout        time.Duration
	ResponseHeaderTimeout time.Duration
	ReadTimeout           time.Duration
	// HeaderUp and HeaderDown edit request and response fields.
	HeaderUp, HeaderDown []HeaderOp
	// Observer, when set, gets every finished request (metrics, access log).
	Observer observe.Observer
	// StreamTimeout, when set, closes a tunnel (WebSocket) that moved no
	// byte either way for that long (Caddy's stream_timeout). Off by
	// default: a tunnel lives as long as both sides want.
	StreamTimeout time.Duration
	// StreamCloseDelay is how long a tunnel whose site or upstream a
	// reload removed keeps running before it is closed (Caddy's
	// stream_close_delay). Zero closes it at the reload.
	StreamCloseDelay time.Duration
}

// WithDefaults returns c with zero values replaced by pollproxy's defaults.
func (c Config) WithDefaults() Config {
	c.Pool = c.Pool.withDefaults()
	if c.Policy == "" {
		c.Policy = RoundRobin
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.ResponseHeaderTimeout <= 0 {
		c.ResponseHeaderTimeout = 60 * time.Second
	}
	if c.Health.MaxFails == 0 {
		c.Health.MaxFails = 3
	}
	if c.Health.FailTimeout <= 0 {
		c.Health.FailTimeout = 10 * time.Second
	}
	return c
}

// HeaderOp sets (replacing), adds or deletes a field.
type HeaderOp struct {
	Op    byte // '=' set, '+' add, '-' delete
	Name  string
	Value string
}

// Handler is the reverse proxy on one loop: that loop's pools, free
// buffers and scratch space. Create one per loop with NewHandler.
type Handler struct {
	loop    *netpoll.Loop
	cfg     Config
	group   group
	bufs    [][]byte
	fields  []stream.Field
	scratch []byte

	lastIP     netip.Addr
	lastIPText string

	tunnels tunnelSet // the loop's open tunnels, for the metrics
	live    inflight  // exchanges in flight, closed by Retire when removed
}

// NewHandler returns the proxy for loop l. cfg should have its defaults
// applied (WithDefaults).
func NewHandler(l *netpoll.Loop, cfg Config) *Handler {
	h := &Handler{loop: l, cfg: cfg, group: group{policy: cfg.Policy}}
	for _, up := range cfg.Upstreams {
		h.group.pools = append(h.group.pools, &pool{loop: l, up: up, cfg: cfg.Pool, h: h})
	}
	// Loops start their cursors apart so round robin spreads from the first
	// request.
	if n := len(h.group.pools); n > 0 {
		h.group.next = l.ID() % n
	}
	return h
}

// Serve proxies one request.
func (h *Handler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	ex := &exchange{h: h, g: &h.group, w: w, method: req.Method, hasBody: req.HasBody}
	if h.cfg.Observer != nil {
		ex.logging = true
		ex.log = observe.RequestLog{
			Loop: h.loop.ID(), Poller: h.loop.Backend(), Proto: req.Proto, Method: req.Method,
			Authority: req.Authority, Path: req.Path, Remote: req.RemoteAddr, Start: h.loop.Now(),
		}
	}
	h.live.add(ex)
	if req.Upgrade != "" {
		if !ex.startUpgrade(req) {
			return nil
		}
	} else {
		ex.head, ex.chunked = h.requestHead(req)
	}
	if !req.HasBody && ex.tun == nil {
		// An upgrade's "body" is the tunnel that may follow the 101.
		ex.bodyEnded = true
	}
	ex.begin(nil)
	return ex
}

// maxBufs bounds the loop's free list of backend read buffers.
const maxBufs = 256

func (h *Handler) getBuf() []byte {
	if n := len(h.bufs); n > 0 {
		b := h.bufs[n-1]
		h.bufs = h.bufs[:n-1]
		return b
	}
	return make([]byte, backendBufSize)
}

func (h *Handler) putBuf(b []byte) {
	if b != nil && len(h.bufs) < maxBufs {
		h.bufs = append(h.bufs, b)
	}
}
