// Package config reads pollproxy's Caddyfile into a typed configuration.
//
// The file is tokenised and grouped by the Caddyfile package of Caddy
// (github.com/caddyserver/caddy/v2/caddyconfig/caddyfile), so imports,
// snippets and {$ENV} placeholders behave as they do in Caddy. What the
// names mean what they mean in Caddy: a global options block, then one
// site block per address set, with reverse_proxy, the routing directives
// and matchers, header, and tls. Each directive family has its file:
// global.go (global options and servers), site.go (site addresses and the
// route table), matchers.go, reverseproxy.go, unsupported.go (Caddy's
// names pollproxy lacks). Every error names the file and line it comes
// from and what was expected, as in
//
//	Caddyfile:12: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, ...)
//
// and a Caddy directive or option pollproxy does not implement says so:
//
//	Caddyfile:7: php_fastcgi is not supported by pollproxy
package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/route"
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
	// Admin is the metrics listener, host:port; "" when off.
	Admin string
	// ABInterval is the A/B sampling interval (ab_interval, a
	// pollproxy-only option; 0: ab.DefaultInterval).
	ABInterval time.Duration
	// Email, ACMECA and Storage configure certificate management: the
	// ACME account, the directory URL (default Let's Encrypt), and where
	// certificates, keys and the local CA are kept.
	Email   string
	ACMECA  string
	Storage string
	// Redis, when set, replaces the Storage directory (storage redis).
	Redis *RedisStorage
	// DefaultBind is the host every site listens on ("" : all interfaces).
	DefaultBind string
	// HTTPPort is where ACME HTTP-01 challenges are answered and plain
	// HTTP is redirected to HTTPS when some site uses ACME (0: off).
	HTTPPort int
	// Timeouts, TrustedProxies, ClientIPHeaders, ReadBodyTimeout and
	// MaxHeaderSize come from the global servers block.
	Timeouts Timeouts
	// TrustedProxies are the proxies whose client address headers are
	// believed (servers { trusted_proxies static ... }).
	TrustedProxies []netip.Prefix
	// ClientIPHeaders are the fields a trusted proxy reports the client in
	// (servers { client_ip_headers ... }; Caddy's default X-Forwarded-For).
	ClientIPHeaders []string
	// ReadBodyTimeout bounds reading a request body (servers { timeouts {
	// read_body } }).
	ReadBodyTimeout time.Duration
	// MaxHeaderSize bounds a request head (servers { max_header_size });
	// 0: the front ends' defaults.
	MaxHeaderSize int
	GracePeriod   time.Duration
	// Log is the access log; nil when there is none.
	Log   *Log
	Sites []*Site
	// NoExtendedConnect switches RFC 8441 off (h2_extended_connect off).
	NoExtendedConnect bool
}

// Timeouts bound the client side of connections.
type Timeouts struct {
	ReadHeader time.Duration // first byte (or connection start) to end of an HTTP/1.1 head
	Idle       time.Duration // no request on a kept-alive connection
	Handshake  time.Duration // TLS handshake (a pollproxy name; Caddy has none)
	Write      time.Duration // Caddy's write: the whole response (kept for the front ends)
}

// Log configures the access log.
type Log struct {
	Format string // "json" or "common"
	Output string // "stderr", "stdout" or a file name
}

