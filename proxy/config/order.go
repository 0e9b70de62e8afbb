package config

import (
	"slices"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// caddyOrder is Caddy's default directive order (its httpcaddyfile
// defaultDirectiveOrder): every directive of Caddy's standard build, so
// that an order option may name any of them as the one to go before or
// after, while only those pollproxy implements may be moved.
var caddyOrder = []string{
	"tracing", "map", "vars", "fs", "root", "log_append", "skip_log", "log_skip", "log_name",
	"header", "copy_response_headers", "request_body", "timeouts", "redir",
	"method", "rewrite", "uri", "try_files",
	"basicauth", "basic_auth", "forward_auth", "request_header", "encode", "push", "intercept", "templates",
	"invoke", "handle", "handle_path", "route",
	"abort", "error", "copy_response", "respond", "metrics", "reverse_proxy", "php_fastcgi", "file_server", "acme_server",
}

// rank is the position of each directive in the configuration's order,
// for sorting a site's routes.
func (p *parser) rank() map[string]int {
	if p.ranks == nil {
		order := p.order
		if order == nil {
			order = caddyOrder
		}
		p.ranks = make(map[string]int, len(order))
		for i, name := range order {
			p.ranks[name] = i
		}
	}
	return p.ranks
}

// orderOption reads the order global option, with Caddy's meaning:
// order DIRECTIVE first|last|before OTHER|after OTHER moves DIRECTIVE in
// the directive order every site's routes are sorted by.
func (p *parser) orderOption(d *caddyfile.Dispenser) {
	args := d.RemainingArgs()
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "order: takes no block")
	}
	if len(args) < 2 {
		p.errf(d, "order: want DIRECTIVE first|last|before OTHER|after OTHER")
		return
	}
	name, pos := args[0], args[1]
	switch {
	case name == "handle_path":
		p.errf(d, "order: handle_path sorts as handle in pollproxy; order handle instead")
		return
	case !implemented[name] && slices.Contains(caddyOrder, name):
		p.errf(d, "order: %s is not supported by pollproxy", name)
		return
	case !implemented[name]:
		p.errf(d, "order: %s is not a directive pollproxy knows (plugins are not supported by pollproxy)", name)
		return
	}
	if p.order == nil {
		p.order = slices.Clone(caddyOrder)
	}
	order := slices.DeleteFunc(slices.Clone(p.order), func(s string) bool { return s == name })
	switch pos {
	case "first", "last":
		if len(args) != 2 {
			p.errf(d, "order: %s %s takes nothing after it", name, pos)
			return
		}
		if pos == "first" {
			order = append([]string{name}, order...)
		} else {
			order = append(order, name)
		}
	case "before", "after":
		if len(args) != 3 {
			p.errf(d, "order: want %s %s OTHER", name, pos)
			return
		}
		i := slices.Index(order, args[2])
		if i < 0 {
			p.errf(d, "order: directive '%s' not found", args[2])
			return
		}
		if pos == "after" {
			i++
		}
		order = slices.Insert(order, i, name)
	default:
		p.errf(d, "order: unknown positional '%s' (want first, last, before or after)", pos)
		return
	}
	p.order, p.ranks = order, nil
}
