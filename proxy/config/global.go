package config

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/route"
)

var globalOptions = []string{"poller", "loops", "admin", "email", "acme_ca", "storage",
	"default_bind", "http_port", "https_port", "auto_https", "servers", "grace_period", "log", "order", "h2_extended_connect",
	"ab_interval", "ab_rotate", "metrics", "local_certs", "skip_install_trust", "pki", "key_type", "cert_lifetime",
	"ocsp_stapling", "ocsp_interval", "renew_interval", "renewal_window_ratio", "storage_clean_interval",
	"acme_ca_root", "acme_eab", "preferred_chains", "cert_issuer", "default_sni", "fallback_sni", "on_demand_tls",
	"persist_config", "debug", "shutdown_delay"}

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
				if err := netpoll.ValidName(a); errors.Is(err, netpoll.ErrUnavailable) {
					p.errf(d, "poller: %v", err) // built in but refused here: say why
				} else if err != nil {
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
			p.admin(d)
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
		case "https_port":
			if v, ok := p.oneArg(d, name, "a port"); ok {
				if n, err := strconv.Atoi(v); err != nil || n <= 0 || n > 65535 {
					p.errf(d, "https_port: %q: want a port number (1-65535)", v)
				} else {
					c.HTTPSPort = n
				}
			}
		case "auto_https":
			if v, ok := p.oneArg(d, name, "off, disable_redirects, disable_certs or ignore_loaded_certs"); ok {
				switch v {
				case "off":
					c.AutoHTTPS.NoRedirects, c.AutoHTTPS.NoCerts = true, true
				case "disable_redirects":
					c.AutoHTTPS.NoRedirects = true
				case "disable_certs":
					c.AutoHTTPS.NoCerts = true
				case "ignore_loaded_certs":
					c.AutoHTTPS.IgnoreLoadedCerts = true
				case "prefer_wildcard":
					p.errf(d, "auto_https prefer_wildcard is not supported by pollproxy")
				default:
					p.errf(d, "auto_https: %q: want off, disable_redirects, disable_certs or ignore_loaded_certs", v)
				}
			}
		case "grace_period":
			c.GracePeriod = p.durationArg(d, name)
		case "servers":
			p.servers(d)
		case "timeouts":
			p.errf(d, "timeouts is not a global option: as in Caddy, write servers { timeouts { read_header 10s  idle 60s } }")
			skipBlock(d)
		case "log":
			p.globalLog(d)
		case "order":
			p.orderOption(d)
		case "h2_extended_connect":
			p.extendedConnect(d)
		case "ab_interval":
			c.ABInterval = p.abInterval(d)
		case "ab_rotate":
			c.ABRotate = p.abRotate(d)
		case "metrics", "servers_metrics":
			p.metrics(d, name)
		default:
			if p.tlsGlobal(d, name) {
				break
			}
			if unsupportedGlobal[name] {
				p.errf(d, "%s is not supported by pollproxy", name)
			} else {
				p.errf(d, "unknown global option %q (want one of %s)", name, strings.Join(globalOptions, ", "))
			}
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

// admin is Caddy's admin global option: admin [off|HOST:PORT|unix//PATH]
// { origins ORIGINS...  enforce_origin }.
func (p *parser) admin(d *caddyfile.Dispenser) {
	c := p.cfg
	args := d.RemainingArgs()
	switch {
	case len(args) > 1:
		p.errf(d, "admin: want one argument: host:port or off")
	case len(args) == 1 && args[0] == "off":
		c.Admin = ""
		if at, ok := openedBlock(d); ok {
			p.errAt(at, "admin off: takes no block")
		}
		return
	case len(args) == 1:
		if _, err := ParseAdminAddress(args[0]); err != nil {
			p.errf(d, "admin: %v", err)
		} else {
			c.Admin = args[0]
		}
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch sub := d.Val(); sub {
		case "origins":
			origins := d.RemainingArgs()
			if len(origins) == 0 {
				p.errf(d, "admin: origins: want one or more origins (host:port or scheme://host:port)")
			}
			for _, o := range origins {
				if err := checkOrigin(o); err != nil {
					p.errf(d, "admin: origins: %q: %v", o, err)
				}
			}
			c.AdminOrigins = append(c.AdminOrigins, origins...)
		case "enforce_origin":
			if d.NextArg() {
				p.errf(d, "admin: enforce_origin takes no argument")
				d.RemainingArgs()
			}
			c.AdminEnforceOrigin = true
		default:
			p.errf(d, "admin: unknown option %q (want origins, enforce_origin)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

// checkOrigin accepts an admin origin as Caddy writes them: host,
// host:port or scheme://host[:port], nothing after the authority.
func checkOrigin(o string) error {
	host := o
	if i := strings.Index(o, "://"); i >= 0 {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return errors.New("want scheme://host[:port]")
		}
		host = u.Host
	}
	if host == "" || strings.ContainsAny(host, "/?#@ ") {
		return errors.New("want host:port or scheme://host:port")
	}
	return nil
}

// servers is Caddy's servers global option: without an address for every
// listener no other block names, with one (servers :443) for that
// listener alone and whole, as Caddy applies them. A block naming no
// listener applies to nothing, as in Caddy.
func (p *parser) servers(d *caddyfile.Dispenser) {
	c := &p.cfg.ServerOptions
	switch args := d.RemainingArgs(); len(args) {
	case 0:
	case 1:
		c = &ServerOptions{Addr: args[0], Pos: dpos(d)}
		p.cfg.Servers = append(p.cfg.Servers, c)
	default:
		p.errf(d, "servers: want at most one listener address, as :443 or 127.0.0.1:8443")
	}
	if p.seenServers == nil {
		p.seenServers = map[string]bool{}
	}
	if p.seenServers[c.Addr] {
		// As Caddy: the second block would silently win or lose.
		p.errf(d, "servers %s: a second servers block for the same listener", c.Addr)
	}
	p.seenServers[c.Addr] = true
	p.srv = c
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "servers: " + sub
		switch sub {
		case "timeouts":
			p.timeouts(d)
		case "trusted_proxies":
			args := d.RemainingArgs()
			if len(args) == 0 || args[0] != "static" {
				if len(args) > 0 {
					p.errf(d, "%s: the %s source is not supported by pollproxy (want static RANGES...)", label, args[0])
				} else {
					p.errf(d, "%s: want static followed by IP ranges or private_ranges", label)
				}
				skipBlock(d)
				continue
			}
			ranges, err := route.ParseRanges(args[1:])
			if err != nil {
				p.errf(d, "%s: %v", label, err)
			}
			if len(args) == 1 {
				p.errf(d, "%s: static needs IP ranges or private_ranges", label)
			}
			c.TrustedProxies = append(c.TrustedProxies, ranges...)
			if at, ok := openedBlock(d); ok {
				p.errAt(at, "%s: a block of ranges is not supported by pollproxy (list them on the line)", label)
			}
		case "client_ip_headers":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "%s: want one or more field names", label)
			}
			c.ClientIPHeaders = append(c.ClientIPHeaders, args...)
		case "max_header_size":
			if v, ok := p.oneArg(d, label, "a size such as 16KB"); ok {
				n, err := parseSize(v)
				if err != nil || n <= 0 {
					p.errf(d, "%s: %q: want a size such as 16KB or 1MiB", label, v)
				}
				c.MaxHeaderSize = n
			}
		case "listener_wrappers":
			p.listenerWrappers(d)
		case "metrics":
			p.metrics(d, "servers_metrics")
		case "protocols":
			p.protocols(d)
		case "name":
			if v, ok := p.oneArg(d, label, "a name for the server"); ok {
				if c.Addr == "" {
					// As Caddy: only a servers block for one listener names it.
					p.errf(d, "%s: cannot set a name for a server without a listener address (write servers :443 { name NAME })", label)
				}
				c.Name = v
			}
		case "strict_sni_host":
			on := true
			if args := d.RemainingArgs(); len(args) > 1 || len(args) == 1 && args[0] != "on" && args[0] != "insecure_off" {
				p.errf(d, "%s only supports 'on' or 'insecure_off', got '%s'", label, strings.Join(args, " "))
			} else if len(args) == 1 {
				on = args[0] == "on"
			}
			c.StrictSNIHost, c.StrictSNIHostSet = on, true
		case "keepalive_interval", "keepalive_idle":
			if v, ok := p.oneArg(d, label, "a duration such as 15s, or a negative one"); ok {
				dur, err := time.ParseDuration(v)
				if err != nil {
					p.errf(d, "%s: %q: want a duration such as 15s", label, v)
				}
				if sub == "keepalive_interval" {
					c.KeepAlive.Interval = dur
				} else {
					c.KeepAlive.Idle = dur
				}
			}
		case "keepalive_count":
			if v, ok := p.oneArg(d, label, "a number of probes"); ok {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					p.errf(d, "%s: %q: want a whole number", label, v)
				}
				c.KeepAlive.Count = int(n)
			}
		case "trusted_proxies_strict":
			p.noArgs(d, label)
			c.TrustedProxiesStrict = true
		case "trusted_proxies_unix":
			// It trusts what comes over a unix socket listener, which no
			// pollproxy site has: accepted, as it is in Caddy for TCP
			// listeners, where it changes nothing either.
			p.noArgs(d, label)
			c.TrustedProxiesUnix = true
		case "enable_full_duplex":
			// pollproxy's HTTP/1.1 front end always is: a response may
			// stream while the request body still arrives.
			p.noArgs(d, label)
		case "trace":
			p.errf(d, "%s is not supported by pollproxy: it logs each handler a request runs through at DEBUG level, and pollproxy's loggers carry access logs only", label)
			d.RemainingArgs()
		case "0rtt", "listen_protocols", "packet_conn_wrappers":
			p.errf(d, "%s is not supported by pollproxy: it configures HTTP/3 (QUIC), which pollproxy does not serve", label)
			d.RemainingArgs()
			skipBlock(d)
		case "log_credentials":
			p.noArgs(d, label)
			if c.Addr != "" {
				// The access logs are the sites', whatever their listener.
				p.errf(d, "servers %s: log_credentials for one listener is not supported by pollproxy (write it in servers { })", c.Addr)
			}
			p.cfg.LogCredentials = true
		default:
			p.notOurs(d, "servers: ", sub, unsupportedServers, "name, timeouts, trusted_proxies, trusted_proxies_strict, trusted_proxies_unix, client_ip_headers, max_header_size, "+
				"listener_wrappers, protocols, strict_sni_host, keepalive_interval, keepalive_idle, keepalive_count, enable_full_duplex, metrics, log_credentials")
		}
	}
}