// Site is one site block: the addresses it answers and its routes.
type Site struct {
	Pos   Pos
	Addrs []Address
	// Routes is the site's compiled route table; its Proxy routes index
	// Proxies. A site built in code may leave it nil and set Proxy: every
	// request is then proxied there.
	Routes  *route.Table
	Proxies []*Proxy
	Proxy   Proxy
	TLS     TLS
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
func (s *Site) Table() *route.Table {
	if s.Routes != nil {
		return s.Routes
	}
	return &route.Table{Nodes: []route.Node{{Kind: route.Proxy}}, Proxies: 1}
}

// Pos is a place in a Caddyfile.
type Pos struct {
	File string
	Line int
}

// String is "file:line", the prefix of every configuration error.
func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Address is one site address: a host (exact, "*.example.com", or "" for
// any host) and a port.
type Address struct {
	Original string
	Host     string
	Port     int
}

// Proxy is one reverse_proxy directive, with Caddy's meanings.
type Proxy struct {
	Pos       Pos
	Upstreams []string // host:port
	Policy    proxy.Policy
	// PolicyArg and CookieSecret: lb_policy header FIELD, query KEY,
	// cookie NAME [SECRET], random_choose N.
	PolicyArg, CookieSecret string
	// Retries is lb_retries (-1 for an explicit 0); TryDuration and
	// TryInterval are lb_try_duration and lb_try_interval.
	Retries                  int
	TryDuration, TryInterval time.Duration
	// Health is passive health: max_fails, fail_duration,
	// unhealthy_status, unhealthy_latency.
	Health               upstream.Health
	HeaderUp, HeaderDown []proxy.HeaderOp
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
	Dynamic               *DynamicA // dynamic a (dynamic.go); its upstream is in Upstreams
}

// ProxyConfig returns the reverse proxy's configuration for these
// resolved upstreams, defaults applied.
func (p Proxy) ProxyConfig(ups []*upstream.Upstream) proxy.Config {
	pool := proxy.PoolConfig{MaxConns: p.MaxConns, MaxIdle: p.KeepAlive, IdleTimeout: p.KeepAliveTimeout}
	if p.KeepAliveOff {
		pool.MaxRequests = 1
	}
	return proxy.Config{
		Upstreams:             ups,
		Policy:                p.Policy,
		PolicyArg:             p.PolicyArg,
		CookieSecret:          p.CookieSecret,
		Retries:               p.Retries,
		TryDuration:           p.TryDuration,
		TryInterval:           p.TryInterval,
		Pool:                  pool,
		Health:                p.Health,
		ConnectTimeout:        p.DialTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		ReadTimeout:           p.ReadTimeout,
		WriteTimeout:          p.WriteTimeout,
		HeaderUp:              p.HeaderUp,
		HeaderDown:            p.HeaderDown,
		StreamTimeout:         p.Stream.Timeout,
		StreamCloseDelay:      p.Stream.CloseDelay,
		ActiveHealth:          p.ActiveHealth,
	}.WithDefaults()
}

// TLSMode says where a site's certificate comes from.
type TLSMode int

// TLS modes.
const (
	// TLSAuto is the default: ACME for public names, the local CA for
	// localhost, IP addresses and names that cannot be public.
	TLSAuto TLSMode = iota
	TLSInternal
	TLSFiles
	TLSACME
)

// String is the mode as the Caddyfile spells it.
func (m TLSMode) String() string {
	return [...]string{"auto", "internal", "files", "acme"}[m]
}

// TLS is a site's tls directive.
type TLS struct {
	Pos       Pos
	Mode      TLSMode
	Cert, Key string // TLSFiles
	Email     string // TLSACME: the account for this site
}

// Listener is one listening address and the sites it serves, routed by
// host.
type Listener struct {
	Addr  string // host:port to listen on
	Port  int
	Hosts []HostSite
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
				l = &Listener{Addr: net.JoinHostPort(c.DefaultBind, strconv.Itoa(a.Port)), Port: a.Port}
				byPort[a.Port] = l
				out = append(out, l)
			}
			l.Hosts = append(l.Hosts, HostSite{Host: a.Host, Site: s})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// Error is one problem in a Caddyfile.
type Error struct {
	Pos Pos
	Msg string
}

// Error implements error: "file:line: message".
func (e *Error) Error() string {
	if e.Pos.File == "" {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// Errors are every problem found in a Caddyfile, in file order.
type Errors []*Error

// Error implements error: one problem per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Load reads and parses the Caddyfile at path.
func Load(path string) (*Config, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{Msg: fmt.Sprintf("reading configuration: %v", err)}}
	}
	return Parse(path, body)
}

// Defaults of the global options.
const (
	DefaultAdmin       = "127.0.0.1:2019"
	DefaultGracePeriod = 10 * time.Second
	DefaultHTTPPort    = 80
)

// Parse parses a Caddyfile read from filename (imports are relative to
// it). The error, when not nil, is an Errors listing every problem found.
func Parse(filename string, body []byte) (*Config, error) {
	blocks, err := caddyfile.Parse(filename, body)
	if err != nil {
		return nil, Errors{lexError(filename, err)}
	}
	p := &parser{cfg: &Config{
		File:        filename,
		Admin:       DefaultAdmin,
		GracePeriod: DefaultGracePeriod,
		HTTPPort:    DefaultHTTPPort,
	}}
	for i, b := range blocks {
		if len(b.Keys) == 0 {
			if i != 0 {
				p.errAt(Pos{filename, 0}, "global options block must come first")
				continue
			}
			p.global(b)
			continue
		}
		if b.IsNamedRoute {
			p.errAt(tokPos(b.Keys[0]), "named routes (&(name)) are not supported by pollproxy")
			continue
		}
		p.site(b)
	}
	if len(p.errs) == 0 && len(p.cfg.Sites) == 0 {
		p.errAt(Pos{filename, 1}, "no site block (want e.g. \"localhost:8443 { reverse_proxy :8080 }\")")
	}
	p.checkDuplicates()
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool {
			a, b := p.errs[i].Pos, p.errs[j].Pos
			if a.File != b.File {
				return a.File == filename // the main file first, imports after
			}
			return a.Line < b.Line
		})
		return nil, p.errs
	}
	return p.cfg, nil
}

