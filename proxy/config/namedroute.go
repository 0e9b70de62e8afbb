package config

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// namedRoute is a named route block (&(name) { ... }) as read: its
// directives, compiled wherever a site invokes it.
type namedRoute struct {
	block caddyfile.ServerBlock
	pos   Pos
}

// namedRouteBlock records a named route block; a second one of a name
// is refused, as Caddy refuses it.
func (p *parser) namedRouteBlock(b caddyfile.ServerBlock) {
	name := b.Keys[0].Text
	if p.routes == nil {
		p.routes = map[string]*namedRoute{}
	}
	if _, dup := p.routes[name]; dup {
		p.errAt(tokPos(b.Keys[0]), "cannot have duplicate named_routes: %s", name)
		return
	}
	p.routes[name] = &namedRoute{block: b, pos: tokPos(b.Keys[0])}
}

// invoke reads invoke [matcher] NAME: the named route's directives,
// sorted as a site's are, with matchers of their own, run where the
// invoke stands; the routes after it run on when none of them answers,
// as after Caddy's invoke. Each site that invokes a route gets its own
// copy of what it compiles to (its reverse proxies are the site's).
func (p *parser) invoke(s *Site, d *caddyfile.Dispenser, n *site.Node) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "invoke: want [matcher] NAME")
		return
	}
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "invoke: takes no block")
	}
	name := args[0]
	nr := p.routes[name]
	if nr == nil {
		p.errf(d, "cannot invoke named route '%s', which was not defined", name)
		return
	}
	for _, inside := range p.invoking {
		if inside == name {
			p.errf(d, "invoke: named route '%s' invokes itself, which would never end", name)
			return
		}
	}
	p.invoking = append(p.invoking, name)
	named := p.named
	p.named = map[string]route.Matcher{} // a named route's matchers are its own
	// The block is one segment: the name, then its directives in braces.
	var ds []*caddyfile.Dispenser
	for _, seg := range nr.block.Segments {
		bd := caddyfile.NewDispenser(seg)
		bd.Next()
		for nest := bd.Nesting(); bd.NextBlock(nest); {
			ds = append(ds, bd.NewFromNextSegment())
		}
	}
	n.Do = &site.Group{Children: firstOfOne(p.routeList(s, ds, true))}
	p.named = named
	p.invoking = p.invoking[:len(p.invoking)-1]
}

// firstOfOne keeps what Caddy keeps of a named route whose directives
// all go into one route (none has a matcher, all in one group): Caddy
// joins them into a single route and then keeps that route's first
// handler alone, so only the first directive (in directive order) runs.
func firstOfOne(nodes []site.Node) []site.Node {
	if len(nodes) < 2 {
		return nodes
	}
	for _, n := range nodes {
		if n.Match != nil || n.Exclusive != nodes[0].Exclusive {
			return nodes
		}
	}
	return nodes[:1]
}
