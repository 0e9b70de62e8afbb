package config

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

var siteDirectives = []string{"reverse_proxy", "php_fastcgi", "handle", "handle_path", "route", "redir", "respond",
	"header", "request_header", "uri", "rewrite", "abort", "basic_auth", "root", "file_server", "try_files",
	"request_body", "log_skip", "log", "forward_auth", "error", "handle_errors", "copy_response",
	"copy_response_headers", "intercept", "method", "encode", "vars", "map", "invoke", "templates", "tls", "@name (a named matcher)"}

// implemented are the route directives pollproxy compiles, sorted in
// the configuration's directive order (order.go; handle_path sorts as
// handle, skip_log is log_skip's older name and basicauth basic_auth's,
// which Caddy still reads and sorts just before them).
var implemented = set("map", "vars", "invoke", "templates", "root", "skip_log", "log_skip", "header", "copy_response_headers", "request_body",
	"redir", "method", "rewrite", "uri", "try_files", "basicauth", "basic_auth", "forward_auth",
	"request_header", "encode", "intercept", "handle", "route", "abort", "error", "copy_response", "respond",
	"reverse_proxy", "php_fastcgi", "file_server")

// value is one routing directive before sorting: Caddy's "config value".
type value struct {
	directive string   // as sorted: handle_path is handle
	paths     []string // the patterns when the matcher is one path matcher
	matched   bool     // the directive has a matcher
	node      site.Node
}

func (p *parser) site(b caddyfile.ServerBlock) {
	s := &Site{Pos: tokPos(b.Keys[0])}
	for _, k := range b.Keys {
		a, err := parseAddress(k.Text)
		if err != nil {
			p.errAt(tokPos(k), "site address %q: %v", k.Text, err)
			continue
		}
		s.Addrs = append(s.Addrs, a)
	}
	p.named, p.cur = map[string]route.Matcher{}, s
	var ds, errs []*caddyfile.Dispenser
	seenTLS := false
	for _, seg := range b.Segments {
		d := caddyfile.NewDispenser(seg)
		d.Next()
		if d.Val() == "bind" {
			s.bind = true // refused below, as not supported
		}
		if d.Val() == "log" {
			p.siteLog(s, d)
			continue
		}
		if d.Val() == "handle_errors" {
			errs = append(errs, d)
			continue
		}
		if d.Val() == "tls" {
			if seenTLS {
				p.errf(d, "tls: a site has one tls directive (the first is at %s)", s.TLS.Pos)
				continue
			}
			seenTLS = true
			s.TLS = p.tls(d)
			continue
		}
		d.Reset()
		ds = append(ds, d)
	}
	nodes := p.routeList(s, ds, true)
	s.Routes = &site.Table{Nodes: nodes}
	for _, d := range errs {
		s.Routes.Errors = append(s.Routes.Errors, p.handleErrors(s, d))
	}
	// Caddy tries the handle_errors blocks with status codes first.
	sort.SliceStable(s.Routes.Errors, func(i, j int) bool {
		return s.Routes.Errors[i].Match != nil && s.Routes.Errors[j].Match == nil
	})
	s.Routes.Proxies = len(s.Proxies)
	// A site whose routes answer nothing (only header or rewrite, only
	// log, or nothing at all, also after imports of empty files) gets
	// Caddy's empty 200.
	p.cfg.Sites = append(p.cfg.Sites, s)
}

// routeList compiles one level of directives: named matchers first (they
// may be used before they are defined), then each directive; sorted into
// Caddy's directive order unless this is a route block.
func (p *parser) routeList(s *Site, ds []*caddyfile.Dispenser, ordered bool) []site.Node {
	var rest []*caddyfile.Dispenser
	for _, d := range ds {
		d.Next()
		if strings.HasPrefix(d.Val(), "@") {
			p.namedMatcher(d)
			continue
		}
		d.Reset()
		rest = append(rest, d)
	}
	var vals []value
	for _, d := range rest {
		if v, ok := p.directive(s, d); ok {
			vals = append(vals, v)
		}
	}
	if ordered {
		sortValues(vals, p.rank())
	}
	handles := 0
	for _, v := range vals {
		if v.directive == "handle" {
			handles++
		}
	}
	nodes := make([]site.Node, len(vals))
	for i, v := range vals {
		nodes[i] = v.node
		switch {
		case v.directive == "handle" && handles > 1:
			nodes[i].Exclusive = 1
		case v.directive == "rewrite":
			nodes[i].Exclusive = 2
		case v.directive == "root": // as in Caddy: roots never cascade
			nodes[i].Exclusive = 3
		}
	}
	return nodes
}

