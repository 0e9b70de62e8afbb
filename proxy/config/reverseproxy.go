package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

var proxyOptions = append([]string{"to", "lb_policy", "lb_retries", "lb_try_duration", "lb_try_interval",
	"max_fails", "fail_duration", "unhealthy_status", "unhealthy_latency", "header_up", "header_down", "method", "rewrite",
	"flush_interval", "transport", "stream_timeout", "stream_close_delay", "dynamic", "trusted_proxies", "handle_response", "replace_status", "@name (a response matcher)"}, activeHealthOptions...)

// reverseProxy reads one reverse_proxy directive (its matcher already
// taken off the line).
func (p *parser) reverseProxy(d *caddyfile.Dispenser) Proxy {
	rp := Proxy{Pos: dpos(d)}
	errs := len(p.errs)
	upConflict := false
	matchers := map[string]*route.ResponseMatch{}
	var uses []matcherUse
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
			p.lbPolicy(d, &rp, label)
		case "lb_retries":
			if rp.Retries = p.intArg(d, label, 0); rp.Retries == 0 {
				rp.Retries = -1 // an explicit 0: no retry at all
			}
		case "lb_try_duration":
			rp.TryDuration = p.durationArg(d, label)
		case "lb_try_interval":
			rp.TryInterval = p.durationArg(d, label)
		case "max_fails":
			rp.Health.MaxFails = p.intArg(d, label, 1)
		case "fail_duration":
			rp.Health.FailDuration = p.durationArg(d, label)
		case "unhealthy_status":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "%s: want status codes such as 500 or 5xx", label)
			}
			for _, a := range args {
				code, ok := upstream.ParseStatus(a)
				if !ok {
					p.errf(d, "%s: %q: want a status code (100-599) or a class such as 5xx", label, a)
				}
				rp.Health.UnhealthyStatus = append(rp.Health.UnhealthyStatus, code)
			}
		case "unhealthy_latency":
			rp.Health.UnhealthyLatency = p.durationArg(d, label)
		case "header_up", "header_down":
			args := d.RemainingArgs()
			if inertHeaderOp(args) {
				// Caddy takes "header_down @name Field value" as an
				// edit of a field named "@name" (its header_up and
				// header_down take no matcher): no response or request
				// carries such a field, and Go's server drops one set.
				if len(args) == 3 {
					if _, err := regexp.Compile(args[1]); err != nil {
						p.errf(d, "%s: regexp %q: %v", label, args[1], err)
					}
				}
				continue
			}
			op, err := route.ParseHeaderOp(args, true)
			if sub == "header_up" {
				op, err = route.ParseUpstreamHeaderOp(args)
			}
			if err == nil && op.Op == '?' {
				// Caddy refuses the default form here: header_down's
				// edits are not deferred response edits.
				err = fmt.Errorf("?%s: the default header modifier ('?') can only be used on response headers (the header directive), not in %s", op.Name, sub)
			}
			if err != nil {
				p.errf(d, "%s: %v", label, err)
				continue
			}
			if sub == "header_up" {
				rp.HeaderUp = append(rp.HeaderUp, op)
				if err := route.CheckUpstreamOps(rp.HeaderUp); err != nil && !upConflict {
					upConflict = true // said once, not again for every later line
					p.errf(d, "%s: %v", label, err)
				}
			} else {
				rp.HeaderDown = append(rp.HeaderDown, op)
			}
		case "method", "rewrite":
			v, ok := p.oneArg(d, label, "one value")
			if !ok {
				continue
			}
			t, err := route.ParseTemplate(v, route.TemplateOptions{ReplaceAll: true})
			if err != nil {
				p.errf(d, "%s: %v", label, err)
				continue
			}
			if sub == "method" {
				rp.Method = &t
			} else {
				rp.Rewrite = &t
			}
		case "flush_interval":
			if v, ok := p.oneArg(d, label, "a duration or -1"); ok && v != "-1" {
				if dur, err := time.ParseDuration(v); err != nil {
					p.errf(d, "%s: %q: want a duration such as 100ms, or -1", label, v)
				} else {
					rp.FlushInterval = dur
				}
			}
		case "dynamic":
			p.dynamic(d, &rp)
		case "trusted_proxies":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "%s: want IP ranges or private_ranges", label)
			}
			ranges, err := route.ParseRanges(args)
			if err != nil {
				p.errf(d, "%s: %v", label, err)
			}
			rp.TrustedProxies = append(rp.TrustedProxies, ranges...)
		case "transport":
			p.transport(d, &rp)
		case "health_uri", "health_port", "health_upstream", "health_interval", "health_timeout", "health_status",
			"health_body", "health_headers", "health_passes", "health_fails":
			p.activeHealth(d, &rp, sub)
		case "stream_timeout", "stream_close_delay":
			p.streamOption(d, &rp)
		case "keepalive", "keepalive_timeout", "max_conns", "dial_timeout", "response_header_timeout", "read_timeout":
			p.errf(d, "%s: as in Caddy, this belongs in transport http { ... }", label)
			d.RemainingArgs()
		case "handle_response", "replace_status":
			p.handleResponse(d, &rp.Responses, &uses, sub)
		default:
			if strings.HasPrefix(sub, "@") { // Caddy's response matchers, for handle_response
				m := &route.ResponseMatch{}
				p.responseMatch(d, m, "reverse_proxy "+sub)
				matchers[sub] = m
				continue
			}
			p.notOurs(d, "reverse_proxy: ", sub, unsupportedProxy, "one of "+strings.Join(proxyOptions, ", "))
		}
	}
	switch {
	case rp.scheme == "https" && rp.TLS == nil:
		rp.TLS = &UpstreamTLS{Pos: rp.Pos}
	case (rp.scheme == "http" || rp.scheme == "h2c") && rp.TLS != nil:
		p.errAt(rp.TLS.Pos, "reverse_proxy: upstream address scheme is HTTP but transport is configured for HTTP+TLS (HTTPS)")
	}
	if rp.FastCGI != nil {
		switch {
		case rp.ActiveHealth.Enabled():
			// Caddy's checks would go through the FastCGI transport;
			// pollproxy's speak HTTP, which php-fpm does not.
			p.errAt(rp.Pos, "reverse_proxy: active health checks with transport fastcgi are not supported by pollproxy")
		case rp.TLS != nil:
			p.errAt(rp.Pos, "reverse_proxy: transport fastcgi has no TLS (want upstreams without https://)")
		case rp.scheme == "h2c" || len(rp.Versions) > 0:
			p.errAt(rp.Pos, "reverse_proxy: transport fastcgi speaks FastCGI, not HTTP/2 (want upstreams without h2c://)")
		}
	}
	p.resolve(rp.Responses, uses, matchers, "reverse_proxy")
	if rp.Dynamic != nil && len(rp.Upstreams) > 1 {
		p.errAt(rp.Pos, "reverse_proxy: static upstreams beside dynamic (Caddy's fallback) are not supported by pollproxy")
	}
	if rp.Policy == proxy.WeightedRoundRobin && len(rp.Weights) > 0 && len(rp.Weights) < len(rp.Upstreams) {
		p.errAt(rp.PolicyPos, "reverse_proxy: lb_policy weighted_round_robin: %d weights for %d upstreams (want one per upstream, in order)", len(rp.Weights), len(rp.Upstreams))
	}
	if len(rp.Upstreams) == 0 && len(p.errs) == errs {
		p.errAt(rp.Pos, "reverse_proxy: no upstream (want: reverse_proxy host:port [host:port...])")
	}
	return rp
}

