package config

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/site"
	"github.com/pollproxy/pollproxy/proxy/upstream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// Config is a whole Caddyfile.
type Config struct {
	// File is the name the configuration was read from.
	File string
	// Pollers are the loops' backends, cycled across the loops: one name
	// for all loops, several for an A/B split. Empty means auto.
	Pollers []string
	// Loops is the number of event loops (0: one per CPU).
	Loops int
	// Admin is the admin listener (metrics, /ab, /poller), host:port; ""
	// when off.
	Admin string
	// AdminOrigins are the origins the admin listener accepts in a
	// request's Host and Origin (admin { origins }): host:port, or
	// scheme://host:port to match the scheme too. Nil: the listener's
	// address, as localhost, 127.0.0.1 and ::1 when it is loopback or
	// every interface.
	AdminOrigins []string
	// AdminEnforceOrigin makes every admin request name an allowed
	// origin in Origin or Referer (admin { enforce_origin }).
	AdminEnforceOrigin bool
	// ABInterval is the A/B sampling interval (ab_interval, a
	// pollproxy-only option; 0: ab.DefaultInterval).
	ABInterval time.Duration
	// ABRotate is how long each loop serves one poller in the A/B
	// crossover (ab_rotate, pollproxy-only; 0: three intervals,
	// ABRotateOff: the fixed split).
	ABRotate time.Duration
	// Email, ACMECA and Storage configure certificate management: the
	// ACME account, the directory URL (default Let's Encrypt), and where
	// certificates, keys and the local CA are kept.
	Email   string
	ACMECA  string
	Storage string
	// Redis, when set, replaces the Storage directory (storage redis).
	Redis *RedisStorage
	// TLSOptions are the other global options about certificates and
	// handshakes (local_certs, pki, on_demand_tls ...).
	TLSOptions
	// DefaultBind is the host every site listens on ("" : all interfaces).
	DefaultBind string
	// HTTPPort is Caddy's http_port: the port of http:// sites without
	// one, served in cleartext whatever the site, and where ACME HTTP-01
	// challenges are answered and HTTPS sites' names are redirected to
	// HTTPS (0: http_port off, a pollproxy extension: neither).
	HTTPPort int
	// HTTPSPort is Caddy's https_port: the port of sites without one that
	// are not http://, served over TLS whatever the site.
	HTTPSPort int
	// AutoHTTPS is Caddy's auto_https: what pollproxy does on its own for
	// HTTPS sites.
	AutoHTTPS AutoHTTPS
	// ServerOptions are the global servers block's, for every listener
	// no servers ADDR block names.
	ServerOptions
	// Servers are the servers ADDR blocks, for the listener at ADDR alone.
	Servers     []*ServerOptions
	GracePeriod time.Duration
	// Log is the default logger (the global log option without a name, or
	// log default): the output, format and level of the sites' logs that
	// set none themselves; nil without one. Loggers are every global log
	// option by name, the default one included.
	Log     *Log
	Loggers map[string]*Log
	// LogCredentials keeps Cookie, Set-Cookie, Authorization and
	// Proxy-Authorization values in access logs (servers {
	// log_credentials }); by default they read REDACTED.
	LogCredentials bool
	Sites          []*Site
	// NoExtendedConnect switches RFC 8441 off (h2_extended_connect off).
	NoExtendedConnect bool
	// MetricsPerHost counts requests by host too (metrics { per_host });
	// MetricsCatchAllHosts counts every host on its own, also on plain
	// HTTP (observe_catchall_hosts).
	MetricsPerHost, MetricsCatchAllHosts bool
}

