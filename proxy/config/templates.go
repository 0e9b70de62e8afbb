package config

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/site"
	"github.com/pollproxy/pollproxy/proxy/templates"
)

// templatesDirective reads templates [matcher] { mime TYPES...  between
// OPEN CLOSE  root PATH }, as Caddy's.
func (p *parser) templatesDirective(d *caddyfile.Dispenser, n *site.Node) {
	cfg := &templates.Config{}
	n.Do = &site.Templates{Config: cfg}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "templates: want [matcher] and a block, not %q", args[0])
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "mime":
			cfg.MIME = d.RemainingArgs()
			if len(cfg.MIME) == 0 {
				p.errf(d, "templates: mime: want one or more types")
			}
		case "between":
			args := d.RemainingArgs()
			if len(args) != 2 {
				p.errf(d, "templates: between: want the opening and the closing delimiter")
				continue
			}
			cfg.Delims = [2]string{args[0], args[1]}
		case "root":
			if v, ok := p.oneArg(d, "templates: root", "a directory"); ok {
				if r, ok := p.literalPath(d, "templates: root", v); ok {
					cfg.Root = r
				}
			}
		case "extensions":
			p.errf(d, "templates: extensions is not supported by pollproxy")
			d.RemainingArgs()
			skipBlock(d)
		default:
			p.errf(d, "templates: unknown option %q (want mime, between, root)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}