func (p *parser) lbPolicy(d *caddyfile.Dispenser, rp *Proxy, label string) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		p.errf(d, "%s: want a policy (%s)", label, proxy.PolicyNames)
		return
	}
	pol := proxy.Policy(args[0])
	rp.Policy, rp.PolicyPos = pol, dpos(d)
	switch {
	case pol == proxy.WeightedRoundRobin:
		if len(args) == 1 {
			p.errf(d, "%s: weighted_round_robin wants a weight per upstream", label)
		}
		for _, a := range args[1:] {
			w, err := strconv.Atoi(a)
			if err != nil || w < 0 {
				p.errf(d, "%s: weight %q: want a whole number >= 0", label, a)
			}
			rp.Weights = append(rp.Weights, w)
		}
	case !proxy.ValidPolicy(pol):
		p.errf(d, "%s: unknown policy %q (want %s)", label, args[0], proxy.PolicyNames)
	case pol == proxy.HeaderHash || pol == proxy.QueryHash:
		if len(args) != 2 {
			p.errf(d, "%s: %s wants one argument: the %s", label, pol, map[proxy.Policy]string{proxy.HeaderHash: "field name", proxy.QueryHash: "query key"}[pol])
		} else {
			rp.PolicyArg = args[1]
			if pol == proxy.HeaderHash && args[1] != "Host" {
				// Caddy hashes the request's host for "Host" written
				// so, and reads any other spelling as an ordinary field.
				rp.PolicyArg = strings.ToLower(args[1])
			}
		}
	case pol == proxy.Cookie:
		if len(args) > 3 {
			p.errf(d, "%s: cookie takes a name and a secret at most", label)
		}
		if len(args) > 1 {
			rp.PolicyArg = args[1]
		}
		if len(args) > 2 {
			rp.CookieSecret = args[2]
		}
	case pol == proxy.RandomChoose:
		if len(args) > 2 {
			p.errf(d, "%s: random_choose takes one number", label)
		} else if len(args) == 2 {
			if n, err := strconv.Atoi(args[1]); err != nil || n < 1 {
				p.errf(d, "%s: random_choose %q: want a whole number >= 1", label, args[1])
			}
			rp.PolicyArg = args[1]
		}
	default:
		if len(args) > 1 {
			p.errf(d, "%s: %s takes no argument", label, pol)
		}
	}
	for n := d.Nesting(); d.NextBlock(n); {
		if d.Val() == "max_age" && pol == proxy.Cookie {
			rp.CookieMaxAge = p.durationArg(d, label+": max_age")
			continue
		}
		if d.Val() != "fallback" {
			want := "fallback"
			if pol == proxy.Cookie {
				want = "fallback, max_age"
			}
			p.errf(d, "%s: unknown option %q in the policy block (want %s)", label, d.Val(), want)
			d.RemainingArgs()
			continue
		}
		switch pol {
		case proxy.HeaderHash, proxy.QueryHash, proxy.Cookie:
		default:
			p.errf(d, "%s: %s always picks; fallback is for header, query and cookie", label, pol)
		}
		args := d.RemainingArgs()
		if len(args) == 0 {
			p.errf(d, "%s: fallback wants a policy", label)
			continue
		}
		switch fb := proxy.Policy(args[0]); fb {
		case proxy.RoundRobin, proxy.LeastConnections, proxy.First, proxy.Random:
			if len(args) > 1 {
				p.errf(d, "%s: fallback %s takes no argument", label, fb)
			}
			rp.Fallback = fb
		case proxy.RandomChoose:
			if len(args) > 2 {
				p.errf(d, "%s: fallback random_choose takes one number", label)
			} else if len(args) == 2 {
				if n, err := strconv.Atoi(args[1]); err != nil || n < 1 {
					p.errf(d, "%s: fallback random_choose %q: want a whole number >= 1", label, args[1])
				} else {
					rp.FallbackChoose = n
				}
			}
			rp.Fallback = fb
		default:
			p.errf(d, "%s: fallback %s is not supported by pollproxy (want round_robin, least_conn, first, random or random_choose)", label, args[0])
		}
		if at, ok := openedBlock(d); ok {
			p.errAt(at, "%s: a fallback's own block is not supported by pollproxy", label)
		}
	}
}

