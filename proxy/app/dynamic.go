package app

import (
	"context"

	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// upstreamFor resolves one upstream of rp: a dynamic a or srv upstream
// with its own lookup (its resolvers, its address family), which the instance's
// Resolver then repeats every refresh; any other as upstream does.
func (in *Instance) upstreamFor(p *plan, rp *config.Proxy, name string) (*upstream.Upstream, error) {
	if rp.Dynamic == nil || name != rp.Dynamic.Upstream() {
		fresh := p.upstreams[name] == nil
		up, err := in.upstream(p, name)
		if err == nil && fresh {
			up.SetDynamic(nil) // a reload that made it static again
		}
		return up, err
	}
	da := rp.Dynamic
	var lookup upstream.LookupFunc
	var err error
	if da.Module == "srv" {
		lookup, err = upstream.SRVLookup(da.Resolvers, da.DialTimeout)
	} else {
		lookup, err = upstream.DNSLookup(da.Resolvers, da.Network, da.DialTimeout)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	addrs, err := lookup(ctx, name)
	cancel()
	if err != nil {
		return nil, err
	}
	up := p.upstreams[name]
	if up == nil {
		up = in.upstreams[name]
	}
	if up == nil {
		up = &upstream.Upstream{Name: name, Addr: addrs[0]}
	}
	up.SetAddrs(addrs)
	up.SetDynamic(&upstream.Dynamic{Refresh: da.Refresh, Lookup: lookup})
	p.upstreams[name] = up
	return up, nil
}
