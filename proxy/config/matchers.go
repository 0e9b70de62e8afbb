package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
)

var matcherNames = "path, path_regexp, host, method, header, header_regexp, query, remote_ip, client_ip, protocol, vars, vars_regexp, file, not, expression"

// matcherToken reads the optional matcher that starts a directive's
// arguments, as Caddy does: "*" (every request), a path ("/api/*") or a
// named matcher ("@name"). paths are the patterns when the matcher is a
// single path matcher, for Caddy's sort by specificity.
func (p *parser) matcherToken(d *caddyfile.Dispenser) (m route.Matcher, paths []string, matched, ok bool) {
	if !d.NextArg() {
		return nil, nil, false, true
	}
	tok := d.Val()
	switch {
	case tok == "*":
		return nil, nil, false, true
	case strings.HasPrefix(tok, "/"):
		pm, err := route.NewPath([]string{tok})
		if err != nil {
			p.errf(d, "%v", err)
			return nil, nil, false, false
		}
		return pm, []string{tok}, true, true
	case strings.HasPrefix(tok, "@"):
		nm, found := p.named[tok]
		if !found {
			p.errf(d, "matcher %s is not defined in this site", tok)
			return nil, nil, false, false
		}
		if pm, isPath := nm.(route.Path); isPath && len(pm.Patterns) == 1 {
			paths = pm.Patterns
		}
		return nm, paths, true, true
	}
	d.Prev()
	return nil, nil, false, true
}

// line is one matcher line of a set: its type, arguments and, for not,
// the dispenser of its block.
type line struct {
	d    *caddyfile.Dispenser
	pos  Pos
	typ  string
	args []string
	sub  []*caddyfile.Dispenser
}

// namedMatcher reads "@name type args", "@name { type args ... }" or
// "@name `expression`".
func (p *parser) namedMatcher(d *caddyfile.Dispenser) {
	name := d.Val()
	pos := dpos(d)
	if _, dup := p.named[name]; dup {
		p.errf(d, "matcher %s is defined twice", name)
	}
	var lines []line
	if d.NextArg() {
		typ, quoted := d.Val(), d.Token().Quoted()
		if rest := d.RemainingArgs(); quoted && len(rest) == 0 {
			lines = append(lines, line{d: d, pos: pos, typ: "expression", args: []string{typ}})
		} else {
			l := line{d: d, pos: pos, typ: typ, args: rest}
			for nest := d.Nesting(); d.NextBlock(nest); {
				l.sub = append(l.sub, d.NewFromNextSegment())
			}
			lines = append(lines, l)
		}
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		lines = append(lines, p.matcherLine(d, d.Val()))
	}
	if len(lines) == 0 {
		p.errAt(pos, "matcher %s: want matchers (%s)", name, matcherNames)
		return
	}
	set, ok := p.matcherSet(lines, strings.TrimPrefix(name, "@"))
	if !ok {
		p.named[name] = route.All{} // defined, so uses report nothing more
		return
	}
	if len(set) == 1 {
		p.named[name] = set[0]
		return
	}
	p.named[name] = set
}

// matcherLine reads the rest of a matcher line, with the block of a not.
func (p *parser) matcherLine(d *caddyfile.Dispenser, typ string) line {
	l := line{d: d, pos: dpos(d), typ: typ, args: d.RemainingArgs()}
	for nest := d.Nesting(); d.NextBlock(nest); {
		l.sub = append(l.sub, d.NewFromNextSegment())
	}
	return l
}