// sortValues is Caddy's sortRoutes: directive order (rank) first; within
// one directive, a single path matcher sorts longest (trailing * trimmed)
// first, and routes with a matcher before those without.
func sortValues(vals []value, rank map[string]int) {
	sort.SliceStable(vals, func(i, j int) bool {
		a, b := vals[i], vals[j]
		if a.directive != b.directive {
			return rank[a.directive] < rank[b.directive]
		}
		if len(a.paths) == 1 && len(b.paths) == 1 {
			at, bt := strings.TrimSuffix(a.paths[0], "*"), strings.TrimSuffix(b.paths[0], "*")
			if at == bt {
				return len(a.paths[0]) < len(b.paths[0])
			}
			if len(at) == len(bt) {
				return at < bt
			}
			return len(at) > len(bt)
		}
		return a.matched && !b.matched
	})
}

// directive compiles one site directive.
func (p *parser) directive(s *Site, d *caddyfile.Dispenser) (value, bool) {
	d.Next()
	name := d.Val()
	v := value{directive: name}
	if !implemented[name] && name != "handle_path" {
		switch {
		case name == "tls" || name == "log" || name == "handle_errors":
			p.errf(d, "%s: belongs at the top of a site block, not inside %s", name, "a route")
		case unsupportedDirectives[name]:
			p.errf(d, "%s is not supported by pollproxy", name)
		default:
			p.errf(d, "unknown directive %q (want one of %s)", name, strings.Join(siteDirectives, ", "))
		}
		d.RemainingArgs()
		skipBlock(d)
		return v, false
	}
	var m route.Matcher
	var paths []string
	matched, ok := false, true
	// Caddy reads a rewrite or a root with one argument as its target,
	// never as a matcher: "rewrite /index.html", "root /srv"; try_files
	// takes no matcher.
	if (name != "rewrite" && name != "root" || d.CountRemainingArgs() != 1) && name != "try_files" {
		m, paths, matched, ok = p.matcherToken(d)
	}
	if !ok {
		d.RemainingArgs()
		skipBlock(d)
		return v, false
	}
	v.node.Match, v.paths, v.matched = m, paths, matched
	n := &v.node
	switch name {
	case "reverse_proxy":
		rp := p.reverseProxy(d)
		n.Do = &site.Proxy{Index: len(s.Proxies), Responses: rp.Responses}
		s.Proxies = append(s.Proxies, &rp)
	case "php_fastcgi":
		p.phpFastCGI(d, s, n)
	case "handle", "route", "handle_path":
		g := &site.Group{}
		if args := d.RemainingArgs(); len(args) > 0 {
			p.errf(d, "%s: want a matcher and a block, not %q", name, args[0])
		}
		if name == "handle_path" {
			v.directive = "handle"
			if len(paths) != 1 || !matched {
				p.errf(d, "handle_path: want one path prefix, e.g. handle_path /api/* { ... }")
			} else {
				// Lower case: the strip ignores case, as the path
				// matcher does (and Caddy's strip).
				g.Strip = strings.ToLower(strings.TrimSuffix(paths[0], "*"))
			}
		}
		var sub []*caddyfile.Dispenser
		for nest := d.Nesting(); d.NextBlock(nest); {
			sub = append(sub, d.NewFromNextSegment())
		}
		g.Children = p.routeList(s, sub, name != "route")
		n.Do = g
	case "redir":
		p.redir(d, n)
	case "respond":
		p.respond(d, n)
	case "header", "request_header":
		p.header(d, n, name)
	case "rewrite":
		args := d.RemainingArgs()
		if len(args) != 1 {
			p.errf(d, "rewrite: want [matcher] target, e.g. rewrite /old /new or rewrite * /index.html")
			return v, false
		}
		t, err := route.ParseTemplate(args[0], route.TemplateOptions{ReplaceAll: true})
		if err != nil {
			p.errf(d, "rewrite: %v", err)
			return v, false
		}
		n.Do = &site.Rewrite{To: t}
	case "uri":
		p.uri(d, n)
	case "basic_auth", "basicauth":
		p.basicAuth(d, n, name)
	case "root":
		p.root(d, n)
	case "file_server":
		p.fileServer(d, n)
	case "try_files":
		p.tryFiles(d, n)
	case "forward_auth":
		p.forwardAuth(d, s, n)
	case "error":
		p.errorDirective(d, n)
	case "copy_response", "copy_response_headers":
		p.copyResponse(d, n, name)
	case "intercept":
		p.intercept(d, n)
	case "method":
		args := d.RemainingArgs()
		if len(args) != 1 {
			p.errf(d, "method: want [matcher] METHOD, e.g. method GET")
			return v, false
		}
		n.Do = &site.SetMethod{Method: strings.ToUpper(args[0])}
	case "encode":
		p.encode(d, n)
	case "vars":
		p.varsDirective(d, n)
	case "map":
		p.mapDirective(d, n)
		return v, true
	case "invoke":
		p.invoke(s, d, n)
		return v, true
	case "templates":
		p.templatesDirective(d, n)
		return v, true
	case "abort":
		if args := d.RemainingArgs(); len(args) > 0 {
			p.errf(d, "abort: takes only a matcher")
		}
		n.Do = &site.Abort{}
	case "log_skip", "skip_log":
		v.directive = "log_skip"
		if args := d.RemainingArgs(); len(args) > 0 {
			p.errf(d, "%s: takes only a matcher", name)
		}
		n.Do = &site.LogSkip{}
	case "request_body":
		p.requestBody(d, n)
		return v, true
	}
	if at, ok := openedBlock(d); ok {
		p.errAt(at, "%s: takes no block here", name)
	}
	return v, true
}

