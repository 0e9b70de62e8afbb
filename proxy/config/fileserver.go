package config

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// literalPath reads a root or hide path: {env.*} is filled at load;
// another placeholder (a root per {host}, say) is not supported by
// pollproxy, since a value the client sends would pick the directory.
func (p *parser) literalPath(d *caddyfile.Dispenser, directive, s string) (string, bool) {
	return p.literal(d, directive, s, "placeholders in %q are not supported by pollproxy (want a path; {env.*} is read at load)")
}

// root reads root [<matcher>] <path>: one argument is the path, never a
// matcher (Caddy's "root /srv").
func (p *parser) root(d *caddyfile.Dispenser, n *site.Node) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		p.errf(d, "root: want [matcher] path, e.g. root * /srv")
		return
	}
	if v, ok := p.literalPath(d, "root", args[0]); ok {
		n.Do = &site.SetRoot{Root: v}
	}
}

// fileServer reads file_server [<matcher>] [browse] { ... }.
func (p *parser) fileServer(d *caddyfile.Dispenser, n *site.Node) {
	const name = "file_server"
	fs := &site.FileServer{}
	var opt fileserver.Options
	if args := d.RemainingArgs(); len(args) > 0 {
		if args[0] == "browse" && len(args) == 1 {
			opt.Browse = &fileserver.Browse{}
		} else {
			p.errf(d, "file_server: want [matcher] [browse], not %q", args[0])
		}
	}
	var hide []string
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "root":
			if v, ok := p.oneArg(d, "file_server: root", "a path"); ok {
				fs.Root, _ = p.literalPath(d, name, v)
			}
		case "hide":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "file_server: hide wants files or patterns")
			}
			for _, a := range args {
				if v, ok := p.literalPath(d, name, a); ok {
					hide = append(hide, v)
				}
			}
		case "index":
			if opt.Index = d.RemainingArgs(); len(opt.Index) == 0 {
				p.errf(d, "file_server: index wants file names")
			}
		case "precompressed":
			opt.Precompressed = d.RemainingArgs()
			if len(opt.Precompressed) == 0 {
				opt.Precompressed = fileserver.DefaultPrecompressed
			}
			for _, e := range opt.Precompressed {
				if fileserver.Suffix(e) == "" {
					p.errf(d, "file_server: precompressed %q: want br, zstd or gzip", e)
				}
			}
		case "status":
			if v, ok := p.oneArg(d, "file_server: status", "a status"); ok {
				code, err := strconv.Atoi(v)
				if err != nil || code < 200 || code > 599 {
					p.errf(d, "file_server: status %q: want 200-599 (placeholders are not supported by pollproxy here)", v)
				}
				opt.Status = code
			}
		case "disable_canonical_uris":
			if d.NextArg() {
				p.errf(d, "file_server: disable_canonical_uris takes no argument")
			}
			opt.NoCanonical = true
		case "pass_thru":
			if d.NextArg() {
				p.errf(d, "file_server: pass_thru takes no argument")
			}
			opt.PassThru = true
		case "browse":
			if opt.Browse != nil {
				p.errf(d, "file_server: browsing is already configured")
				d.RemainingArgs()
				skipBlock(d)
				continue
			}
			opt.Browse = p.browse(d)
		case "fs", "etag_file_extensions":
			p.errf(d, "file_server: %s is not supported by pollproxy", sub)
			d.RemainingArgs()
			skipBlock(d)
		default:
			p.errf(d, "file_server: unknown subdirective %q (want root, hide, index, browse, precompressed, status, disable_canonical_uris, pass_thru)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	// Caddy hides its configuration files: the Caddyfile, and here the
	// imported file the directive is in. Without a slash an entry would
	// hide every file of that name, so each is made a path.
	for _, f := range []string{p.cfg.File, d.File()} {
		if f == "" {
			continue
		}
		if f = filepath.Clean(f); !strings.Contains(f, "/") {
			f = "./" + f
		}
		hide = append(hide, f)
	}
	opt.Hide = fileserver.NewHide(hide)
	fs.Files = fileserver.New(opt)
	n.Do = fs
}

