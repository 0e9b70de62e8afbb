package proxy

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/fastcgi"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// Config is one reverse-proxy route: where requests go and how.
type Config struct {
	// Upstreams are the origins, shared by every loop.
	Upstreams []*upstream.Upstream
	// Policy spreads requests across upstreams (default round_robin).
	Policy Policy
	Pool   PoolConfig
	Health upstream.Health
	// ActiveHealth configures active health checks of the upstreams; a
	// upstream.HealthChecker outside the loops runs them (proxy/app
	// starts one).
	ActiveHealth upstream.ActiveHealth
	// ConnectTimeout bounds a connect and a wait in the pool's queue (504
	// or 503); ResponseHeaderTimeout bounds the wait for the response head
	// once the request is sent (504); ReadTimeout, when set, bounds the
	// silence between two reads of a response body (stream reset).
	ConnectTimeout        time.Duration
	ResponseHeaderTimeout time.Duration
	ReadTimeout           time.Duration
	// WriteTimeout is transport http's write_timeout: how long a write of
	// the request to the origin may stay blocked (no byte taken); then the
	// connection is closed and the client gets a 504. Never a tunnel's.
	WriteTimeout time.Duration
	// HeaderUp and HeaderDown edit request and response fields (Caddy's
	// header_up and header_down).
	HeaderUp, HeaderDown []route.HeaderOp
	// Method and Rewrite, when set, are the origin request's method
	// (placeholders filled, upper-cased; empty is GET) and target (built
	// as the rewrite directive builds one): Caddy's reverse_proxy method
	// and rewrite, which forward_auth expands to. The client's request is
	// left as it is.
	Method, Rewrite *route.Template
	// PolicyArg is the policy's argument: the field of "header" (lower
	// case, but "Host" as Caddy's names the request's host), the key of
	// "query", the cookie's name of "cookie" (default lb), how many
	// "random_choose" compares (default 2). CookieSecret keys the cookie's
	// HMAC; CookieMaxAge, when set, is its Max-Age (lb_policy cookie's
	// max_age).
	PolicyArg    string
	CookieSecret string
	CookieMaxAge time.Duration
	// Weights are weighted_round_robin's, one per upstream in order.
	Weights []int
	// Fallback picks when header, query or cookie finds no key (Caddy's
	// policy block; random when empty); FallbackChoose is its
	// random_choose N.
	Fallback       Policy
	FallbackChoose int
	// Retries is how many more upstreams a request whose connection failed
	// (nothing sent yet) may try: Caddy's lb_retries. TryDuration, when
	// set, lets it keep trying that long instead (lb_try_duration), waiting
	// TryInterval between tries (lb_try_interval, default 250ms).
	// Retries < 0 means none; 0 with no TryDuration, one try elsewhere.
	Retries     int
	TryDuration time.Duration
	TryInterval time.Duration
	// ClientIP derives the client address for client_ip_hash (nil: the
	// peer's address).
	ClientIP func(*stream.Request) netip.Addr
	// Shutdown is the process's scheduled stop, for {http.shutting_down}
	// in header_up when no route in front set the request's.
	Shutdown *stream.Shutdown
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

	// TrustedProxies are the peers whose client-address fields are
	// believed (Caddy's servers { trusted_proxies }; route.PrivateRanges
	// is its private_ranges). Without any, X-Forwarded-For, -Proto and -Host sent
	// by a client are replaced, not kept.
	TrustedProxies []netip.Prefix
	// ClientIPHeaders are the fields a trusted proxy names the client in,
	// in order of preference (default X-Forwarded-For).
	ClientIPHeaders []string
	// StrictClientIP reads ClientIPHeaders right to left for the first
	// address that is not a trusted proxy (route.StrictClientAddr, Caddy's
	// trusted_proxies_strict) rather than taking the leftmost.
	StrictClientIP bool
	// H2C speaks HTTP/2 with prior knowledge to the upstreams, over
	// cleartext (h2c:// upstreams, transport http { versions h2c … }):
	// many requests share a connection, up to the origin's
	// SETTINGS_MAX_CONCURRENT_STREAMS, then Pool.MaxConns bounds the
	// connections (h2origin.go).
	H2C bool
	// H2 offers HTTP/2 to TLS upstreams by ALPN (transport http versions
	// with 2, Caddy's default for https:// upstreams): an origin that
	// picks h2 carries many requests per connection; one that picks
	// http/1.1 is spoken to in HTTP/1.1 from then on.
	H2 bool
	// TLS, when set, speaks TLS to the upstreams (https:// upstreams,
	// transport http { tls … }): handshakes off the loop on its pool,
	// the record layer on the loop.
	TLS *upstream.TLS

	// ReadBodyTimeout, when set, bounds the silence between two pieces of
	// a request body (Caddy's servers { timeouts { read_body } }): the
	// client gets a 408 and the backend connection is closed.
	ReadBodyTimeout time.Duration
	// FastCGI, when set, speaks FastCGI to the upstreams (transport
	// fastcgi, php_fastcgi) instead of HTTP/1.1 (fcgirequest.go).
	FastCGI *FastCGI

	// LogHeaders copies the request's and the response's fields into the
	// Observer's RequestLog (an access log shaped as Caddy's wants them);
	// without it the copies are not made.
	LogHeaders bool
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
		c.Health.MaxFails = 1
	}
	if c.TryInterval <= 0 {
		c.TryInterval = 250 * time.Millisecond
	}
	if c.Policy == Cookie && c.PolicyArg == "" {
		c.PolicyArg = "lb"
	}
	return c
}