// requestBody reads request_body [matcher] { max_size SIZE }.
func (p *parser) requestBody(d *caddyfile.Dispenser, n *site.Node) {
	rb := &site.RequestBody{}
	n.Do = rb
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "request_body: want a matcher and a block: request_body { max_size 10MB }")
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "max_size":
			if v, ok := p.oneArg(d, "request_body: max_size", "a size such as 10MB"); ok {
				size, err := parseSize(v)
				if err != nil || size < 0 {
					p.errf(d, "request_body: max_size: %q: want a size such as 10MB", v)
				}
				rb.MaxBody = int64(size)
			}
		case "set":
			p.errf(d, "request_body: set is not supported by pollproxy")
			d.RemainingArgs()
		default:
			p.errf(d, "request_body: unrecognized subdirective %q (want max_size)", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
}

// redir reads redir [matcher] to [code], with Caddy's codes: temporary
// (302, the default), permanent (301), html, or a 3xx number.
func (p *parser) redir(d *caddyfile.Dispenser, n *site.Node) {
	r := &site.Redirect{}
	args := d.RemainingArgs()
	if len(args) == 0 || len(args) > 2 {
		p.errf(d, "redir: want [matcher] to [temporary|permanent|html|3xx]")
		return
	}
	n.Do = r
	r.Status = http.StatusFound
	if len(args) == 2 {
		switch c := args[1]; c {
		case "temporary":
		case "permanent":
			r.Status = http.StatusMovedPermanently
		case "html":
			r.HTML, r.Status = true, 200
		default:
			code, err := strconv.Atoi(c)
			if err != nil || code < 300 || code > 308 {
				p.errf(d, "redir: %q: want temporary, permanent, html or a status in 300-308", c)
				return
			}
			r.Status = code
		}
	}
	t, err := route.ParseTemplate(args[0], route.TemplateOptions{})
	if err != nil {
		p.errf(d, "redir: %v", err)
		return
	}
	r.To = t
	if loc, ok := t.Literal(); ok {
		r.Static = site.Redirector(r.Status, loc, r.HTML)
	}
}

