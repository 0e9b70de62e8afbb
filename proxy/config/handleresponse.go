package config

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// matcherUse is a response matcher a handle_response or replace_status
// names; it is resolved once the whole reverse_proxy block is read, as
// Caddy does, so a matcher may be defined after its use.
type matcherUse struct {
	name  string
	pos   Pos
	index int // in Proxy.Responses
}

// handleResponse reads handle_response [@matcher] { routes } or
// replace_status [@matcher] STATUS inside reverse_proxy.
func (p *parser) handleResponse(d *caddyfile.Dispenser, hs *[]site.ResponseHandler, uses *[]matcherUse, sub string) {
	args := d.RemainingArgs()
	var rh site.ResponseHandler
	if len(args) > 0 && strings.HasPrefix(args[0], "@") {
		*uses = append(*uses, matcherUse{name: args[0], pos: dpos(d), index: len(*hs)})
		args = args[1:]
	}
	if sub == "replace_status" {
		c, err := strconv.Atoi(strings.Join(args, " "))
		if len(args) != 1 || err != nil || c < 100 || c > 599 {
			p.errf(d, "reverse_proxy: replace_status: want [@matcher] STATUS, e.g. replace_status @error 503")
			return
		}
		rh.Status = c
		*hs = append(*hs, rh)
		return
	}
	if len(args) > 0 {
		p.errf(d, "reverse_proxy: handle_response: want [@matcher] { ... }, not %q", args[0])
	}
	var segs []*caddyfile.Dispenser
	for nest := d.Nesting(); d.NextBlock(nest); {
		segs = append(segs, d.NewFromNextSegment())
	}
	p.inResponse++
	rh.Routes = p.routeList(p.cur, segs, true)
	p.inResponse--
	*hs = append(*hs, rh)
}

// resolve gives each handler the response matcher it names.
func (p *parser) resolve(hs []site.ResponseHandler, uses []matcherUse, matchers map[string]*route.ResponseMatch, label string) {
	for _, u := range uses {
		m, ok := matchers[u.name]
		if !ok {
			p.errAt(u.pos, "%s: response matcher %s is not defined in this %s", label, u.name, label)
			continue
		}
		hs[u.index].Match = m
	}
}

// intercept reads intercept [matcher] { @name RESPONSE-MATCHER
// replace_status [@name] STATUS  handle_response [@name] { routes } }.
func (p *parser) intercept(d *caddyfile.Dispenser, n *site.Node) {
	ic := &site.Intercept{}
	n.Do = ic
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "intercept: want [matcher] { ... }, not %q", args[0])
	}
	matchers := map[string]*route.ResponseMatch{}
	var uses []matcherUse
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); {
		case sub == "handle_response" || sub == "replace_status":
			p.handleResponse(d, &ic.Responses, &uses, sub)
		case strings.HasPrefix(sub, "@"):
			m := &route.ResponseMatch{}
			p.responseMatch(d, m, "intercept "+sub)
			matchers[sub] = m
		default:
			p.errf(d, "intercept: unknown option %q (want @name, replace_status, handle_response)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	p.resolve(ic.Responses, uses, matchers, "intercept")
	if len(ic.Responses) == 0 {
		p.errf(d, "intercept: want a handle_response or replace_status")
	}
}

// copyResponse reads copy_response [matcher] [STATUS] { status STATUS }
// and copy_response_headers [matcher] { include FIELD... exclude
// FIELD... }: only inside handle_response's routes, as in Caddy.
func (p *parser) copyResponse(d *caddyfile.Dispenser, n *site.Node, name string) {
	if p.inResponse == 0 {
		p.errf(d, "%s: only inside reverse_proxy's handle_response, as in Caddy", name)
		d.RemainingArgs()
		skipBlock(d)
		return
	}
	if name == "copy_response" {
		cr := &site.CopyResponse{}
		n.Do = cr
		status := func(v string) {
			c, err := strconv.Atoi(v)
			if err != nil || c < 100 || c > 599 {
				p.errf(d, "copy_response: status %q: want a number such as 200", v)
			}
			cr.Status = c
		}
		args := d.RemainingArgs()
		switch len(args) {
		case 0:
		case 1:
			status(args[0])
		default:
			p.errf(d, "copy_response: want [matcher] [STATUS]")
		}
		for nest := d.Nesting(); d.NextBlock(nest); {
			if d.Val() != "status" {
				p.errf(d, "copy_response: unknown option %q (want status)", d.Val())
				d.RemainingArgs()
				continue
			}
			if v, ok := p.oneArg(d, "copy_response: status", "a status"); ok {
				status(v)
			}
		}
		return
	}
	// Caddy's copy_response_headers adds to the response header map at
	// once: the fields are there before a respond after it answers.
	filter := &site.HeaderFilter{}
	n.Do = &site.EditResponse{CopyFrom: filter, Immediate: true}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "copy_response_headers: want [matcher] { include FIELD... | exclude FIELD... }")
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		opt := d.Val()
		fields := d.RemainingArgs()
		for i := range fields {
			fields[i] = strings.ToLower(fields[i])
		}
		switch opt {
		case "include":
			filter.Include = append(filter.Include, fields...)
		case "exclude":
			filter.Exclude = append(filter.Exclude, fields...)
		default:
			p.errf(d, "copy_response_headers: unknown option %q (want include, exclude)", opt)
		}
	}
	if len(filter.Include) > 0 && len(filter.Exclude) > 0 {
		p.errf(d, "copy_response_headers: include or exclude, not both (as in Caddy)")
	}
}