// browse reads file_server's browse [<template_file>] { reveal_symlinks;
// sort <by> [<order>]; file_limit <n>; plain_time_format <layout> }, with
// the checks Caddy makes (at parse and at provision). A template file is
// not supported by pollproxy: the listing page is its own.
func (p *parser) browse(d *caddyfile.Dispenser) *fileserver.Browse {
	b := &fileserver.Browse{}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "file_server: browse %s: a template file is not supported by pollproxy (its listing page is its own)", args[0])
	}
	var sorts []string
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "reveal_symlinks":
			if d.NextArg() {
				p.errf(d, "file_server: browse: reveal_symlinks takes no argument")
				d.RemainingArgs()
			}
			if b.RevealSymlinks {
				p.errf(d, "file_server: browse: Symlinks path reveal is already enabled")
			}
			b.RevealSymlinks = true
		case "sort":
			for _, v := range d.RemainingArgs() {
				switch v {
				case fileserver.SortName, fileserver.SortNameDirFirst, fileserver.SortSize, fileserver.SortTime,
					fileserver.OrderAsc, fileserver.OrderDesc:
					sorts = append(sorts, v)
				default:
					p.errf(d, "file_server: browse: unknown sort option '%s'", v)
				}
			}
			for i, v := range sorts {
				switch i {
				case 0:
					if v != fileserver.SortName && v != fileserver.SortNameDirFirst && v != fileserver.SortSize && v != fileserver.SortTime {
						p.errf(d, "file_server: browse: sort: the first option must be one of name, namedirfirst, size, time, but got %s", v)
					}
					b.Sort = v
				case 1:
					if v != fileserver.OrderAsc && v != fileserver.OrderDesc {
						p.errf(d, "file_server: browse: sort: the second option must be one of asc, desc, but got %s", v)
					}
					b.Order = v
				default:
					p.errf(d, "file_server: browse: sort: only max 2 sort options are allowed, but got %d", i+1)
				}
			}
		case "file_limit":
			args := d.RemainingArgs()
			n, err := 0, error(nil)
			if len(args) == 1 {
				n, err = strconv.Atoi(args[0])
			}
			switch {
			case len(args) != 1 || err != nil:
				p.errf(d, "file_server: browse: file_limit should have an integer value")
			case b.FileLimit != 0:
				p.errf(d, "file_server: browse: file_limit is already enabled")
			case n < 0 || n > fileserver.MaxFileLimit:
				p.errf(d, "file_server: browse: file_limit %d is not supported by pollproxy (want 0 to %d: a listing is built in memory)", n, fileserver.MaxFileLimit)
			default:
				b.FileLimit = n
			}
		case "plain_time_format":
			args := d.RemainingArgs()
			switch {
			case len(args) == 0:
				p.errf(d, "file_server: browse: plain_time_format is missing a time layout argument")
			case len(args) > 1:
				p.errf(d, "file_server: browse: plain_time_format accepts exactly one time layout argument; enclose layouts containing spaces in quotes")
			case args[0] == "":
				p.errf(d, "file_server: browse: plain_time_format requires a non-empty time layout argument")
			case b.PlainTimeFormat != "":
				p.errf(d, "file_server: browse: plain_time_format is already set")
			default:
				b.PlainTimeFormat = args[0]
			}
		default:
			p.errf(d, "file_server: browse: unknown subdirective '%s' (want reveal_symlinks, sort, file_limit, plain_time_format)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	return b
}