// respond reads respond [matcher] [status|body [status]] { body close }.
func (p *parser) respond(d *caddyfile.Dispenser, n *site.Node) {
	r := &site.Respond{}
	args := d.RemainingArgs()
	status, body := 200, ""
	r.StatusUnset = true
	switch len(args) {
	case 0:
	case 1:
		if code, err := strconv.Atoi(args[0]); err == nil && len(args[0]) == 3 {
			status, r.StatusUnset = code, false
		} else {
			body = args[0]
		}
	case 2:
		body = args[0]
		r.StatusUnset = false
		code, err := strconv.Atoi(args[1])
		if strings.Contains(args[1], "{") {
			// A status from a placeholder ({err.status_code}), read when
			// the response is written, as Caddy does.
			t, terr := route.ParseTemplate(args[1], route.TemplateOptions{})
			if terr != nil {
				p.errf(d, "respond: status: %v", terr)
				return
			}
			r.StatusT, code, err = t, 200, nil
		}
		if err != nil {
			p.errf(d, "respond: status %q: want a number such as 404", args[1])
			return
		}
		status = code
	default:
		p.errf(d, "respond: want [matcher] [body] [status]")
		return
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		switch sub := d.Val(); sub {
		case "body":
			if body != "" {
				p.errf(d, "respond: body already specified") // Caddy's refusal
				d.RemainingArgs()
				continue
			}
			if v, ok := p.oneArg(d, "respond: body", "the body"); ok {
				body = v
			}
		case "close":
			if d.NextArg() {
				p.errf(d, "respond: close takes no argument")
				d.RemainingArgs()
			}
			r.Close = true
		default:
			p.errf(d, "respond: unknown option %q (want body, close)", sub)
			d.RemainingArgs()
		}
	}
	if status < 100 || status > 599 || (status < 200 && status != 103 && status != 100) {
		p.errf(d, "respond: status %d: want 200-599", status)
		return
	}
	// Caddy fills the placeholders it knows in a body and leaves any other
	// {...} as written (a JSON body stays JSON).
	t, err := route.ParseTemplate(body, route.TemplateOptions{KeepUnknown: true})
	if err != nil {
		p.errf(d, "respond: %v", err)
		return
	}
	n.Do = r
	r.Status, r.Body = status, t
	if lit, ok := t.Literal(); ok {
		r.Static = site.Responder(status, lit)
	}
}

// header reads header / request_header: one edit on the line, or a block
// of them. A header edits the response at once (EditResponse.Immediate) unless,
// as in Caddy, it has "defer", a deletion, a >Field edit or a match.
func (p *parser) header(d *caddyfile.Dispenser, n *site.Node, name string) {
	response := name == "header"
	var ops []route.HeaderOp
	var match *route.ResponseMatch
	deferred := false
	add := func(args []string) {
		op, err := route.ParseHeaderOp(args, response)
		if err != nil {
			p.errf(d, "%s: %v", name, err)
			return
		}
		if op.Op == '-' || strings.HasPrefix(args[0], ">") {
			deferred = true
		}
		ops = append(ops, op)
	}
	if args := d.RemainingArgs(); len(args) > 0 {
		add(args)
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		if d.Val() == "defer" && response {
			deferred = true
			continue
		}
		if d.Val() == "match" {
			if !response {
				p.errf(d, "%s: match is for response edits (header), as in Caddy", name)
				skipBlock(d)
				continue
			}
			if match == nil {
				match = &route.ResponseMatch{}
			}
			p.responseMatch(d, match, "header")
			continue
		}
		args := append([]string{d.Val()}, d.RemainingArgs()...)
		add(args)
	}
	if len(ops) == 0 {
		p.errf(d, "%s: want a field edit, e.g. %s Strict-Transport-Security max-age=31536000", name, name)
	}
	if response {
		n.Do = &site.EditResponse{Ops: ops, Match: match, Immediate: !deferred && match == nil}
	} else {
		n.Do = &site.EditRequest{Ops: ops}
	}
}

// responseMatch reads a response matcher, on the line (match status 2xx)
// or as a block of status and header lines.
func (p *parser) responseMatch(d *caddyfile.Dispenser, m *route.ResponseMatch, directive string) {
	line := func(args []string) {
		var err error
		switch args[0] {
		case "status":
			err = m.AddStatus(args[1:])
		case "header":
			err = m.AddHeader(args[1:])
		default:
			err = fmt.Errorf("unknown response matcher %q (want status, header)", args[0])
		}
		if err != nil {
			p.errf(d, "%s: match: %v", directive, err)
		}
	}
	if args := d.RemainingArgs(); len(args) > 0 {
		line(args)
		return
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		line(append([]string{d.Val()}, d.RemainingArgs()...))
	}
}