// parseSize reads a byte size as Caddy writes them: 4096, 16KB, 1MiB.
func parseSize(v string) (int, error) {
	units := []struct {
		suffix string
		mult   int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000}, {"k", 1000}, {"m", 1000 * 1000}, {"b", 1}}
	s := strings.ToLower(strings.TrimSpace(v))
	mult := 1
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int(n * float64(mult)), nil
}

func (p *parser) timeouts(d *caddyfile.Dispenser) {
	if d.CountRemainingArgs() > 0 {
		p.errf(d, "timeouts: want a block: timeouts { read_body 10s  read_header 10s  write 30s  idle 5m }")
		d.RemainingArgs()
	}
	t := &p.srv.Timeouts
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		switch sub {
		case "read_body":
			p.srv.ReadBodyTimeout = p.durationArg(d, "timeouts: "+sub)
		case "read_header":
			t.ReadHeader = p.durationArg(d, "timeouts: "+sub)
		case "write":
			t.Write = p.durationArg(d, "timeouts: "+sub)
		case "idle":
			t.Idle = p.durationArg(d, "timeouts: "+sub)
		case "handshake":
			t.Handshake = p.durationArg(d, "timeouts: "+sub)
		default:
			p.errf(d, "timeouts: unknown timeout %q (want read_body, read_header, write, idle, or pollproxy's handshake)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

// metrics reads Caddy's metrics global option (and servers { metrics }):
// what it turns on, pollproxy always has — Prometheus metrics on the
// admin listener's /metrics. per_host counts requests by host too
// (pollproxy_host_requests_total).
func (p *parser) metrics(d *caddyfile.Dispenser, name string) {
	label := "metrics"
	if name == "servers_metrics" {
		label = "servers: metrics"
	}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "%s: want no argument, or a block", label)
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch sub := d.Val(); sub {
		case "per_host":
			p.noArgs(d, label+": per_host")
			p.cfg.MetricsPerHost = true
		case "observe_catchall_hosts":
			p.noArgs(d, label+": "+sub)
			p.cfg.MetricsCatchAllHosts = true
		case "otlp":
			p.errf(d, "%s: %s is not supported by pollproxy", label, sub)
			d.RemainingArgs()
		default:
			p.errf(d, "%s: unknown option %q (want per_host, observe_catchall_hosts)", label, sub)
			d.RemainingArgs()
		}
	}
}

// protocols is servers { protocols ... }: h1 and h2 are what pollproxy
// serves anyway, h2c lets plain-HTTP listeners take HTTP/2 with prior
// knowledge. Leaving h1 or h2 out, and h3, are not supported.
func (p *parser) protocols(d *caddyfile.Dispenser) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		p.errf(d, "servers: protocols: want h1, h2, h2c")
	}
	has := map[string]bool{}
	for _, a := range args {
		switch a {
		case "h1", "h2", "h2c":
			has[a] = true
		case "h3":
			p.errf(d, "servers: protocols h3 (HTTP/3) is not supported by pollproxy")
		default:
			p.errf(d, "servers: protocols: unknown protocol %q (want h1, h2, h2c)", a)
		}
	}
	if len(args) > 0 && !has["h1"] {
		p.errf(d, "servers: protocols without h1 is not supported by pollproxy (it serves HTTP/1.1 everywhere)")
	}
	// Without h2 a plain-HTTP listener is what it always is (h1, and h2c
	// when named); an HTTPS one would have to refuse h2, which pollproxy
	// does not: checkProtocols refuses that once the listeners are known.
	p.srv.H2C = has["h2c"]
	p.srv.noH2 = len(args) > 0 && !has["h2"]
	p.srv.protocolsPos = dpos(d)
}

// checkProtocols refuses servers { protocols } without h2 for a listener
// that serves HTTPS.
func (p *parser) checkProtocols() {
	for _, l := range p.cfg.Listeners() {
		if so := p.cfg.ServerOptionsFor(l.Addr); so.noH2 && !l.Cleartext {
			p.errAt(so.protocolsPos, "servers: protocols without h2 on the HTTPS listener %s is not supported by pollproxy (it serves h2 with TLS)", l.Addr)
		}
	}
}
