package upstream

// Caddy's dynamic A/AAAA and SRV upstreams ("dynamic a NAME PORT",
// "dynamic srv NAME"): an upstream whose name is looked up again on its own
// interval, possibly from DNS servers of its own. The lookups run on the Resolver's goroutine, never
// on a loop; loops read the addresses through Upstream.addrs.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// Dynamic is how a dynamic upstream is looked up: every Refresh
// (DefaultResolveInterval when 0), with Lookup (the Resolver's when nil).
type Dynamic struct {
	Refresh time.Duration
	Lookup  LookupFunc
}

// SetDynamic makes u a dynamic upstream (nil: an ordinary one, looked up
// on the Resolver's interval). Safe while the Resolver runs.
func (u *Upstream) SetDynamic(d *Dynamic) { u.dyn.Store(d) }

// dynamic returns u's settings, nil for an ordinary upstream.
func (u *Upstream) dynamic() *Dynamic { return u.dyn.Load() }

// DNSLookup returns a LookupFunc for A and AAAA records: network "ip"
// (both), "ip4" or "ip6"; servers, when given, are the DNS servers to ask
// (an IP, port 53 when none is given, used in turn), else the system's;
// dialTimeout, when positive, bounds each connection to a server.
func DNSLookup(servers []string, network string, dialTimeout time.Duration) (LookupFunc, error) {
	res, err := resolver(servers, dialTimeout)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
		host, portStr, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, err
		}
		port, err := net.LookupPort("tcp", portStr)
		if err != nil {
			return nil, err
		}
		ips, err := res.LookupNetIP(ctx, network, host)
		if err != nil {
			return nil, err
		}
		out := make([]netip.AddrPort, 0, len(ips))
		for _, ip := range ips {
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: no %s address", host, network)
		}
		return out, nil
	}, nil
}

// resolver is a Go resolver asking servers in turn (the system's when
// none), each connection bounded by dialTimeout when positive.
func resolver(servers []string, dialTimeout time.Duration) (*net.Resolver, error) {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			addrs[i] = ap.String()
		} else if a, err := netip.ParseAddr(s); err == nil {
			addrs[i] = netip.AddrPortFrom(a, 53).String()
		} else {
			return nil, fmt.Errorf("resolver %q: want an IP address, optionally with a port", s)
		}
	}
	res := &net.Resolver{PreferGo: true}
	if len(addrs) > 0 || dialTimeout > 0 {
		var next atomic.Uint32
		res.Dial = func(ctx context.Context, netw, addr string) (net.Conn, error) {
			if len(addrs) > 0 {
				addr = addrs[int(next.Add(1)-1)%len(addrs)]
			}
			d := net.Dialer{Timeout: dialTimeout}
			return d.DialContext(ctx, netw, addr)
		}
	}
	return res, nil
}

// SRVLookup returns a LookupFunc for Caddy's "dynamic srv": name is the
// full SRV name (_service._proto.example.com), and the answer is every
// target's addresses with the target's port. resolvers and dialTimeout are
// DNSLookup's.
func SRVLookup(servers []string, dialTimeout time.Duration) (LookupFunc, error) {
	res, err := resolver(servers, dialTimeout)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string) ([]netip.AddrPort, error) {
		_, srvs, err := res.LookupSRV(ctx, "", "", name)
		if err != nil {
			return nil, err
		}
		var out []netip.AddrPort
		for _, s := range srvs {
			ips, err := res.LookupNetIP(ctx, "ip", s.Target)
			if err != nil {
				continue // another target may answer
			}
			for _, ip := range ips {
				out = append(out, netip.AddrPortFrom(ip.Unmap(), s.Port))
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: no SRV target with an address", name)
		}
		return out, nil
	}, nil
}
