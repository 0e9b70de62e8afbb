package config

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// forwardAuth reads forward_auth [matcher] UPSTREAMS { uri ...
// copy_headers ... <reverse_proxy options> }, as Caddy does: its own two
// options are taken out and the rest is read as a reverse_proxy to the
// auth service, whose answer decides (site.ForwardAuth).
func (p *parser) forwardAuth(d *caddyfile.Dispenser, s *Site, n *site.Node) {
	pos := dpos(d)
	var toks []caddyfile.Token
	for seg := d.NewFromNextSegment(); seg.Next(); {
		toks = append(toks, seg.Token())
	}
	var kept []caddyfile.Token
	var copies []site.CopyField
	uri := ""
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		lineStart := i == 0 || toks[i-1].Line != t.Line || toks[i-1].File != t.File
		if depth == 1 && lineStart && (t.Text == "uri" || t.Text == "copy_headers") {
			line := tokPos(t)
			var args []string
			for i+1 < len(toks) && toks[i+1].Line == t.Line && toks[i+1].Text != "{" {
				i++
				args = append(args, toks[i].Text)
			}
			if t.Text == "uri" {
				switch {
				case len(args) != 1:
					p.errAt(line, "forward_auth: uri: want one argument: the auth service's path, e.g. /api/verify")
				case uri != "":
					p.errAt(line, "forward_auth: uri: cannot have duplicate uri: %s", args[0])
				default:
					uri = args[0]
				}
				continue
			}
			if i+1 < len(toks) && toks[i+1].Text == "{" { // copy_headers { A  B>C }
				i++
				for i+1 < len(toks) && toks[i+1].Text != "}" {
					i++
					args = append(args, toks[i].Text)
				}
				i++
			}
			if len(args) == 0 {
				p.errAt(line, "forward_auth: copy_headers: want field names, e.g. copy_headers Remote-User Remote-Email")
			}
			for _, a := range args {
				c, ok := site.ParseCopyField(a)
				if !ok {
					p.errAt(line, "forward_auth: copy_headers: %q: want Name or From>To", a)
					continue
				}
				copies = append(copies, c)
			}
			continue
		}
		switch t.Text {
		case "{":
			depth++
		case "}":
			depth--
		}
		kept = append(kept, t)
	}
	if uri == "" {
		p.errAt(pos, "forward_auth: the 'uri' subdirective is required")
		return
	}
	tmpl, err := route.ParseTemplate(uri, route.TemplateOptions{})
	if err != nil {
		p.errAt(pos, "forward_auth: uri: %v", err)
		return
	}
	rd := caddyfile.NewDispenser(kept)
	rd.Next()
	rp := p.reverseProxy(rd)
	n.Do = &site.ForwardAuth{URI: tmpl, Proxy: len(s.Proxies), Copy: copies, Responses: rp.Responses}
	s.Proxies = append(s.Proxies, &rp)
}
