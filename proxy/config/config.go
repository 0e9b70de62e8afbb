// Package config reads pollproxy's Caddyfile into a typed configuration.
//
// The file is tokenised and grouped by the Caddyfile package of Caddy
// (github.com/caddyserver/caddy/v2/caddyconfig/caddyfile), so imports,
// snippets and {$ENV} placeholders behave as they do in Caddy. What the
// directives mean is pollproxy's own: a global options block, then one site
// block per address set, each with one reverse_proxy and an optional tls.
// Every error names the file and line it comes from and what was expected,
// as in
//
//	Caddyfile:12: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, least_conn, first)
package config

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/field"
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
	HTTPPort    int
	Timeouts    Timeouts
	GracePeriod time.Duration
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
	Handshake  time.Duration // TLS handshake
}

// Log configures the access log.
type Log struct {
	Format string // "json" or "common"
	Output string // "stderr", "stdout" or a file name
}

// Site is one site block: the addresses it answers and where it proxies.
type Site struct {
	Pos   Pos
	Addrs []Address
	Proxy Proxy
	TLS   TLS
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

// Proxy is a site's reverse_proxy directive.
type Proxy struct {
	Pos                   Pos
	Upstreams             []string // host:port
	Policy                proxy.Policy
	HealthFails           int           // 0: the default; <0: never mark down
	HealthTimeout         time.Duration // how long an upstream marked down is skipped
	HeaderUp, HeaderDown  []proxy.HeaderOp
	KeepAlive             int           // idle connections kept per upstream per loop
	KeepAliveTimeout      time.Duration // idle connection lifetime
	MaxConns              int           // connections per upstream per loop
	DialTimeout           time.Duration
	ResponseHeaderTimeout time.Duration
	ReadTimeout           time.Duration
	Stream                StreamOptions      // stream_timeout, stream_close_delay
	ActiveHealth          proxy.ActiveHealth // health_uri, health_interval, … (health.go)
}

// ProxyConfig returns the reverse proxy's configuration for these
// resolved upstreams, defaults applied.
func (p Proxy) ProxyConfig(ups []*proxy.Upstream) proxy.Config {
	return proxy.Config{
		Upstreams: ups,
		Policy:    p.Policy,
		Pool: proxy.PoolConfig{
			MaxConns:    p.MaxConns,
			MaxIdle:     p.KeepAlive,
			IdleTimeout: p.KeepAliveTimeout,
		},
		Health:                proxy.Health{MaxFails: p.HealthFails, FailTimeout: p.HealthTimeout},
		ConnectTimeout:        p.DialTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		ReadTimeout:           p.ReadTimeout,
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
			p.errAt(tokPos(b.Keys[0]), "named routes are not supported")
			continue
		}
		p.site(b)
	}
	if len(p.errs) == 0 && len(p.cfg.Sites) == 0 {
		p.errAt(Pos{filename, 1}, "no site block (want e.g. \"localhost:8443 { reverse_proxy 127.0.0.1:8080 }\")")
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
	cfg  *Config
	errs Errors
}

func tokPos(t caddyfile.Token) Pos { return Pos{t.File, t.Line} }

func dpos(d *caddyfile.Dispenser) Pos { return Pos{d.File(), d.Line()} }

func (p *parser) errAt(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) errf(d *caddyfile.Dispenser, format string, args ...any) {
	p.errAt(dpos(d), format, args...)
}

// skipBlock consumes the block opened on the current line, if any, so
// that parsing resumes after an error inside it.
func skipBlock(d *caddyfile.Dispenser) {
	for n := d.Nesting(); d.NextBlock(n); {
	}
}

var globalOptions = []string{"poller", "loops", "admin", "email", "acme_ca", "storage",
	"default_bind", "http_port", "timeouts", "grace_period", "log", "h2_extended_connect",
	"ab_interval"}

func (p *parser) global(b caddyfile.ServerBlock) {
	c := p.cfg
	for _, seg := range b.Segments {
		d := caddyfile.NewDispenser(seg)
		d.Next()
		name := d.Val()
		switch name {
		case "poller":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "poller: want a backend (auto, %s) or several for an A/B split across loops", strings.Join(netpoll.Available(), ", "))
			}
			for _, a := range args {
				if err := netpoll.ValidName(a); err != nil {
					p.errf(d, "poller: unknown backend %q (want auto or one of %s)", a, strings.Join(netpoll.Available(), ", "))
				}
			}
			if len(args) > 1 {
				for _, a := range args {
					if a == netpoll.Auto {
						p.errf(d, "poller: an A/B split names its backends (auto is only allowed alone)")
						break
					}
				}
			}
			c.Pollers = args
		case "loops":
			c.Loops = p.intArg(d, name, 0)
		case "admin":
			if v, ok := p.oneArg(d, name, "host:port or off"); ok {
				if v == "off" {
					c.Admin = ""
				} else if _, _, err := net.SplitHostPort(v); err != nil {
					p.errf(d, "admin: %q: want host:port (e.g. 127.0.0.1:2019) or off", v)
				} else {
					c.Admin = v
				}
			}
		case "email":
			if v, ok := p.oneArg(d, name, "an e-mail address"); ok {
				if !strings.Contains(v, "@") {
					p.errf(d, "email: %q is not an e-mail address", v)
				}
				c.Email = v
			}
		case "acme_ca":
			if v, ok := p.oneArg(d, name, "an ACME directory URL"); ok {
				if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
					p.errf(d, "acme_ca: %q: want an ACME directory URL (https://...)", v)
				}
				c.ACMECA = v
			}
		case "storage":
			p.storage(d)
		case "default_bind":
			if v, ok := p.oneArg(d, name, "a host or IP address"); ok {
				c.DefaultBind = strings.Trim(v, "[]")
			}
		case "http_port":
			if v, ok := p.oneArg(d, name, "a port or off"); ok {
				if v == "off" {
					c.HTTPPort = 0
				} else if n, err := strconv.Atoi(v); err != nil || n <= 0 || n > 65535 {
					p.errf(d, "http_port: %q: want a port number (1-65535) or off", v)
				} else {
					c.HTTPPort = n
				}
			}
		case "grace_period":
			c.GracePeriod = p.durationArg(d, name)
		case "ab_interval":
			c.ABInterval = p.abInterval(d)
		case "timeouts":
			p.timeouts(d)
		case "log":
			p.log(d)
		case "h2_extended_connect":
			p.extendedConnect(d)
		default:
			p.errf(d, "unknown global option %q (want one of %s)", name, strings.Join(globalOptions, ", "))
			skipBlock(d)
		}
	}
}