var transportOptions = []string{"dial_timeout", "proxy_protocol", "response_header_timeout", "read_timeout", "write_timeout",
	"keepalive", "keepalive_idle_conns", "keepalive_idle_conns_per_host", "max_conns_per_host", "versions",
	"tls", "tls_server_name", "tls_insecure_skip_verify", "tls_trust_pool", "tls_trusted_ca_certs", "tls_client_auth",
	"tls_timeout", "tls_curves", "tls_renegotiation"}

func (p *parser) transport(d *caddyfile.Dispenser, rp *Proxy) {
	args := d.RemainingArgs()
	if len(args) == 1 && args[0] == "fastcgi" {
		p.transportFastCGI(d, rp)
		return
	}
	if len(args) != 1 || args[0] != "http" {
		if len(args) == 1 {
			p.errf(d, "reverse_proxy: transport %s is not supported by pollproxy (want transport http { ... } or fastcgi { ... })", args[0])
		} else {
			p.errf(d, "reverse_proxy: transport: want http and a block")
		}
		skipBlock(d)
		return
	}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "transport http: " + sub
		switch sub {
		case "dial_timeout":
			rp.DialTimeout = p.durationArg(d, label)
		case "response_header_timeout":
			rp.ResponseHeaderTimeout = p.durationArg(d, label)
		case "read_timeout":
			rp.ReadTimeout = p.durationArg(d, label)
		case "write_timeout":
			rp.WriteTimeout = p.durationArg(d, label)
		case "keepalive":
			if v, ok := p.oneArg(d, label, "a duration or off"); ok {
				if v == "off" {
					rp.KeepAliveOff = true
				} else if dur, err := time.ParseDuration(v); err != nil || dur <= 0 {
					p.errf(d, "%s: %q: want a duration such as 2m, or off", label, v)
				} else {
					rp.KeepAliveTimeout = dur
				}
			}
		case "keepalive_idle_conns", "keepalive_idle_conns_per_host":
			v := p.intArg(d, label, 1)
			if rp.KeepAlive == 0 || v < rp.KeepAlive {
				rp.KeepAlive = v
			}
		case "max_conns_per_host":
			rp.MaxConns = p.intArg(d, label, 1)
		case "proxy_protocol":
			if v, ok := p.oneArg(d, label, "v1 or v2"); ok {
				switch v {
				case "v1":
					rp.ProxyProtocol = 1
				case "v2":
					rp.ProxyProtocol = 2
				default:
					p.errf(d, "%s: %q: want v1 or v2", label, v)
				}
			}
		case "versions":
			// Caddy's meanings: "h2c" speaks HTTP/2 with prior knowledge
			// over cleartext, "2" lets TLS negotiate it.
			vs := d.RemainingArgs()
			if len(vs) == 0 {
				p.errf(d, "%s: want one or more of 1.1, 2, h2c", label)
			}
			for _, v := range vs {
				switch v {
				case "1.1", "2", "h2c":
				case "3":
					p.errf(d, "%s: HTTP/3 to upstreams is not supported by pollproxy", label)
				default:
					p.errf(d, "%s: unsupported HTTP version: %s, supported version: 1.1, 2, h2c, 3", label, v)
				}
			}
			rp.Versions = vs
		default:
			if p.transportTLS(d, rp, sub) {
				continue
			}
			p.notOurs(d, "transport http: ", sub, unsupportedTransport, "one of "+strings.Join(transportOptions, ", "))
		}
	}
}