// ServerOptions are a servers block's: Caddy's options for the servers
// (listeners) it applies to. A block naming a listener applies to it
// alone and whole, as Caddy's does: it takes nothing from the block
// without an address.
type ServerOptions struct {
	// Addr is the listener a servers ADDR block names ("" for the global
	// block), written as the listener's address is (":443",
	// "127.0.0.1:8443" with default_bind).
	Addr string
	Pos  Pos
	// Timeouts bound the client side of connections.
	Timeouts Timeouts
	// TrustedProxies are the proxies whose client address headers are
	// believed (trusted_proxies static ...).
	TrustedProxies []netip.Prefix
	// ClientIPHeaders are the fields a trusted proxy reports the client in
	// (client_ip_headers; Caddy's default X-Forwarded-For).
	ClientIPHeaders []string
	// ReadBodyTimeout bounds reading a request body (timeouts { read_body }).
	ReadBodyTimeout time.Duration
	// MaxHeaderSize bounds a request head (max_header_size); 0: the front
	// ends' defaults.
	MaxHeaderSize int
	// ProxyProtocol reads PROXY protocol headers in front of TLS
	// (listener_wrappers { proxy_protocol { ... } tls }); nil without one.
	ProxyProtocol *server.ProxyProtocol
	// H2C lets a plain-HTTP listener take HTTP/2 with prior knowledge
	// (protocols h1 h2 h2c).
	H2C bool
	// Name is the server's name (name), for what reports on it: the
	// listener's start log and pollproxy adapt.
	Name string
	// StrictSNIHost answers 421 to a TLS request whose Host is not the
	// name the client sent in its ClientHello (strict_sni_host).
	// StrictSNIHostSet says the Caddyfile chose (on or insecure_off);
	// unchosen, a listener with client_auth turns it on (StrictSNIFor).
	StrictSNIHost, StrictSNIHostSet bool
	// KeepAlive is the TCP keep-alive of client connections
	// (keepalive_interval, keepalive_idle, keepalive_count), with
	// Caddy's defaults for what is zero.
	KeepAlive KeepAlive
	// TrustedProxiesStrict reads the client address fields right to
	// left: the client is the first address that is not a trusted proxy
	// (trusted_proxies_strict), not the leftmost one.
	TrustedProxiesStrict bool
	// TrustedProxiesUnix trusts connections over a unix socket
	// (trusted_proxies_unix); pollproxy serves sites on TCP only.
	TrustedProxiesUnix bool
	// HTTPRedirect answers plain HTTP sent to a TLS listener with a
	// redirect to https (listener_wrappers { http_redirect }).
	HTTPRedirect bool

	noH2         bool // protocols left h2 out (checkProtocols)
	protocolsPos Pos
}

// KeepAlive is servers' keepalive_* options. As in Caddy (Go's
// net.KeepAliveConfig): a negative Interval turns TCP keep-alive off;
// zero is the default (15s, 15s, 9 probes); a negative Idle or Count
// leaves the system's value.
type KeepAlive struct {
	Interval, Idle time.Duration
	Count          int
}

// ServerOptionsFor returns the servers options of the listener at addr:
// its servers ADDR block, else the global one.
func (c *Config) ServerOptionsFor(addr string) *ServerOptions {
	for _, so := range c.Servers {
		if so.Addr == addr {
			return so
		}
	}
	return &c.ServerOptions
}

// StrictSNIFor says whether listener l answers 421 to a request whose
// Host is not its ClientHello's name: as its strict_sni_host says, or,
// where that is not written, whenever one of its sites asks for client
// certificates. Caddy turns it on there for the same reason: without
// it, a client could pass the check of an open site's name and then ask
// for the protected site by its Host.
func (c *Config) StrictSNIFor(l *Listener) bool {
	if l.Cleartext {
		return false
	}
	so := c.ServerOptionsFor(l.Addr)
	if so.StrictSNIHostSet {
		return so.StrictSNIHost
	}
	for _, hs := range l.Hosts {
		if hs.Site.TLS.ClientAuth != nil {
			return true
		}
	}
	return false
}

// Timeouts bound the client side of connections.
type Timeouts struct {
	ReadHeader time.Duration // first byte (or connection start) to end of an HTTP/1.1 head
	Idle       time.Duration // no request on a kept-alive connection
	Handshake  time.Duration // TLS handshake (a pollproxy name; Caddy has none)
	Write      time.Duration // Caddy's write: the whole response (kept for the front ends)
}

// Site is one site block: the addresses it answers and its routes.
type Site struct {
	Pos   Pos
	Addrs []Address
	// Routes is the site's compiled route table; its Proxy routes index
	// Proxies. A site built in code may leave it nil and set Proxy: every
	// request is then proxied there.
	Routes  *site.Table
	Proxies []*Proxy
	Proxy   Proxy
	TLS     TLS
	// Logs are the site's log directives: its requests' access logs
	// (none without one, as in Caddy).
	Logs []*Log
	// bind: the site has a bind directive, which pollproxy refuses; two
	// sites that bind would set apart are then not also reported as
	// serving the same host.
	bind bool
}

// AllProxies is every reverse proxy the site uses, in the order its route
// table indexes them.
func (s *Site) AllProxies() []*Proxy {
	if s.Routes == nil {
		return []*Proxy{&s.Proxy}
	}
	return s.Proxies
}

// Table is the site's route table: Routes, or one route to Proxy.
func (s *Site) Table() *site.Table {
	if s.Routes != nil {
		return s.Routes
	}
	return &site.Table{Nodes: []site.Node{{Do: &site.Proxy{}}}, Proxies: 1}
}

// Pos is a place in a Caddyfile.
type Pos struct {
	File string
	Line int
}