// Handler is the reverse proxy on one loop: that loop's pools and free
// buffers. Create one per loop with NewHandler.
type Handler struct {
	loop   *netpoll.Loop
	cfg    Config
	group  group
	bufs   [][]byte
	fields []stream.Field

	lastIP     netip.Addr
	lastIPText string

	// upHead: header_up fills upstream placeholders, or may remove Host,
	// so request heads carry marks that attach fills for the upstream
	// picked (translate.go).
	upHead bool

	// failures is the Observer's upstream failure counter, if it has one.
	failures observe.FailureObserver

	// tlsIn is where TLS upstream connections read ciphertext before
	// handing it to their sessions (upstreamtls.go); the loop's, shared.
	tlsIn []byte

	tunnels tunnelSet   // the loop's open tunnels, for the metrics
	live    inflight    // exchanges in flight, closed by Retire when removed
	freeEx  []*exchange // finished exchanges for reuse (exchange.recycle)
	// freeStreams: the structs of finished streams to HTTP/2 origins,
	// shared by this loop's origin connections (h2origin.go).
	freeStreams h2.FreeStreams

	// FastCGI: the params writer, a scratch buffer for env values, and
	// the absolute document roots worked out so far (fcgirequest.go).
	params    fastcgi.Params
	scratch   []byte
	fcgiRoots map[string]string
	cgiNames  map[string]string
}