// uri reads uri [matcher] strip_prefix|strip_suffix|replace ...
func (p *parser) uri(d *caddyfile.Dispenser, n *site.Node) {
	u := &site.URI{}
	args := d.RemainingArgs()
	n.Do = u
	if len(args) == 0 {
		p.errf(d, "uri: want strip_prefix, strip_suffix or replace")
		return
	}
	switch args[0] {
	case "strip_prefix", "strip_suffix":
		if len(args) != 2 {
			p.errf(d, "uri: %s wants one argument", args[0])
			return
		}
		u.Op, u.Find = site.StripSuffix, args[1]
		if args[0] == "strip_prefix" {
			u.Op = site.StripPrefix
			if !strings.HasPrefix(u.Find, "/") {
				u.Find = "/" + u.Find
			}
			u.Find = strings.ToLower(u.Find) // the strip ignores case, as in Caddy
		}
	case "replace":
		if len(args) != 3 && len(args) != 4 {
			p.errf(d, "uri: replace wants find replacement [limit]")
			return
		}
		u.Op, u.Find, u.ReplBy = site.Replace, args[1], args[2]
		if len(args) == 4 {
			l, err := strconv.Atoi(args[3])
			if err != nil || l < 0 {
				p.errf(d, "uri: replace limit %q: want a whole number", args[3])
			}
			u.Limit = l
		}
	case "path_regexp":
		if len(args) != 3 {
			p.errf(d, "uri: path_regexp wants a regular expression and a replacement")
			return
		}
		re, err := regexp.Compile(args[1])
		if err != nil {
			p.errf(d, "uri: path_regexp %q: %v", args[1], err)
			return
		}
		u.Op, u.Regexp, u.ReplBy = site.RegexpPath, re, args[2]
	case "query":
		u.Op, u.Query = site.EditQuery, &route.QueryOps{}
		if len(args) > 1 {
			if err := u.Query.ParseQueryOp(args[1:]); err != nil {
				p.errf(d, "uri: %v", err)
			}
			if at, ok := openedBlock(d); ok {
				p.errAt(at, "uri: query edits go on the line or in a block, not both (as in Caddy)")
			}
			return
		}
		for nest := d.Nesting(); d.NextBlock(nest); {
			if err := u.Query.ParseQueryOp(append([]string{d.Val()}, d.RemainingArgs()...)); err != nil {
				p.errf(d, "uri: %v", err)
			}
		}
		if len(u.Query.Rename)+len(u.Query.Set)+len(u.Query.Add)+len(u.Query.Replace)+len(u.Query.Delete) == 0 {
			p.errf(d, "uri: query wants an edit on the line or in a block")
		}
	default:
		p.errf(d, "uri: unknown operation %q (want strip_prefix, strip_suffix, replace, path_regexp, query)", args[0])
	}
}

// parseAddress reads a site address: [https://]host[:port], :port, or
// *.example.com[:port].
func parseAddress(text string) (Address, error) {
	a := Address{Original: text}
	rest := text
	switch {
	case strings.HasPrefix(rest, "https://"):
		rest, a.Scheme = strings.TrimPrefix(rest, "https://"), "https"
	case strings.HasPrefix(rest, "http://"):
		rest, a.Scheme = strings.TrimPrefix(rest, "http://"), "http"
	case strings.Contains(rest, "://"):
		return a, fmt.Errorf("unsupported scheme (want http://, https:// or none)")
	}
	if strings.ContainsAny(rest, "/?#") {
		return a, fmt.Errorf("paths in site addresses are not supported by pollproxy (want host, host:port or :port; route paths with handle)")
	}
	host, port := rest, ""
	if h, pt, err := net.SplitHostPort(rest); err == nil {
		host, port = h, pt
	} else if strings.HasPrefix(rest, "[") || strings.Count(rest, ":") == 1 {
		return a, fmt.Errorf("want host, host:port or :port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return a, fmt.Errorf("port %q: want 1-65535", port)
		}
		a.Port = n
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if strings.Contains(host, "*") {
		if !strings.HasPrefix(host, "*.") || strings.Contains(host[2:], "*") || len(host) < 3 {
			return a, fmt.Errorf("a wildcard replaces the leftmost label only (want *.example.com)")
		}
	}
	a.Host = host
	return a, nil
}
