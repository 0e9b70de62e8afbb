package config

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// handleErrors reads handle_errors [STATUS...] { routes }: one group of
// the site's error routes, matching the error's status when codes (404)
// or classes (5xx) are given, as Caddy 2.8 does.
func (p *parser) handleErrors(s *Site, d *caddyfile.Dispenser) site.Node {
	g := &site.Group{}
	n := site.Node{Do: g}
	var codes site.ErrorStatus
	for _, a := range d.RemainingArgs() {
		if len(a) == 3 && a[1:] == "xx" && a[0] >= '1' && a[0] <= '5' {
			codes = append(codes, int(a[0]-'0'))
			continue
		}
		c, err := strconv.Atoi(a)
		if len(a) != 3 || err != nil || c < 100 || c > 599 {
			p.errf(d, "handle_errors: bad status value %q (want a code such as 404 or a class such as 5xx)", a)
			continue
		}
		codes = append(codes, c)
	}
	if len(codes) > 0 {
		n.Match = codes
	}
	var sub []*caddyfile.Dispenser
	for nest := d.Nesting(); d.NextBlock(nest); {
		sub = append(sub, d.NewFromNextSegment())
	}
	g.Children = p.routeList(s, sub, true)
	return n
}

// errorDirective reads error [matcher] STATUS|MESSAGE [STATUS] { message
// MESSAGE }, Caddy's: a lone three-digit number is the status; the
// status is 500 when none is given.
func (p *parser) errorDirective(d *caddyfile.Dispenser, n *site.Node) {
	args := d.RemainingArgs()
	status, msg := 500, ""
	switch len(args) {
	case 1:
		if c, err := strconv.Atoi(args[0]); err == nil && len(args[0]) == 3 && c > 0 {
			status = c
		} else {
			msg = args[0]
		}
	case 2:
		msg = args[0]
		c, err := strconv.Atoi(args[1])
		if err != nil {
			p.errf(d, "error: status %q: want a number such as 404 (placeholders in the status are not supported by pollproxy)", args[1])
			return
		}
		status = c
	default:
		p.errf(d, "error: want [matcher] STATUS|MESSAGE [STATUS]")
		skipBlock(d)
		return
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch d.Val() {
		case "message":
			if msg != "" {
				p.errf(d, "error: message already specified")
			}
			if v, ok := p.oneArg(d, "error: message", "the message"); ok {
				msg = v
			}
		default:
			p.errf(d, "error: unknown option %q (want message)", d.Val())
			d.RemainingArgs()
		}
	}
	if status < 400 || status > 599 {
		p.errf(d, "error: status %d: want 400-599", status)
		return
	}
	t, err := route.ParseTemplate(msg, route.TemplateOptions{KeepUnknown: true})
	if err != nil {
		p.errf(d, "error: %v", err)
		return
	}
	n.Do = &site.Error{Status: status, Message: t, Static: site.ErrorResponse(status)}
}
