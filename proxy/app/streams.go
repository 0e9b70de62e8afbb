package app

import (
	"sync"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// Long streams across a reload. Every per-loop proxy handler a plan
// builds is recorded with its site. After a reload has given every loop
// its new handlers, each old one is retired: what it has in flight keeps
// running if the same site (a site sharing an address with it) still
// routes to the same upstream (same name, same resolved address), and is
// closed after its stream_close_delay otherwise (proxy.Handler.Retire).

// builtHandlers are the proxy handlers one plan built, on every loop.
type builtHandlers struct {
	mu   sync.Mutex // the loops build their handlers concurrently
	list []builtHandler
}

// take empties the list and returns what it held.
func (b *builtHandlers) take() []builtHandler {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.list
	b.list = nil
	return list
}

type builtHandler struct {
	site *config.Site
	loop *netpoll.Loop
	h    *proxy.Handler
}

// track records a handler built for site s on loop l.
func (p *plan) track(l *netpoll.Loop, s *config.Site, h *proxy.Handler) {
	p.built.mu.Lock()
	p.built.list = append(p.built.list, builtHandler{site: s, loop: l, h: h})
	p.built.mu.Unlock()
}

// retire tells every handler old built, and every older one still
// serving something, which of its upstreams the new plan keeps for its
// site. Handlers with something still in flight move to the new plan's
// list, so the next reload checks them again against its configuration.
func retire(old, now *plan) {
	if old == nil {
		return
	}
	list := old.built.take()
	keeps := map[*config.Site]func(*upstream.Upstream) bool{}
	var wg sync.WaitGroup
	for _, b := range list {
		keep, ok := keeps[b.site]
		if !ok {
			keep = keptUpstreams(b.site, now)
			keeps[b.site] = keep
		}
		wg.Add(1)
		b.loop.Post(func() {
			defer wg.Done()
			b.h.Retire(keep)
			if b.h.InFlight() > 0 {
				now.track(b.loop, b.site, b.h)
			}
		})
	}
	// The next reload must find what this one carried over.
	wg.Wait()
}

// keptUpstreams is what the new plan still routes site's requests to:
// the upstreams of every new site sharing an address with it; nil when
// there is none.
func keptUpstreams(site *config.Site, now *plan) func(*upstream.Upstream) bool {
	set := map[*upstream.Upstream]bool{}
	for _, ns := range now.cfg.Sites {
		if !sharesAddress(site, ns) {
			continue
		}
		for _, up := range now.siteUps[ns] {
			set[up] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return func(up *upstream.Upstream) bool { return set[up] }
}

func sharesAddress(a, b *config.Site) bool {
	for _, x := range a.Addrs {
		for _, y := range b.Addrs {
			if x.Host == y.Host && x.Port == y.Port {
				return true
			}
		}
	}
	return false
}

// closeHandlers closes every handler p built and every older one it
// carries (proxy.Handler.Close) on its loop, and returns once each did or
// its loop is gone: their idle origin connections are closed while the
// loops still run, since a loop that stops closes no descriptor.
func closeHandlers(p *plan) {
	if p == nil {
		return
	}
	list := p.built.take()
	done := make(chan struct{}, len(list))
	for _, b := range list {
		b.loop.Post(func() {
			b.h.Close()
			done <- struct{}{}
		})
	}
	for _, b := range list {
		select {
		case <-done:
		case <-b.loop.Done():
		case <-time.After(5 * time.Second): // a loop that is stuck
		}
	}
}