// upstreams reads the remaining arguments on the line as upstreams
// (UpstreamAddresses).
func (p *parser) upstreams(d *caddyfile.Dispenser, rp *Proxy) {
	for d.NextArg() {
		addrs, scheme, err := UpstreamAddresses(d.Val())
		if err != nil {
			p.errf(d, "reverse_proxy: %v", err)
			continue
		}
		if scheme != "" {
			// As in Caddy: one transport, so one scheme for every upstream.
			if rp.scheme != "" && rp.scheme != scheme {
				p.errf(d, "reverse_proxy: for now, all proxy upstreams must use the same scheme (transport protocol); expecting '%s://' but got '%s://'", rp.scheme, scheme)
			}
			rp.scheme = scheme
		}
		rp.Upstreams = append(rp.Upstreams, addrs...)
	}
}

// UpstreamAddresses reads one upstream as Caddy's reverse_proxy takes it —
// host:port, :port (localhost, kept as Caddy spells it), host (port 80),
// http://host[:port], https://host[:port] (port 443, and TLS), a port
// range (host:8001-8003), unix//path — and returns the dial addresses it stands for and the
// scheme written ("http", "https" or ""). The Caddyfile and the
// reverse-proxy command's --to both read upstreams through it, so one
// address means one thing in either.
func UpstreamAddresses(v string) (addrs []string, scheme string, err error) {
	switch {
	case strings.HasPrefix(v, "https://"):
		scheme = "https"
	case strings.HasPrefix(v, "http://"):
		scheme = "http"
	case strings.HasPrefix(v, "h2c://"):
		scheme = "h2c"
	}
	addrs, err = upstreamAddresses(v, scheme)
	return addrs, scheme, err
}