func (p *parser) timeouts(d *caddyfile.Dispenser) {
	if d.CountRemainingArgs() > 0 {
		p.errf(d, "timeouts: want a block: timeouts { read_header 10s  idle 60s  handshake 10s }")
		d.RemainingArgs()
	}
	t := &p.cfg.Timeouts
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		switch sub {
		case "read_header":
			t.ReadHeader = p.durationArg(d, "timeouts: "+sub)
		case "idle":
			t.Idle = p.durationArg(d, "timeouts: "+sub)
		case "handshake":
			t.Handshake = p.durationArg(d, "timeouts: "+sub)
		default:
			p.errf(d, "timeouts: unknown timeout %q (want read_header, idle, handshake)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

func (p *parser) log(d *caddyfile.Dispenser) {
	l := &Log{Format: "json", Output: "stderr"}
	p.cfg.Log = l
	if d.CountRemainingArgs() > 0 {
		p.errf(d, "log: want no argument, or a block: log { format json|common  output stderr|stdout|FILE }")
		d.RemainingArgs()
	}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		switch sub {
		case "format":
			if v, ok := p.oneArg(d, "log: format", "json or common"); ok {
				if v != "json" && v != "common" {
					p.errf(d, "log: format: unknown format %q (want json, common)", v)
				}
				l.Format = v
			}
		case "output":
			if v, ok := p.oneArg(d, "log: output", "stderr, stdout or a file name"); ok {
				l.Output = v
			}
		default:
			p.errf(d, "log: unknown option %q (want format, output)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

var siteDirectives = []string{"reverse_proxy", "tls"}

func (p *parser) site(b caddyfile.ServerBlock) {
	s := &Site{Pos: tokPos(b.Keys[0])}
	for _, k := range b.Keys {
		a, err := parseAddress(k.Text)
		if err != nil {
			p.errAt(tokPos(k), "site address %q: %v", k.Text, err)
			continue
		}
		s.Addrs = append(s.Addrs, a)
	}
	seenProxy, seenTLS := false, false
	for _, seg := range b.Segments {
		d := caddyfile.NewDispenser(seg)
		d.Next()
		switch name := d.Val(); name {
		case "reverse_proxy":
			if seenProxy {
				p.errf(d, "reverse_proxy: a site has one reverse_proxy (the first is at %s)", s.Proxy.Pos)
				skipBlock(d)
				continue
			}
			seenProxy = true
			s.Proxy = p.reverseProxy(d)
		case "tls":
			if seenTLS {
				p.errf(d, "tls: a site has one tls directive (the first is at %s)", s.TLS.Pos)
				continue
			}
			seenTLS = true
			s.TLS = p.tls(d)
		default:
			p.errf(d, "unknown directive %q (want one of %s)", name, strings.Join(siteDirectives, ", "))
			skipBlock(d)
		}
	}
	if !seenProxy {
		p.errAt(s.Pos, "site %s: no reverse_proxy (want: reverse_proxy UPSTREAM...)", strings.Join(b.GetKeysText(), ", "))
	}
	p.cfg.Sites = append(p.cfg.Sites, s)
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
		return a, fmt.Errorf("plain HTTP sites are not supported: pollproxy serves HTTPS (drop %q)", "http://")
	case strings.Contains(rest, "://"):
		return a, fmt.Errorf("unsupported scheme (want https:// or none)")
	}
	if strings.ContainsAny(rest, "/?#") {
		return a, fmt.Errorf("paths are not supported in site addresses (want host, host:port or :port)")
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

var proxyOptions = append([]string{"to", "lb_policy", "header_up", "header_down",
	"keepalive", "keepalive_timeout", "max_conns", "dial_timeout", "response_header_timeout", "read_timeout",
	"stream_timeout", "stream_close_delay"},
	activeHealthOptions...)

func (p *parser) reverseProxy(d *caddyfile.Dispenser) Proxy {
	rp := Proxy{Pos: dpos(d)}
	p.upstreams(d, &rp)
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "reverse_proxy: " + sub
		switch sub {
		case "to":
			if d.CountRemainingArgs() == 0 {
				p.errf(d, "%s: want one or more upstreams (host:port)", label)
			}
			p.upstreams(d, &rp)
		case "lb_policy":
			if v, ok := p.oneArg(d, label, "round_robin, least_conn or first"); ok {
				if !proxy.ValidPolicy(proxy.Policy(v)) {
					p.errf(d, "%s: unknown policy %q (want round_robin, least_conn, first)", label, v)
				}
				rp.Policy = proxy.Policy(v)
			}
		case "health_uri", "health_port", "health_interval", "health_timeout", "health_status",
			"health_body", "health_headers", "health_passes", "health_fails":
			p.activeHealth(d, &rp, sub)
		case "header_up":
			if op, ok := p.headerOp(d, label); ok {
				rp.HeaderUp = append(rp.HeaderUp, op)
			}
		case "header_down":
			if op, ok := p.headerOp(d, label); ok {
				rp.HeaderDown = append(rp.HeaderDown, op)
			}
		case "keepalive":
			rp.KeepAlive = p.intArg(d, label, 1)
		case "keepalive_timeout":
			rp.KeepAliveTimeout = p.durationArg(d, label)
		case "max_conns":
			rp.MaxConns = p.intArg(d, label, 1)
		case "dial_timeout":
			rp.DialTimeout = p.durationArg(d, label)
		case "response_header_timeout":
			rp.ResponseHeaderTimeout = p.durationArg(d, label)
		case "read_timeout":
			rp.ReadTimeout = p.durationArg(d, label)
		case "stream_timeout", "stream_close_delay":
			p.streamOption(d, &rp)
		default:
			p.errf(d, "reverse_proxy: unknown option %q (want one of %s)", sub, strings.Join(proxyOptions, ", "))
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if len(rp.Upstreams) == 0 {
		p.errAt(rp.Pos, "reverse_proxy: no upstream (want: reverse_proxy host:port [host:port...])")
	}
	return rp
}

// upstreams reads the remaining arguments on the line as upstreams.
func (p *parser) upstreams(d *caddyfile.Dispenser, rp *Proxy) {
	for d.NextArg() {
		v := d.Val()
		switch {
		case strings.HasPrefix(v, "unix/"):
			if _, ok := proxy.UnixSocketPath(v); !ok {
				p.errf(d, "reverse_proxy: upstream %q: want unix//path/to/socket", v)
			} else {
				rp.Upstreams = append(rp.Upstreams, v)
			}
			continue
		case strings.HasPrefix(v, "/") || strings.HasPrefix(v, "@") || v == "*":
			p.errf(d, "reverse_proxy: request matchers (%q) are not supported: a site proxies every request", v)
			continue
		case strings.HasPrefix(v, "https://"), strings.HasPrefix(v, "h2c://"):
			p.errf(d, "reverse_proxy: upstream %q: upstreams speak plain HTTP/1.1 (want host:port or http://host:port)", v)
			continue
		}
		hp := strings.TrimPrefix(v, "http://")
		hp = strings.TrimSuffix(hp, "/")
		if strings.ContainsAny(hp, "/?#") {
			p.errf(d, "reverse_proxy: upstream %q: paths are not supported (want host:port)", v)
			continue
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			if strings.Contains(hp, ":") && !strings.HasPrefix(hp, "[") {
				p.errf(d, "reverse_proxy: upstream %q: want host:port", v)
				continue
			}
			host, port = strings.Trim(hp, "[]"), "80"
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
			p.errf(d, "reverse_proxy: upstream %q: want host:port with a port in 1-65535", v)
			continue
		}
		rp.Upstreams = append(rp.Upstreams, net.JoinHostPort(host, port))
	}
}

// headerOp reads "[+|-]Name [value]".
func (p *parser) headerOp(d *caddyfile.Dispenser, label string) (proxy.HeaderOp, bool) {
	args := d.RemainingArgs()
	if len(args) == 0 || len(args) > 2 {
		p.errf(d, "%s: want Name value (set), +Name value (add) or -Name (delete)", label)
		return proxy.HeaderOp{}, false
	}
	op := proxy.HeaderOp{Op: '=', Name: args[0]}
	switch args[0][0] {
	case '+', '-':
		op.Op, op.Name = args[0][0], args[0][1:]
	}
	if !field.ValidName(op.Name) {
		p.errf(d, "%s: %q is not a valid field name", label, op.Name)
		return op, false
	}
	switch {
	case op.Op == '-' && len(args) == 2:
		p.errf(d, "%s: -%s deletes the field and takes no value", label, op.Name)
		return op, false
	case op.Op != '-' && len(args) != 2:
		p.errf(d, "%s: %s needs a value (or -%s to delete it)", label, args[0], op.Name)
		return op, false
	}
	if len(args) == 2 {
		if strings.ContainsAny(args[1], "\r\n\x00") {
			p.errf(d, "%s: the value of %s has a CR, LF or NUL", label, op.Name)
			return op, false
		}
		op.Value = args[1]
	}
	return op, true
}

func (p *parser) tls(d *caddyfile.Dispenser) TLS {
	t := TLS{Pos: dpos(d)}
	args := d.RemainingArgs()
	switch {
	case len(args) == 1 && args[0] == "internal":
		t.Mode = TLSInternal
	case len(args) == 1 && strings.Contains(args[0], "@"):
		t.Mode, t.Email = TLSACME, args[0]
	case len(args) == 2:
		t.Mode, t.Cert, t.Key = TLSFiles, args[0], args[1]
	default:
		p.errf(d, "tls: want internal, CERT_FILE KEY_FILE, or an ACME account e-mail")
	}
	if d.NextBlock(d.Nesting()) {
		p.errf(d, "tls: takes no block")
		skipBlock(d)
	}
	return t
}

// oneArg reads exactly one argument.
func (p *parser) oneArg(d *caddyfile.Dispenser, label, want string) (string, bool) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "%s: want one argument: %s", label, want)
		skipBlock(d)
		return "", false
	}
	if d.NextBlock(d.Nesting()) {
		p.errf(d, "%s: takes no block", label)
		skipBlock(d)
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