// tryFiles reads try_files <files...> { policy ... } as Caddy expands it:
// a rewrite to the first that exists, matched by a file matcher; an
// entry with a query rewrites to its own query, so it is a route of its
// own, and the routes are one group (only the first that matches runs).
func (p *parser) tryFiles(d *caddyfile.Dispenser, n *site.Node) {
	files := d.RemainingArgs()
	if len(files) == 0 {
		p.errf(d, "try_files: want files to try, e.g. try_files {path} /index.html")
		return
	}
	policy := ""
	for nest := d.Nesting(); d.NextBlock(nest); {
		if d.Val() != "policy" {
			p.errf(d, "try_files: unknown option %q (want policy)", d.Val())
			d.RemainingArgs()
			continue
		}
		if v, ok := p.oneArg(d, "try_files: policy", "a policy"); ok {
			policy = p.tryPolicy(d, "try_files", v)
		}
	}
	g := &site.Group{}
	n.Do = g
	var try []route.Template
	flush := func(query string) {
		if len(try) == 0 {
			return
		}
		to, err := route.ParseTemplate(query, route.TemplateOptions{})
		if err != nil {
			p.errf(d, "try_files: %v", err)
		}
		g.Children = append(g.Children, site.Node{Exclusive: 1, Match: &site.File{Try: try, Policy: policy},
			Do: &site.Rewrite{FileTarget: true, To: to}})
		try = nil
	}
	for _, f := range files {
		file, query, hasQuery := strings.Cut(f, "?")
		t, ok := p.tryEntry(d, "try_files", file)
		if !ok {
			continue
		}
		if hasQuery {
			flush("")
			try = []route.Template{t}
			flush("?" + query)
			continue
		}
		try = append(try, t)
	}
	flush("")
}

func (p *parser) tryPolicy(d *caddyfile.Dispenser, label, v string) string {
	switch v {
	case "first_exist", "first_exist_fallback", "largest_size", "smallest_size", "most_recently_modified":
		return v
	}
	p.errf(d, "%s: unrecognized try policy: %s", label, v)
	return ""
}

// tryEntry compiles one candidate file; globs are not supported by
// pollproxy.
func (p *parser) tryEntry(d *caddyfile.Dispenser, label, s string) (route.Template, bool) {
	t, err := route.ParseTemplate(s, route.TemplateOptions{})
	if err != nil {
		p.errf(d, "%s: %v", label, err)
		return t, false
	}
	if strings.ContainsAny(s, "*[") {
		p.errf(d, "%s: glob patterns in %q are not supported by pollproxy", label, s)
		return t, false
	}
	return t, true
}

// fileMatcher reads Caddy's file matcher: "file <files...>" or a block
// of root, try_files, try_policy.
func (p *parser) fileMatcher(l line) (*site.File, bool) {
	m := &site.File{}
	ok := true
	add := func(d *caddyfile.Dispenser, files []string) {
		for _, f := range files {
			if strings.Contains(f, "?") {
				p.errAt(l.pos, "file: a query in %q is not supported by pollproxy in the matcher (try_files takes one)", f)
				ok = false
				continue
			}
			t, good := p.tryEntry(d, "file", f)
			ok = ok && good
			m.Try = append(m.Try, t)
		}
	}
	add(l.d, l.args)
	for _, sd := range l.sub {
		sd.Next()
		switch opt := sd.Val(); opt {
		case "root":
			if v, good := p.oneArg(sd, "file: root", "a path"); good {
				m.Root, good = p.literalPath(sd, "file", v)
				ok = ok && good
			}
		case "try_files":
			add(sd, sd.RemainingArgs())
		case "try_policy":
			if v, good := p.oneArg(sd, "file: try_policy", "a policy"); good {
				m.Policy = p.tryPolicy(sd, "file", v)
			}
		case "split_path":
			if m.Split = sd.RemainingArgs(); len(m.Split) == 0 {
				p.errf(sd, "file: split_path wants extensions such as .php")
				ok = false
			}
		case "fs":
			p.errf(sd, "file: %s is not supported by pollproxy", opt)
			ok = false
		default:
			p.errf(sd, "file: unknown option %q (want root, try_files, try_policy, split_path)", opt)
			ok = false
		}
	}
	return m, ok
}
