package config

import (
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// activeHealthOptions are reverse_proxy's active health subdirectives,
// with Caddy's meanings.
var activeHealthOptions = []string{"health_uri", "health_port", "health_upstream", "health_interval", "health_timeout",
	"health_status", "health_body", "health_headers", "health_passes", "health_fails"}

// activeHealth reads one active health subdirective (named sub) into rp.
func (p *parser) activeHealth(d *caddyfile.Dispenser, rp *Proxy, sub string) {
	a := &rp.ActiveHealth
	label := "reverse_proxy: " + sub
	switch sub {
	case "health_uri":
		if v, ok := p.oneArg(d, label, "a path such as /healthz"); ok {
			if v == "" || v[0] != '/' {
				p.errf(d, "%s: %q: want a path starting with /", label, v)
			}
			a.URI = v
		}
	case "health_port":
		if a.Upstream != "" {
			p.errf(d, "%s: health_port and health_upstream go one or the other, as in Caddy", label)
		}
		a.Port = p.intArg(d, label, 1)
		if a.Port > 65535 {
			p.errf(d, "%s: %d: want a port in 1-65535", label, a.Port)
		}
	case "health_upstream":
		if v, ok := p.oneArg(d, label, "host:port"); ok {
			if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
				p.errf(d, "%s: %q: want host:port", label, v)
			}
			if a.Port != 0 {
				p.errf(d, "%s: health_port and health_upstream go one or the other, as in Caddy", label)
			}
			a.Upstream = v
		}
	case "health_interval":
		a.Interval = p.durationArg(d, label)
	case "health_timeout":
		a.Timeout = p.durationArg(d, label)
	case "health_status":
		if v, ok := p.oneArg(d, label, "a status such as 200 or 2xx"); ok {
			if _, ok := upstream.ParseStatus(v); !ok {
				p.errf(d, "%s: %q: want a status such as 200 or 2xx", label, v)
			}
			a.Status = v
		}
	case "health_body":
		if v, ok := p.oneArg(d, label, "a regular expression"); ok {
			re, err := regexp.Compile(v)
			if err != nil {
				p.errf(d, "%s: %q: %v", label, v, err)
			}
			a.Body = re
		}
	case "health_headers":
		d.RemainingArgs()
		if a.Headers == nil {
			a.Headers = http.Header{}
		}
		for n := d.Nesting(); d.NextBlock(n); {
			name := d.Val()
			vals := d.RemainingArgs()
			if len(vals) == 0 {
				vals = []string{""}
			}
			for _, v := range vals {
				if rest := strings.ReplaceAll(v, upstream.TargetUpstream, ""); strings.Contains(rest, "{") {
					p.errf(d, "%s: %q: placeholders other than %s are not supported by pollproxy here", label, v, upstream.TargetUpstream)
				}
				a.Headers.Add(name, v)
			}
		}
	case "health_passes":
		a.Passes = p.intArg(d, label, 1)
	case "health_fails":
		a.Fails = p.intArg(d, label, 1)
	}
}
