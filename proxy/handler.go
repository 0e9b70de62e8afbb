package proxy

import (
	"net/netip"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h1"
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
	length := h1.LengthNone
	switch {
	case req.ContentLength >= 0:
		length = req.ContentLength
	case req.HasBody:
		length, ex.chunked = h1.LengthChunked, true
	}
	ex.head = h1.AppendRequestHeadFramed(make([]byte, 0, headCap), req.Method, req.Path, h.requestFields(req), length)
	if !req.HasBody {
		ex.bodyEnded = true
	}
	ex.begin(nil)
	return ex
}

// headCap is the first guess at a translated request head's size: most
// fit, so building one costs a single allocation.
const headCap = 1024

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

// requestFields translates the client's fields for the origin: Host from
// :authority, the X-Forwarded-* set and Via added, fields the front ends
// already stripped (connection-specific ones) never reappear, and anything
// that could not be written safely is dropped.
func (h *Handler) requestFields(req *stream.Request) []stream.Field {
	fs := h.fields[:0]
	fs = append(fs, stream.Field{Name: "host", Value: req.Authority})
	client := h.clientIP(req.RemoteAddr.Addr())
	xff, via := client, "1.1 pollproxy"
	if req.Proto == "HTTP/2.0" {
		via = "2.0 pollproxy"
	}
	for _, f := range req.Header {
		switch f.Name {
		case "host", "x-forwarded-proto", "x-forwarded-host", "connection", "keep-alive",
			"proxy-connection", "te", "transfer-encoding", "upgrade":
			continue
		case "x-forwarded-for":
			xff = f.Value + ", " + client
			continue
		case "via":
			via = f.Value + ", " + via
			continue
		}
		if h1.ValidField(f) {
			fs = append(fs, f)
		}
	}
	fs = append(fs,
		stream.Field{Name: "x-forwarded-for", Value: xff},
		stream.Field{Name: "x-forwarded-proto", Value: req.Scheme},
		stream.Field{Name: "x-forwarded-host", Value: req.Authority},
		stream.Field{Name: "via", Value: via},
	)
	fs = applyOps(fs, h.cfg.HeaderUp)
	h.fields = fs[:0]
	return fs
}

// clientIP formats a client address, remembering the last one: a
// connection's requests come in runs from one address.
func (h *Handler) clientIP(a netip.Addr) string {
	if a != h.lastIP || h.lastIPText == "" {
		h.lastIP, h.lastIPText = a, a.String()
	}
	return h.lastIPText
}

// responseFields applies header_down edits to a response head.
func (h *Handler) responseFields(fs []stream.Field) []stream.Field {
	if len(h.cfg.HeaderDown) == 0 {
		return fs
	}
	return applyOps(fs, h.cfg.HeaderDown)
}

func applyOps(fs []stream.Field, ops []HeaderOp) []stream.Field {
	for _, op := range ops {
		name := strings.ToLower(op.Name)
		switch op.Op {
		case '-', '=':
			kept := fs[:0]
			for _, f := range fs {
				if f.Name != name {
					kept = append(kept, f)
				}
			}
			fs = kept
			if op.Op == '=' {
				fs = append(fs, stream.Field{Name: name, Value: op.Value})
			}
		case '+':
			fs = append(fs, stream.Field{Name: name, Value: op.Value})
		}
	}
	return fs
}