func upstreamAddresses(v, scheme string) ([]string, error) {
	switch {
	case strings.HasPrefix(v, "wss://"):
		return nil, fmt.Errorf("upstream %q: the scheme wss:// is only supported in browsers; use https:// instead", v)
	case strings.HasPrefix(v, "ws://"):
		return nil, fmt.Errorf("upstream %q: the scheme ws:// is only supported in browsers; use http:// instead", v)
	case strings.HasPrefix(v, "unix/"):
		if _, ok := upstream.UnixSocketPath(v); !ok {
			return nil, fmt.Errorf("upstream %q: want unix//path/to/socket", v)
		}
		return []string{v}, nil
	case strings.Contains(v, "{"):
		return nil, fmt.Errorf("upstream %q: placeholders in upstreams are not supported by pollproxy", v)
	case strings.Contains(v, "://") && scheme == "":
		return nil, fmt.Errorf("upstream %q: scheme not supported by pollproxy (want http://, https://, h2c:// or none)", v)
	}
	hp := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(v, "http://"), "https://"), "h2c://")
	if strings.ContainsAny(strings.TrimSuffix(hp, "/"), "/?#") {
		return nil, fmt.Errorf("upstream %q: upstream addresses cannot have paths, as in Caddy (change the path with rewrite or uri)", v)
	}
	hp = strings.TrimSuffix(hp, "/")
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		if strings.Contains(hp, ":") && !strings.HasPrefix(hp, "[") {
			return nil, fmt.Errorf("upstream %q: want host:port", v)
		}
		host, port = strings.Trim(hp, "[]"), "80"
		if scheme == "https" {
			port = "443"
		}
	}
	if scheme == "https" && port == "80" {
		return nil, fmt.Errorf("upstream %q: upstream address has conflicting scheme (https://) and port (:80, the HTTP port)", v)
	}
	// No host (":8080") stays so: Caddy's dial address, which it hashes
	// and signs; the instance dials localhost (upstream.Upstream.Dial).
	lo, hi, ok := portRange(port)
	if !ok {
		return nil, fmt.Errorf("upstream %q: want host:port with a port in 1-65535", v)
	}
	addrs := make([]string, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(n)))
	}
	return addrs, nil
}

// portRange reads "8080" or "8001-8006".
func portRange(s string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || lo <= 0 || hi > 65535 || hi < lo || hi-lo > 1024 {
		return 0, 0, false
	}
	return lo, hi, true
}

// inertHeaderOp reports a header_up or header_down edit of a name no
// field can have (not an HTTP token, as "@name"), which Caddy accepts
// and which changes nothing.
func inertHeaderOp(args []string) bool {
	if len(args) == 0 || len(args) > 3 {
		return false
	}
	name := args[0]
	if len(args) == 3 {
		name = strings.TrimLeft(name, "+-?>")
	} else if name != "" && name[0] == '?' {
		return false // refused as Caddy refuses it, below
	} else if name != "" && strings.ContainsRune("+->", rune(name[0])) {
		name = name[1:]
	}
	if strings.Trim(name, "*") == "" {
		return false
	}
	return !field.ValidName(strings.ToLower(strings.Trim(name, "*")))
}
