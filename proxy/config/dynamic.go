package config

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// DynamicA is Caddy's "dynamic a": one upstream, Name:Port, whose A and
// AAAA records are looked up again every Refresh (a minute when 0), from
// Resolvers when given (else the system's), keeping Network ("ip", "ip4"
// or "ip6", from versions ipv4|ipv6).
type DynamicA struct {
	Name, Port  string
	Refresh     time.Duration
	Resolvers   []string
	DialTimeout time.Duration
	Network     string
}

// Upstream is the upstream's name, host:port.
func (d DynamicA) Upstream() string { return net.JoinHostPort(d.Name, d.Port) }

var dynamicAOptions = "name, port, refresh, resolvers, dial_timeout, versions"

// dynamic reads "dynamic a [NAME PORT] { ... }"; the other modules are
// not supported.
func (p *parser) dynamic(d *caddyfile.Dispenser, rp *Proxy) {
	if !d.NextArg() {
		p.errf(d, "reverse_proxy: dynamic: want a module, e.g. dynamic a example.com 9000")
		skipBlock(d)
		return
	}
	if mod := d.Val(); mod != "a" {
		p.errf(d, "reverse_proxy: dynamic %s is not supported by pollproxy", mod)
		d.RemainingArgs()
		skipBlock(d)
		return
	}
	if rp.Dynamic != nil {
		p.errf(d, "reverse_proxy: dynamic: a reverse_proxy has one dynamic source")
		d.RemainingArgs()
		skipBlock(d)
		return
	}
	da := &DynamicA{Network: "ip"}
	switch args := d.RemainingArgs(); len(args) {
	case 0:
	case 2:
		da.Name, da.Port = args[0], args[1]
	default:
		p.errf(d, "reverse_proxy: dynamic a: want NAME PORT, or both in the block")
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		sub := d.Val()
		label := "reverse_proxy: dynamic a: " + sub
		switch sub {
		case "name":
			da.Name, _ = p.oneArg(d, label, "a host name")
		case "port":
			da.Port, _ = p.oneArg(d, label, "a port")
		case "refresh":
			da.Refresh = p.durationArg(d, label)
		case "dial_timeout":
			da.DialTimeout = p.durationArg(d, label)
		case "resolvers":
			da.Resolvers = d.RemainingArgs()
			if len(da.Resolvers) == 0 {
				p.errf(d, "%s: want one or more DNS server addresses", label)
			}
			for _, r := range da.Resolvers {
				if !validResolver(r) {
					p.errf(d, "%s: %q: want an IP address, optionally with a port", label, r)
				}
			}
		case "versions":
			v4, v6 := false, false
			for _, v := range d.RemainingArgs() {
				switch v {
				case "ipv4":
					v4 = true
				case "ipv6":
					v6 = true
				default:
					p.errf(d, "%s: %q: want ipv4 and/or ipv6", label, v)
				}
			}
			switch {
			case v4 && !v6:
				da.Network = "ip4"
			case v6 && !v4:
				da.Network = "ip6"
			}
		case "dial_fallback_delay":
			p.errf(d, "%s is not supported by pollproxy", label)
			d.RemainingArgs()
		default:
			p.errf(d, "reverse_proxy: dynamic a: unknown option %q (want %s)", sub, dynamicAOptions)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	switch {
	case da.Name == "" || strings.ContainsAny(da.Name, "{}/:"):
		p.errf(d, "reverse_proxy: dynamic a: want a host name (dynamic a NAME PORT)")
		return
	default:
		if n, err := strconv.Atoi(da.Port); err != nil || n < 1 || n > 65535 {
			p.errf(d, "reverse_proxy: dynamic a: port %q: want 1-65535", da.Port)
			return
		}
	}
	rp.Dynamic = da
	rp.Upstreams = append(rp.Upstreams, da.Upstream())
}

func validResolver(s string) bool {
	if _, _, err := net.SplitHostPort(s); err == nil {
		h, _, _ := net.SplitHostPort(s)
		return net.ParseIP(h) != nil
	}
	return net.ParseIP(s) != nil
}
