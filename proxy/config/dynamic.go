package config

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Dynamic is Caddy's "dynamic a" or "dynamic srv" (Module): one upstream
// whose records are looked up again every Refresh (a minute when 0), from
// Resolvers when given (else the system's). For a, the A and AAAA records
// of Name, keeping Network ("ip", "ip4" or "ip6", from versions
// ipv4|ipv6), with Port; for srv, the SRV records of Name
// (_service._proto.name when Service and Proto are given), each target's
// addresses with its port.
type Dynamic struct {
	Module         string
	Name, Port     string
	Service, Proto string
	Refresh        time.Duration
	Resolvers      []string
	DialTimeout    time.Duration
	Network        string
}

// Upstream is the upstream's name: host:port for a, the full SRV name for
// srv.
func (d Dynamic) Upstream() string {
	if d.Module == "srv" {
		if d.Service != "" || d.Proto != "" {
			return "_" + d.Service + "._" + d.Proto + "." + d.Name
		}
		return d.Name
	}
	return net.JoinHostPort(d.Name, d.Port)
}

var (
	dynamicAOptions   = "name, port, refresh, resolvers, dial_timeout, versions"
	dynamicSRVOptions = "service, proto, name, refresh, resolvers, dial_timeout"
)

// dynamic reads "dynamic a [NAME PORT] { ... }" and "dynamic srv
// [FULL_NAME] { ... }"; the other modules are not supported.
func (p *parser) dynamic(d *caddyfile.Dispenser, rp *Proxy) {
	if !d.NextArg() {
		p.errf(d, "reverse_proxy: dynamic: want a module, e.g. dynamic a example.com 9000")
		skipBlock(d)
		return
	}
	mod := d.Val()
	if mod != "a" && mod != "srv" {
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
	if mod == "srv" {
		p.dynamicSRV(d, rp)
		return
	}
	da := &Dynamic{Module: "a", Network: "ip"}
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
		case "refresh", "dial_timeout", "resolvers":
			p.dynamicLookup(d, da, sub, label)
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

// dynamicSRV reads "dynamic srv [FULL_NAME] { service proto name refresh
// resolvers dial_timeout }".
func (p *parser) dynamicSRV(d *caddyfile.Dispenser, rp *Proxy) {
	ds := &Dynamic{Module: "srv"}
	switch args := d.RemainingArgs(); len(args) {
	case 0:
	case 1:
		ds.Name = args[0]
	default:
		p.errf(d, "reverse_proxy: dynamic srv: want one full name such as _http._tcp.example.com")
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		sub := d.Val()
		label := "reverse_proxy: dynamic srv: " + sub
		switch sub {
		case "service":
			ds.Service, _ = p.oneArg(d, label, "a service name such as http")
		case "proto":
			ds.Proto, _ = p.oneArg(d, label, "tcp or udp")
		case "name":
			ds.Name, _ = p.oneArg(d, label, "a domain name")
		case "refresh", "dial_timeout", "resolvers":
			p.dynamicLookup(d, ds, sub, label)
		case "dial_fallback_delay", "grace_period":
			p.errf(d, "%s is not supported by pollproxy", label)
			d.RemainingArgs()
		default:
			p.errf(d, "reverse_proxy: dynamic srv: unknown option %q (want %s)", sub, dynamicSRVOptions)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if ds.Name == "" || strings.ContainsAny(ds.Name, "{}/:") || (ds.Service == "") != (ds.Proto == "") {
		p.errf(d, "reverse_proxy: dynamic srv: want a full name (dynamic srv _http._tcp.example.com), or service, proto and name")
		return
	}
	rp.Dynamic = ds
	rp.Upstreams = append(rp.Upstreams, ds.Upstream())
}

// dynamicLookup reads the options both modules share: how often and
// from where the records are looked up.
func (p *parser) dynamicLookup(d *caddyfile.Dispenser, ds *Dynamic, sub, label string) {
	switch sub {
	case "refresh":
		ds.Refresh = p.durationArg(d, label)
	case "dial_timeout":
		ds.DialTimeout = p.durationArg(d, label)
	case "resolvers":
		ds.Resolvers = d.RemainingArgs()
		if len(ds.Resolvers) == 0 {
			p.errf(d, "%s: want one or more DNS server addresses", label)
		}
		for _, r := range ds.Resolvers {
			if !validResolver(r) {
				p.errf(d, "%s: %q: want an IP address, optionally with a port", label, r)
			}
		}
	}
}

func validResolver(s string) bool {
	if _, _, err := net.SplitHostPort(s); err == nil {
		h, _, _ := net.SplitHostPort(s)
		return net.ParseIP(h) != nil
	}
	return net.ParseIP(s) != nil
}