// matcherSet compiles matcher lines into one set, merging lines of one
// type as Caddy does (paths, hosts and methods are alternatives; header
// and query fields must all match). name is the named matcher's, which
// names the captures of a regexp matcher that names none.
func (p *parser) matcherSet(lines []line, name string) (route.All, bool) {
	var set route.All
	ok := true
	bad := func(l line, format string, args ...any) {
		p.errAt(l.pos, l.typ+": "+format, args...)
		ok = false
	}
	var paths, hosts, methods []string
	var header route.Header
	var query route.Query
	var remote, client []string
	var pathLine, remoteLine, clientLine line
	var varLines, varReLines []line
	pathRegexps := 0
	for _, l := range lines {
		if unsupportedMatchers[l.typ] { // before its arguments: "@vars vars" would want some
			p.errAt(l.pos, "matcher %s is not supported by pollproxy", l.typ)
			ok = false
			continue
		}
		if len(l.args) == 0 && l.typ != "not" && l.typ != "file" {
			bad(l, "want arguments")
			continue
		}
		switch l.typ {
		case "path":
			paths, pathLine = append(paths, l.args...), l
		case "host":
			hosts = append(hosts, l.args...)
		case "method":
			for _, a := range l.args {
				methods = append(methods, strings.ToUpper(a))
			}
		case "path_regexp":
			if pathRegexps++; pathRegexps > 1 {
				// As Caddy: a second one would silently replace the first.
				bad(l, "only one per named matcher (combine them with | or use an expression)")
				continue
			}
			capName, re, err := regexpArg(l.args, name)
			if err != nil {
				bad(l, "%v", err)
				continue
			}
			set = append(set, route.PathRegexp{Re: re, Name: capName})
		case "header":
			f, err := route.ParseHeaderField(l.args)
			if err != nil {
				bad(l, "%v", err)
				continue
			}
			merged := false
			for i := range header {
				if header[i].Name == f.Name && !f.Absent && !header[i].Absent {
					header[i].Values, merged = append(header[i].Values, f.Values...), true
				}
			}
			if !merged {
				header = append(header, f)
			}
		case "header_regexp":
			args, capName := l.args, name
			if len(args) == 3 {
				capName, args = args[0], args[1:]
			}
			if len(args) != 2 {
				bad(l, "want [name] field regexp")
				continue
			}
			re, err := regexp.Compile(args[1])
			if err != nil {
				bad(l, "%q: %v", args[1], err)
				continue
			}
			set = append(set, route.HeaderRegexp{Name: strings.ToLower(args[0]), Re: re, Capture: capName})
		case "query":
			for _, a := range l.args {
				k, v, found := strings.Cut(a, "=")
				if !found {
					bad(l, "%q: want key=value (value * for any)", a)
					continue
				}
				merged := false
				for i := range query {
					if query[i].Key == k {
						query[i].Values, merged = append(query[i].Values, v), true
					}
				}
				if !merged {
					query = append(query, route.QueryParam{Key: k, Values: []string{v}})
				}
			}
		case "remote_ip":
			if l.args[0] == "forwarded" {
				bad(l, "forwarded is not supported by pollproxy (use client_ip with servers { trusted_proxies })")
				continue
			}
			remote, remoteLine = append(remote, l.args...), l
		case "client_ip":
			client, clientLine = append(client, l.args...), l
		case "protocol":
			switch l.args[0] {
			case "http", "https", "http/1.0", "http/1.1", "http/2", "http/1.1+", "http/2+":
				set = append(set, route.Protocol(l.args[0]))
			default:
				bad(l, "%s is not supported by pollproxy (want http, https, http/1.0, http/1.1, http/2)", l.args[0])
			}
		case "not":
			var inner []line
			if len(l.args) > 0 {
				inner = append(inner, line{d: l.d, pos: l.pos, typ: l.args[0], args: l.args[1:]})
			}
			for _, sd := range l.sub {
				sd.Next()
				inner = append(inner, p.matcherLine(sd, sd.Val()))
			}
			if len(inner) == 0 {
				bad(l, "want a matcher or a block of them")
				continue
			}
			s, good := p.matcherSet(inner, name)
			if !good {
				ok = false
				continue
			}
			set = append(set, route.Not{s})
		case "file":
			m, good := p.fileMatcher(l)
			if !good {
				ok = false
				continue
			}
			set = append(set, m)
		case "vars":
			varLines = append(varLines, l)
		case "vars_regexp":
			varReLines = append(varReLines, l)
		case "expression":
			m, err := route.CompileExpression(strings.Join(l.args, " "), name)
			if err != nil {
				bad(l, "%v", err)
				continue
			}
			set = append(set, m)
		default:
			p.errAt(l.pos, "unknown matcher %q (want %s)", l.typ, matcherNames)
			ok = false
		}
	}
	if paths != nil {
		pm, err := route.NewPath(paths)
		if err != nil {
			bad(pathLine, "%v", err)
		}
		set = append([]route.Matcher{pm}, set...)
	}
	if hosts != nil {
		set = append(set, route.NewHost(hosts))
	}
	if methods != nil {
		set = append(set, route.Method(methods))
	}
	if header != nil {
		set = append(set, header)
	}
	if query != nil {
		set = append(set, query)
	}
	if varLines != nil {
		m, err := varsMatcher(varLines)
		if err != nil {
			bad(varLines[0], "%v", err)
		}
		set = append(set, m)
	}
	if varReLines != nil {
		m, err := varsRegexpMatcher(varReLines, name)
		if err != nil {
			bad(varReLines[0], "%v", err)
		}
		set = append(set, m)
	}
	if remote != nil {
		r, err := route.ParseRanges(remote)
		if err != nil {
			bad(remoteLine, "%v", err)
		}
		set = append(set, route.RemoteIP(r))
	}
	if client != nil {
		r, err := route.ParseRanges(client)
		if err != nil {
			bad(clientLine, "%v", err)
		}
		set = append(set, route.ClientIP(r))
	}
	return set, ok
}

// regexpArg reads path_regexp's [name] regexp; without a name the
// captures take the named matcher's, matcher.
func regexpArg(args []string, matcher string) (string, *regexp.Regexp, error) {
	name := matcher
	if len(args) == 2 {
		name, args = args[0], args[1:]
	}
	if len(args) != 1 {
		return "", nil, fmt.Errorf("want [name] regexp")
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		return "", nil, fmt.Errorf("%q: %v", args[0], err)
	}
	return name, re, nil
}