// String is "file:line", the prefix of every configuration error.
func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Address is one site address: a scheme ("http", "https" or "" when
// none was written), a host (exact, "*.example.com", or "" for any host)
// and a port; Cleartext says whether it is served over plain HTTP, by
// Caddy's rules (https.go).
type Address struct {
	Original  string
	Scheme    string
	Host      string
	Port      int
	Cleartext bool
}

// Proxy is one reverse_proxy directive, with Caddy's meanings.
type Proxy struct {
	Pos       Pos
	Upstreams []string // host:port
	// Method and Rewrite are its method and rewrite: the origin's request
	// gets that method (placeholders filled, upper-cased) and that target
	// (built as the rewrite directive builds one), the client's request
	// staying as it is. nil: the request's own.
	Method, Rewrite *route.Template
	// Responses are its handle_response and replace_status, with their
	// response matchers resolved.
	Responses []site.ResponseHandler
	// TrustedProxies is reverse_proxy's own trusted_proxies: peers whose
	// X-Forwarded-* this proxy passes on, besides servers' trusted_proxies.
	TrustedProxies []netip.Prefix
	Policy         proxy.Policy
	// PolicyArg and CookieSecret: lb_policy header FIELD, query KEY,
	// cookie NAME [SECRET], random_choose N; Weights: weighted_round_robin
	// W... (at PolicyPos).
	PolicyArg, CookieSecret string
	// CookieMaxAge is lb_policy cookie's max_age.
	CookieMaxAge time.Duration
	Weights      []int
	PolicyPos    Pos
	// Fallback is the policy block's fallback (random when empty, as
	// Caddy's default), FallbackChoose its random_choose N.
	Fallback       proxy.Policy
	FallbackChoose int
	// Retries is lb_retries (-1 for an explicit 0); TryDuration and
	// TryInterval are lb_try_duration and lb_try_interval.
	Retries                  int
	TryDuration, TryInterval time.Duration
	// Health is passive health: max_fails, fail_duration,
	// unhealthy_status, unhealthy_latency.
	Health               upstream.Health
	HeaderUp, HeaderDown []route.HeaderOp
	// FlushInterval is accepted for Caddy's sake: pollproxy always
	// forwards response bytes as they arrive (Caddy's -1).
	FlushInterval time.Duration
	// transport http: keepalive_idle_conns_per_host (and
	// keepalive_idle_conns) are KeepAlive; keepalive is KeepAliveTimeout
	// (KeepAliveOff for "off"); max_conns_per_host is MaxConns. Pools are
	// per loop, so these caps are per upstream per loop.
	KeepAlive             int
	KeepAliveTimeout      time.Duration
	KeepAliveOff          bool
	MaxConns              int
	DialTimeout           time.Duration
	ResponseHeaderTimeout time.Duration
	ReadTimeout           time.Duration
	Stream                StreamOptions         // stream_timeout, stream_close_delay
	ActiveHealth          upstream.ActiveHealth // health_uri, health_interval, … (health.go)
	WriteTimeout          time.Duration
	Dynamic               *Dynamic // dynamic a (dynamic.go); its upstream is in Upstreams
	// ProxyProtocol is transport http's proxy_protocol: 1 or 2 (v1, v2),
	// 0 for none.
	ProxyProtocol int
	// TLS, when set, speaks TLS to the upstreams (https:// upstreams,
	// transport http's tls options).
	TLS *UpstreamTLS
	// FastCGI, when set, is transport fastcgi (also php_fastcgi's): the
	// upstreams are FastCGI responders.
	FastCGI *FastCGI
	// Versions is transport http's versions ("1.1", "2", "h2c"); nil is
	// Caddy's default, 1.1 and 2. An h2c:// upstream means h2c and 2.
	Versions []string

	scheme string // the scheme the upstreams were written with, one for all
}

// ProxyConfig returns the reverse proxy's configuration for these
// resolved upstreams, defaults applied.
func (p Proxy) ProxyConfig(ups []*upstream.Upstream) proxy.Config {
	pool := proxy.PoolConfig{MaxConns: p.MaxConns, MaxIdle: p.KeepAlive, IdleTimeout: p.KeepAliveTimeout, ProxyProtocol: p.ProxyProtocol}
	if p.KeepAliveOff {
		pool.MaxRequests = 1
	}
	c := proxy.Config{
		Upstreams:             ups,
		Policy:                p.Policy,
		PolicyArg:             p.PolicyArg,
		Weights:               p.Weights,
		Fallback:              p.Fallback,
		FallbackChoose:        p.FallbackChoose,
		CookieSecret:          p.CookieSecret,
		CookieMaxAge:          p.CookieMaxAge,
		Retries:               p.Retries,
		TryDuration:           p.TryDuration,
		TryInterval:           p.TryInterval,
		Pool:                  pool,
		Health:                p.Health,
		ConnectTimeout:        p.DialTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		ReadTimeout:           p.ReadTimeout,
		WriteTimeout:          p.WriteTimeout,
		HeaderUp:              p.headerUp(),
		Method:                p.Method,
		Rewrite:               p.Rewrite,
		HeaderDown:            p.HeaderDown,
		StreamTimeout:         p.Stream.Timeout,
		StreamCloseDelay:      p.Stream.CloseDelay,
		ActiveHealth:          p.activeHealth(),
		H2C:                   p.h2c(),
		H2:                    p.h2(),
	}.WithDefaults()
	if p.FastCGI != nil {
		c.FastCGI = p.FastCGI.proxyFastCGI()
		c.H2C, c.H2 = false, false // FastCGI is its own protocol
	}
	return c
}

// h2c reports whether the upstreams speak HTTP/2 with prior knowledge
// over cleartext: an h2c:// upstream, or versions with h2c and no TLS
// (Caddy then turns HTTP/1.1 off).
func (p Proxy) h2c() bool {
	if p.TLS != nil {
		return false
	}
	return p.scheme == "h2c" || slices.Contains(p.Versions, "h2c")
}

// h2 reports whether HTTP/2 is offered to TLS upstreams by ALPN:
// versions with 2, or none (Caddy's default, 1.1 and 2); with h2c too,
// as Caddy's transport then takes h2 over TLS as well.
func (p Proxy) h2() bool {
	return p.TLS != nil && (p.Versions == nil || slices.Contains(p.Versions, "2") || slices.Contains(p.Versions, "h2c"))
}

// activeHealth is the active health checks' configuration, speaking the
// HTTP version the proxy speaks to the upstreams, as Caddy's checks use
// its transport.
func (p Proxy) activeHealth() upstream.ActiveHealth {
	a := p.ActiveHealth
	a.H2C, a.H2 = p.h2c(), p.h2()
	return a
}

// hostUpstream is the Host an HTTPS upstream is sent by default, as in
// Caddy: the upstream's host:port, which its certificate and virtual
// hosts are for, rather than the client's.
var hostUpstream = func() route.HeaderOp {
	op, err := route.ParseUpstreamHeaderOp([]string{"Host", "{upstream_hostport}"})
	if err != nil {
		panic(err)
	}
	return op
}()

// headerUp is header_up, after the transport's own edits: for TLS, Host
// is the upstream's unless header_up sets it.
func (p Proxy) headerUp() []route.HeaderOp {
	if p.TLS == nil {
		return p.HeaderUp
	}
	return append([]route.HeaderOp{hostUpstream}, p.HeaderUp...)
}

// Listener is one listening address and the sites it serves, routed by
// host.
type Listener struct {
	Addr      string // host:port to listen on
	Port      int
	Cleartext bool // plain HTTP: every address on the port is (Address.Cleartext)
	Hosts     []HostSite
}

// HostSite is one routing entry of a listener.
type HostSite struct {
	Host string // exact, "*.suffix", or "" for the default
	Site *Site
}

// Listeners groups the sites by port: every site on one port shares one
// server and its host router. They are sorted by port.
func (c *Config) Listeners() []*Listener {
	byPort := map[int]*Listener{}
	var out []*Listener
	for _, s := range c.Sites {
		for _, a := range s.Addrs {
			l := byPort[a.Port]
			if l == nil {
				l = &Listener{Addr: net.JoinHostPort(c.DefaultBind, strconv.Itoa(a.Port)), Port: a.Port, Cleartext: a.Cleartext}
				byPort[a.Port] = l
				out = append(out, l)
			}
			l.Hosts = append(l.Hosts, HostSite{Host: a.Host, Site: s})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// Defaults of the global options.
const (
	DefaultAdmin       = "127.0.0.1:2019"
	DefaultGracePeriod = 10 * time.Second
	DefaultHTTPPort    = 80
	DefaultHTTPSPort   = 443
)

// CheckFiles loads every certificate file pair the sites name, and the
// trust pools and client certificates of their HTTPS upstreams, so that a
// missing or mismatched file is reported with the line of its directive
// before anything starts.
func (c *Config) CheckFiles() error {
	var errs Errors
	for _, s := range c.Sites {
		// An HTTPS upstream's trust pool and client certificate.
		for _, rp := range s.AllProxies() {
			if rp.TLS == nil {
				continue
			}
			if _, err := rp.TLS.ClientConfig(); err != nil {
				errs = append(errs, &Error{Pos: rp.TLS.Pos, Msg: "reverse_proxy: " + err.Error()})
			}
		}
		if a := s.TLS.ClientAuth; a != nil {
			if _, _, err := a.Load(); err != nil {
				errs = append(errs, &Error{Pos: a.Pos, Msg: "tls: client_auth: " + err.Error()})
			}
		}
		if s.TLS.Mode != TLSFiles {
			continue
		}
		if _, err := pptls.LoadKeyPair(s.TLS.Cert, s.TLS.Key); err != nil {
			errs = append(errs, &Error{Pos: s.TLS.Pos, Msg: "tls: " + strings.TrimPrefix(err.Error(), "tls: ")})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