// lexErrRE matches the Caddyfile package's "message, at file:line" form.
var lexErrRE = regexp.MustCompile(`^(?s)(.*), at (.+):(\d+)(?: import chain.*)?$`)

func lexError(filename string, err error) *Error {
	if m := lexErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[3])
		return &Error{Pos: Pos{m[2], line}, Msg: m[1]}
	}
	return &Error{Pos: Pos{File: filename}, Msg: err.Error()}
}

type parser struct {
	cfg   *Config
	errs  Errors
	named map[string]route.Matcher // the site's named matchers
}

func tokPos(t caddyfile.Token) Pos { return Pos{t.File, t.Line} }

func dpos(d *caddyfile.Dispenser) Pos { return Pos{d.File(), d.Line()} }

func (p *parser) errAt(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) errf(d *caddyfile.Dispenser, format string, args ...any) {
	p.errAt(dpos(d), format, args...)
}

// openedBlock reports whether a block follows on the current line, and
// consumes it, for directives that take none; at is the line it opens on.
func openedBlock(d *caddyfile.Dispenser) (Pos, bool) {
	n := d.Nesting()
	at := dpos(d)
	if !d.NextBlock(n) {
		return at, false
	}
	for d.NextBlock(n) {
	}
	return at, true
}

// skipBlock consumes the block opened on the current line, if any, so
// that parsing resumes after an error inside it.
func skipBlock(d *caddyfile.Dispenser) {
	for n := d.Nesting(); d.NextBlock(n); {
	}
}

// parseAddress reads a site address: [https://]host[:port], :port, or
// *.example.com[:port].
func parseAddress(text string) (Address, error) {
	a := Address{Original: text, Port: 443}
	rest := text
	switch {
	case strings.HasPrefix(rest, "https://"):
		rest = strings.TrimPrefix(rest, "https://")
	case strings.HasPrefix(rest, "http://"):
		return a, fmt.Errorf("http:// sites are not supported by pollproxy: it serves HTTPS (drop %q)", "http://")
	case strings.Contains(rest, "://"):
		return a, fmt.Errorf("unsupported scheme (want https:// or none)")
	}
	if strings.ContainsAny(rest, "/?#") {
		return a, fmt.Errorf("paths in site addresses are not supported by pollproxy (want host, host:port or :port; route paths with handle)")
	}
	host, port := rest, ""
	if h, pt, err := net.SplitHostPort(rest); err == nil {
		host, port = h, pt
	} else if strings.HasPrefix(rest, "[") || strings.Count(rest, ":") == 1 {
		return a, fmt.Errorf("want host, host:port or :port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return a, fmt.Errorf("port %q: want 1-65535", port)
		}
		a.Port = n
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if strings.Contains(host, "*") {
		if !strings.HasPrefix(host, "*.") || strings.Contains(host[2:], "*") || len(host) < 3 {
			return a, fmt.Errorf("a wildcard replaces the leftmost label only (want *.example.com)")
		}
	}
	a.Host = host
	return a, nil
}

// oneArg reads exactly one argument.
func (p *parser) oneArg(d *caddyfile.Dispenser, label, want string) (string, bool) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "%s: want one argument: %s", label, want)
		skipBlock(d)
		return "", false
	}
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "%s: takes no block", label)
	}
	return args[0], true
}

func (p *parser) intArg(d *caddyfile.Dispenser, label string, min int) int {
	v, ok := p.oneArg(d, label, "a number")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		p.errf(d, "%s: %q: want a whole number >= %d", label, v, min)
		return 0
	}
	return n
}

func (p *parser) durationArg(d *caddyfile.Dispenser, label string) time.Duration {
	v, ok := p.oneArg(d, label, "a duration such as 10s")
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(v)
	if err != nil || dur <= 0 {
		p.errf(d, "%s: %q: want a positive duration such as 500ms, 10s or 2m", label, v)
		return 0
	}
	return dur
}

// checkDuplicates refuses two sites claiming the same host on one port.
func (p *parser) checkDuplicates() {
	seen := map[string]*Site{}
	for _, s := range p.cfg.Sites {
		for _, a := range s.Addrs {
			key := a.Host + "|" + strconv.Itoa(a.Port)
			if prev := seen[key]; prev != nil && prev != s {
				p.errAt(s.Pos, "site %s: host %q on port %d is also served by the site at %s", a.Original, a.Host, a.Port, prev.Pos)
				continue
			}
			seen[key] = s
		}
	}
}

// CheckFiles loads every certificate file pair the sites name, so that a
// missing or mismatched file is reported with the line of its tls
// directive before anything starts.
func (c *Config) CheckFiles() error {
	var errs Errors
	for _, s := range c.Sites {
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
