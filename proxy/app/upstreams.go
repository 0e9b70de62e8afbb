package app

import (
	"github.com/pollproxy/pollproxy/proxy"
)

// upstreamWatch is the instance's work on its upstreams off the loops:
// their names looked up again on an interval. It follows the running
// plan's upstreams, so a reload adds and drops names.
type upstreamWatch struct {
	resolver *proxy.Resolver
}

// update follows the upstreams of the plan just committed.
func (w *upstreamWatch) update(ups map[string]*proxy.Upstream) {
	list := make([]*proxy.Upstream, 0, len(ups))
	for _, u := range ups {
		list = append(list, u)
	}
	if w.resolver == nil {
		w.resolver = proxy.NewResolver(0, nil)
	}
	w.resolver.Update(list)
}

// close stops the work; it waits for a lookup in progress.
func (w *upstreamWatch) close() {
	if w.resolver != nil {
		w.resolver.Close()
		w.resolver = nil
	}
}
