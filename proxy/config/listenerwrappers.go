package config

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/server"
)

// DefaultProxyProtocolTimeout is how long a PROXY header may take when
// proxy_protocol sets no timeout (Caddy's documented 5s).
const DefaultProxyProtocolTimeout = 5 * time.Second

// listenerWrappers reads servers { listener_wrappers { ... } }: Caddy's
// wrappers in order, of which pollproxy has proxy_protocol and
// http_redirect (which must come before tls, as in Caddy) and tls (the
// TLS every site listener already has).
func (p *parser) listenerWrappers(d *caddyfile.Dispenser) {
	const label = "servers: listener_wrappers"
	sawTLS := false
	for n := d.Nesting(); d.NextBlock(n); {
		switch w := d.Val(); w {
		case "tls":
			sawTLS = true
		case "http_redirect":
			// Caddy's http_redirect reads the first bytes the TLS would
			// take, so it must come before tls.
			if sawTLS {
				p.errf(d, "%s: http_redirect must come before tls: it reads what the client sends before TLS does", label)
			}
			p.noArgs(d, label+": http_redirect")
			p.srv.HTTPRedirect = true
		case "proxy_protocol":
			if sawTLS {
				p.errf(d, "%s: proxy_protocol must come before tls: the header precedes the TLS handshake", label)
			}
			if p.srv.ProxyProtocol != nil {
				p.errf(d, "%s: proxy_protocol given twice", label)
			}
			p.srv.ProxyProtocol = p.proxyProtocol(d)
		default:
			p.errf(d, "%s: the %s wrapper is not supported by pollproxy (it has proxy_protocol, http_redirect and tls)", label, w)
			skipBlock(d)
		}
	}
}

// proxyProtocol reads proxy_protocol's block: timeout, allow, deny and
// fallback_policy, with Caddy's meanings.
func (p *parser) proxyProtocol(d *caddyfile.Dispenser) *server.ProxyProtocol {
	const label = "listener_wrappers: proxy_protocol"
	pp := &server.ProxyProtocol{Timeout: DefaultProxyProtocolTimeout}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "%s: want a block, not %q", label, args[0])
	}
	for n := d.Nesting(); d.NextBlock(n); {
		switch sub := d.Val(); sub {
		case "timeout":
			// As in Caddy, 0 turns the header's own timeout off (the
			// handshake timeout still bounds the connection).
			if v, ok := p.oneArg(d, label+" timeout", "a duration such as 5s, or 0"); ok {
				dur, err := time.ParseDuration(v)
				if err != nil || dur < 0 {
					p.errf(d, "%s timeout: %q: want a duration such as 5s, or 0", label, v)
				}
				pp.Timeout = dur
			}
		case "allow", "deny":
			ranges, err := route.ParseRanges(d.RemainingArgs())
			if err != nil || len(ranges) == 0 {
				p.errf(d, "%s %s: want one or more IP ranges such as 10.0.0.0/8 (%v)", label, sub, err)
			}
			if sub == "allow" {
				pp.Allow = append(pp.Allow, ranges...)
			} else {
				pp.Deny = append(pp.Deny, ranges...)
			}
		case "fallback_policy":
			if v, ok := p.oneArg(d, label+" fallback_policy", "ignore, use, reject, require or skip"); ok {
				pol, err := server.ParseProxyPolicy(v)
				if err != nil {
					p.errf(d, "%s fallback_policy: %v", label, err)
				}
				pp.Fallback = pol
			}
		default:
			p.errf(d, "%s: unknown option %q (want timeout, allow, deny, fallback_policy)", label, sub)
		}
	}
	return pp
}