// NewHandler returns the proxy for loop l. cfg should have its defaults
// applied (WithDefaults).
func NewHandler(l *netpoll.Loop, cfg Config) *Handler {
	h := &Handler{loop: l, cfg: cfg, upHead: route.UsesUpstream(cfg.HeaderUp) || route.MayRemoveHost(cfg.HeaderUp), group: group{policy: cfg.Policy, rnd: uint64(l.ID())*0x9e3779b97f4a7c15 + 1, choose: 2}}
	h.failures, _ = cfg.Observer.(observe.FailureObserver)
	if cfg.FastCGI != nil {
		h.upHead = false // no request head to fill: the upstream placeholders stay empty
	}
	h.group.fallback = cfg.Fallback
	if h.group.fallback == "" {
		h.group.fallback = Random
	}
	if cfg.FallbackChoose > 0 {
		h.group.choose = cfg.FallbackChoose
	}
	for _, w := range cfg.Weights {
		h.group.weights = append(h.group.weights, w)
		h.group.total += w
	}
	if cfg.Policy == RandomChoose && cfg.PolicyArg != "" {
		if n, err := strconv.Atoi(cfg.PolicyArg); err == nil && n > 0 {
			h.group.choose = n
		}
	}
	for _, up := range cfg.Upstreams {
		p := &pool{loop: l, up: up, cfg: cfg.Pool, h: h, index: len(h.group.pools), h2: cfg.H2C && cfg.TLS == nil}
		if cfg.TLS != nil {
			p.tls = cfg.TLS.ClientConfig(up)
			if cfg.H2 {
				p.h2, p.h2tls = true, h2ClientConfig(p.tls)
			}
		}
		h.group.pools = append(h.group.pools, p)
		if cfg.Policy == Cookie {
			h.group.cookies = append(h.group.cookies, CookieValue(cfg.CookieSecret, up.CaddyDial()))
		}
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
	ex := h.newExchange()
	*ex = exchange{h: h, g: &h.group, w: w, req: req, conn: req.Conn, method: h.upstreamMethod(req), hasBody: req.HasBody, key: h.key(req), https: req.Scheme == "https", client: req.RemoteAddr,
		timer: ex.timer, bodyTimer: ex.bodyTimer, head: ex.head[:0], h2buf: h2Request{Request: h2.Request{Header: ex.h2buf.Header[:0]}}}
	if req.Shutdown == nil { // no route in front set it
		req.Shutdown = h.cfg.Shutdown
	}
	trusted := route.Trusted(req.RemoteAddr.Addr(), h.cfg.TrustedProxies)
	if trusted && !ex.https && h.group.policy == Cookie {
		// As Caddy's cookie policy: a trusted proxy's last
		// X-Forwarded-Proto says whether the client spoke HTTPS.
		ex.https = lastValue(req.Header, "x-forwarded-proto") == "https"
	}
	var derived netip.Addr // the client a trusted proxy names, by this proxy's trust (the listener's and reverse_proxy's own)
	if trusted && (h.cfg.Observer != nil || !req.ClientIP.IsValid()) {
		derive := route.ClientAddr
		if h.cfg.StrictClientIP {
			derive = route.StrictClientAddr
		}
		derived = derive(req.RemoteAddr.Addr(), req.Header, h.cfg.TrustedProxies, h.cfg.ClientIPHeaders)
	}
	if trusted && !req.ClientIP.IsValid() { // no route in front set it: for {client_ip} in header_up
		req.ClientIP = derived
	}
	if h.cfg.Observer != nil {
		client := req.RemoteAddr.Addr().Unmap()
		if trusted {
			client = derived
		}
		ex.log.Begin(req, h.loop.ID(), h.loop.Backend(), h.loop.Now(), client, h.cfg.LogHeaders)
	}
	ex.maxBody = req.MaxBodySize
	if ex.maxBody > 0 && req.ContentLength > ex.maxBody && req.Upgrade == "" {
		// The declared length is over request_body max_size: answered
		// before any byte goes to an origin.
		ex.bodyEnded = !req.HasBody
		ex.end(answer(413, observe.ReasonBodyTooLarge, ""))
		return ex
	}
	head := req
	if req.Upgrade == "" && ex.hasBody && h.dropsBody(req, ex.method) {
		// As Caddy's reverse proxy: a request rewritten to GET or HEAD
		// goes without its body, which is read and dropped.
		head, ex.hasBody, ex.dropBody = withoutBody(req), false, true
	}
	if h.cfg.FastCGI != nil { // no upgrade, no HTTP/2: FastCGI has neither
		if !h.fcgiStart(ex, req, trusted) {
			return ex
		}
	} else if h.cfg.H2C && h.cfg.TLS == nil {
		if req.Upgrade != "" {
			if !ex.startH2Upgrade(req, trusted) { // h2tunnel.go
				return nil
			}
		} else {
			ex.h2req = ex.h2Request(head, ex.method, trusted)
		}
	} else if req.Upgrade == "" && h.cfg.H2 && h.cfg.TLS != nil && h.group.speaksH2() {
		ex.h2req = ex.h2Request(head, ex.method, trusted) // the HTTP/1.1 head too, if ALPN says so (attach)
	} else if req.Upgrade != "" {
		if !ex.startUpgrade(req, trusted) {
			return nil
		}
	} else {
		ex.head, ex.chunked = h.requestHead(ex.head, head, ex.method, trusted)
	}
	if !req.HasBody && ex.tun == nil {
		// An upgrade's "body" is the tunnel that may follow the 101.
		ex.bodyEnded = true
	} else if h.cfg.ReadBodyTimeout > 0 && ex.tun == nil {
		// A tunnel has its own idle timer (stream_timeout), never a request's.
		if ex.bodyTimer == nil {
			ex.bodyTimer = h.loop.NewTimer(ex.bodyTimedOut)
			ex.bodyTimer.SetOwner(ex)
		}
		ex.bodyTimer.Reset(h.cfg.ReadBodyTimeout)
	}
	// Listed only now: a panic while the head was built (which abandons
	// the client connection before its front end knew of the exchange)
	// leaves nothing of it behind.
	h.live.add(ex)
	if !ex.fcgiHeld { // else once the body's length is known (fcgiBodyEnd)
		ex.begin(nil)
	}
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
