package config

import (
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/fastcgi"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// FastCGI is transport fastcgi { ... }, or what php_fastcgi set up.
type FastCGI struct {
	Pos                Pos
	Root               string
	Split              []string
	Env                [][2]string
	ResolveRootSymlink bool
	CaptureStderr      bool
	// DialTimeout, ReadTimeout and WriteTimeout are the transport's;
	// the proxy's Proxy fields take them (fastcgiTimeouts).
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
}

// fastcgiDialTimeout is Caddy's default dial_timeout for this transport.
const fastcgiDialTimeout = 3 * time.Second

// transportFastCGI reads transport fastcgi's block.
func (p *parser) transportFastCGI(d *caddyfile.Dispenser, rp *Proxy) {
	fc := &FastCGI{Pos: dpos(d)}
	for n := d.Nesting(); d.NextBlock(n); {
		p.fastcgiOption(d, fc, "transport fastcgi: ")
	}
	p.setFastCGI(rp, fc)
}

// fastcgiOption reads one transport fastcgi option; it reports false
// for a name that is not one.
func (p *parser) fastcgiOption(d *caddyfile.Dispenser, fc *FastCGI, prefix string) bool {
	sub := d.Val()
	label := prefix + sub
	switch sub {
	case "root":
		if v, ok := p.oneArg(d, label, "a path"); ok {
			fc.Root = v
		}
	case "split":
		if fc.Split = d.RemainingArgs(); len(fc.Split) == 0 {
			p.errf(d, "%s: want extensions such as .php", label)
		}
	case "env":
		args := d.RemainingArgs()
		if len(args) != 2 {
			p.errf(d, "%s: want a name and a value", label)
			break
		}
		fc.Env = append(fc.Env, [2]string{args[0], args[1]})
	case "resolve_root_symlink":
		if len(d.RemainingArgs()) > 0 {
			p.errf(d, "%s: takes no argument", label)
		}
		fc.ResolveRootSymlink = true
	case "capture_stderr":
		if len(d.RemainingArgs()) > 0 {
			p.errf(d, "%s: takes no argument", label)
		}
		fc.CaptureStderr = true
	case "dial_timeout":
		fc.DialTimeout = p.durationArg(d, label)
	case "read_timeout":
		fc.ReadTimeout = p.durationArg(d, label)
	case "write_timeout":
		fc.WriteTimeout = p.durationArg(d, label)
	default:
		p.errf(d, "%sunrecognized subdirective %s (want root, split, env, resolve_root_symlink, dial_timeout, read_timeout, write_timeout, capture_stderr)", prefix, sub)
		d.RemainingArgs()
		skipBlock(d)
		return false
	}
	return true
}

// setFastCGI makes rp's transport fc, checking what Caddy checks.
func (p *parser) setFastCGI(rp *Proxy, fc *FastCGI) {
	if _, err := fastcgi.NewSplit(fc.Split); err != nil {
		p.errAt(fc.Pos, "reverse_proxy: transport fastcgi: %v", err)
	}
	for _, e := range fc.Env {
		if _, err := route.ParseTemplate(e[1], route.TemplateOptions{}); err != nil {
			p.errAt(fc.Pos, "reverse_proxy: transport fastcgi: env %s: %v", e[0], err)
		}
	}
	if strings.Contains(fc.Root, "{") && fc.Root != "{http.vars.root}" {
		p.errAt(fc.Pos, "reverse_proxy: transport fastcgi: root: placeholders are not supported by pollproxy (want a path, or {http.vars.root})")
	}
	if fc.Root == "{http.vars.root}" {
		fc.Root = ""
	}
	if fc.DialTimeout == 0 {
		fc.DialTimeout = fastcgiDialTimeout
	}
	rp.FastCGI = fc
	rp.DialTimeout = fc.DialTimeout
	rp.ReadTimeout = fc.ReadTimeout
	rp.ResponseHeaderTimeout = fc.ReadTimeout
	rp.WriteTimeout = fc.WriteTimeout
}

// proxyFastCGI is the proxy's transport for fc.
func (fc *FastCGI) proxyFastCGI() *proxy.FastCGI {
	split, _ := fastcgi.NewSplit(fc.Split)
	out := &proxy.FastCGI{Root: fc.Root, Split: split, ResolveRootSymlink: fc.ResolveRootSymlink}
	for _, e := range fc.Env {
		t, _ := route.ParseTemplate(e[1], route.TemplateOptions{})
		out.Env = append(out.Env, proxy.FastCGIEnv{Name: e[0], Value: t})
	}
	return out
}

// phpFastCGI expands php_fastcgi as Caddy does, into a group of routes:
//
//	@canonicalPath { file {path}/index.php; not path */ }
//	redir @canonicalPath ./{orig file}/{orig ?query} 308
//	@indexFiles file { try_files {path} {path}/index.php index.php; try_policy first_exist_fallback; split_path .php }
//	rewrite @indexFiles {http.matchers.file.relative}
//	@phpFiles path *.php
//	reverse_proxy @phpFiles <upstreams> { transport fastcgi { split .php } ... }
//
// index, try_files and split change the first two; the transport's
// options (root, env, ...) set its transport; every other line is
// reverse_proxy's. The directive's own matcher, if any, guards the group.
func (p *parser) phpFastCGI(d *caddyfile.Dispenser, s *Site, n *site.Node) {
	sd := d.NewFromNextSegment()
	fc := &FastCGI{Pos: dpos(sd)}
	exts := []string{".php"}
	index := "index.php"
	var tryFiles []string
	for sd.Next() {
		for sd.NextBlock(0) {
			if sd.Nesting() != 1 {
				continue
			}
			switch sub := sd.Val(); sub {
			case "root", "env", "resolve_root_symlink", "capture_stderr", "dial_timeout", "read_timeout", "write_timeout":
				n := 1 + sd.CountRemainingArgs()
				p.fastcgiOption(sd, fc, "php_fastcgi: ")
				sd.DeleteN(n)
			case "split":
				n := 1 + sd.CountRemainingArgs()
				if exts = sd.RemainingArgs(); len(exts) == 0 {
					p.errf(sd, "php_fastcgi: split: want extensions such as .php")
					exts = []string{".php"}
				}
				sd.DeleteN(n)
			case "index":
				n := 1 + sd.CountRemainingArgs()
				args := sd.RemainingArgs()
				if len(args) != 1 {
					p.errf(sd, "php_fastcgi: index: want one file name, or off")
				} else {
					index = args[0]
				}
				sd.DeleteN(n)
			case "try_files":
				n := 1 + sd.CountRemainingArgs()
				if tryFiles = sd.RemainingArgs(); len(tryFiles) == 0 {
					p.errf(sd, "php_fastcgi: try_files: want files to try")
				}
				sd.DeleteN(n)
			}
		}
	}
	sd.Reset()
	sd.Next() // the directive's name, or its matcher: upstreams follow
	rp := p.reverseProxy(sd)
	fc.Split = exts
	p.setFastCGI(&rp, fc)

	g := &site.Group{}
	n.Do = g
	if index != "off" {
		dirIndex := "{http.request.uri.path}/" + index
		policy := "first_exist_fallback"
		dirRedir := true
		if len(tryFiles) == 0 {
			tryFiles = []string{"{http.request.uri.path}", dirIndex, index}
		} else {
			if !strings.HasSuffix(tryFiles[len(tryFiles)-1], ".php") {
				policy = ""
			}
			dirRedir = slices.Contains(tryFiles, dirIndex)
		}
		if dirRedir {
			g.Children = append(g.Children, p.phpCanonical(sd, dirIndex))
		}
		var try []route.Template
		for _, f := range tryFiles {
			if t, ok := p.tryEntry(sd, "php_fastcgi: try_files", f); ok {
				try = append(try, t)
			}
		}
		g.Children = append(g.Children, site.Node{Match: &site.File{Try: try, Policy: policy, Split: exts},
			Do: &site.Rewrite{FileTarget: true}})
	}
	var pats []string
	for _, e := range exts {
		pats = append(pats, "*"+e)
	}
	pm, err := route.NewPath(pats)
	if err != nil {
		p.errf(sd, "php_fastcgi: split: %v", err)
	}
	g.Children = append(g.Children, site.Node{Match: pm, Do: &site.Proxy{Index: len(s.Proxies), Responses: rp.Responses}})
	s.Proxies = append(s.Proxies, &rp)
}

// phpCanonical is php_fastcgi's redirect of a directory without its
// trailing slash to the same path with one (308), when its index file
// exists. The Location is relative to the last segment the client sent,
// so it always stays on the same origin (Caddy's fix for
// /%2Fevil.com%2F..%2Fsub).
func (p *parser) phpCanonical(d *caddyfile.Dispenser, dirIndex string) site.Node {
	t, _ := route.ParseTemplate(dirIndex, route.TemplateOptions{})
	notSlash, _ := route.NewPath([]string{"*/"})
	to, err := route.ParseTemplate("./{http.request.orig_uri.path.file_escaped}/{http.request.orig_uri.prefixed_query}", route.TemplateOptions{})
	if err != nil {
		p.errf(d, "php_fastcgi: %v", err)
	}
	return site.Node{Match: route.All{&site.File{Try: []route.Template{t}}, route.Not{route.All{notSlash}}},
		Do: &site.Redirect{Status: 308, To: to}}
}
