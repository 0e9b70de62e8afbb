package app

import (
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// upstreamWatch is the instance's work on its upstreams off the loops:
// their names looked up again on an interval, and their active health
// checks. It follows the running plan's upstreams, so a reload adds and
// drops them.
type upstreamWatch struct {
	resolver *upstream.Resolver
	health   *upstream.HealthChecker
}

// update follows the upstreams of the plan just committed. An upstream
// several reverse_proxy directives share is checked once, with the first one's settings
// that enable checks.
func (w *upstreamWatch) update(p *plan) {
	list := make([]*upstream.Upstream, 0, len(p.upstreams))
	for _, u := range p.upstreams {
		list = append(list, u)
	}
	if w.resolver == nil {
		w.resolver = upstream.NewResolver(0, nil)
		w.health = upstream.NewHealthChecker()
	}
	w.resolver.Update(list)
	checks := map[*upstream.Upstream]upstream.ActiveHealth{}
	for _, s := range p.cfg.Sites {
		for _, rp := range s.AllProxies() {
			pc, ok := p.proxies[rp]
			if !ok || !pc.ActiveHealth.Enabled() {
				continue
			}
			for _, u := range pc.Upstreams {
				if _, seen := checks[u]; !seen {
					checks[u] = pc.ActiveHealth
				}
			}
		}
	}
	w.health.Update(checks)
}

// close stops the work; it waits for a lookup in progress.
func (w *upstreamWatch) close() {
	if w.resolver != nil {
		w.resolver.Close()
		w.health.Close()
		w.resolver, w.health = nil, nil
	}
}
