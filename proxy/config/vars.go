package config

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// scalar is a token's value as Caddy's configuration carries it: an
// unquoted number or boolean becomes one (ScalarVal), and a number goes
// through Caddy's JSON as a float, so "007" is 7 and "1.50" is 1.5 when
// the value is written out. literal reports a string as written (so a
// quoted "-" is a map output, not its "no output").
func scalar(d *caddyfile.Dispenser) (text string, literal bool) {
	switch v := d.ScalarVal().(type) {
	case int:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), false
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), false
	case bool:
		return strconv.FormatBool(v), false
	}
	return d.Val(), true
}

// varsDirective reads vars [matcher] [NAME VALUE] { NAME VALUE ... }.
func (p *parser) varsDirective(d *caddyfile.Dispenser, n *site.Node) {
	sv := &site.SetVars{}
	n.Do = sv
	one := func() {
		name := d.Val()
		if !d.NextArg() {
			p.errf(d, "vars: %s: want a value", name)
			return
		}
		value, _ := scalar(d)
		if d.NextArg() {
			p.errf(d, "vars: %s: want one value, got %q too", name, d.Val())
			d.RemainingArgs()
			return
		}
		opt := route.TemplateOptions{ReplaceAll: true}
		nt, err := route.ParseTemplate(name, opt)
		if err != nil {
			p.errf(d, "vars: %v", err)
			return
		}
		vt, err := route.ParseTemplate(value, opt)
		if err != nil {
			p.errf(d, "vars: %v", err)
			return
		}
		sv.Ops = append(sv.Ops, route.VarOp{Name: nt, Value: vt})
	}
	if d.NextArg() {
		one()
	}
	for nest := d.Nesting(); d.NextBlock(nest); {
		one()
	}
}

// shorthands are the Caddyfile's placeholder shorthands, which a map
// may not take as a destination (Caddy: "conflicts with a Caddyfile
// placeholder shorthand").
var shorthands = set("host", "hostport", "port", "orig_method", "orig_uri", "orig_path", "orig_dir",
	"orig_file", "orig_query", "orig_?query", "method", "uri", "%uri", "path", "%path", "dir", "file",
	"query", "%query", "?query", "remote", "remote_host", "remote_port", "scheme", "uuid", "tls_cipher",
	"tls_version", "tls_client_fingerprint", "tls_client_issuer", "tls_client_serial", "tls_client_subject",
	"tls_client_certificate_pem", "tls_client_certificate_der_base64", "upstream_hostport", "client_ip")

// mapDirective reads map [matcher] SOURCE DEST... { INPUT OUTPUT...
// default VALUE... }, as Caddy's map reads and validates it.
func (p *parser) mapDirective(d *caddyfile.Dispenser, n *site.Node) {
	at := dpos(d)
	args := d.RemainingArgs()
	if len(args) < 2 {
		p.errf(d, "map: want [matcher] SOURCE DESTINATION... { INPUT OUTPUT... }")
		skipBlock(d)
		return
	}
	opt := route.TemplateOptions{ReplaceAll: true}
	src, err := route.ParseTemplate(args[0], opt)
	if err != nil {
		p.errf(d, "map: source: %v", err)
	}
	m := &route.Map{Source: src}
	for j, dest := range args[1:] {
		if len(dest) < 3 || dest[0] != '{' || dest[len(dest)-1] != '}' || strings.Count(dest, "{") != 1 || strings.Count(dest, "}") != 1 {
			p.errf(d, "map: destination %d must be a placeholder and only a placeholder, but got '%s'", j, dest)
			continue
		}
		name := dest[1 : len(dest)-1]
		if shorthands[name] {
			p.errf(d, "map: destination %s conflicts with a Caddyfile placeholder shorthand", dest)
			continue
		}
		if strings.HasPrefix(name, "http.") && !strings.HasPrefix(name, "http.vars.") || strings.HasPrefix(name, "env.") {
			p.errf(d, "map: destination %s in Caddy's placeholder namespace is not supported by pollproxy", dest)
			continue
		}
		m.Dests = append(m.Dests, name)
	}
	seen := map[string]int{}
	for nest := d.Nesting(); d.NextBlock(nest); {
		in := d.Val()
		if in == "default" {
			if m.Defaults != nil {
				p.errf(d, "map: defaults already defined")
				d.RemainingArgs()
				continue
			}
			m.Defaults = []route.Template{}
			for d.NextArg() {
				t, err := route.ParseTemplate(d.Val(), opt)
				if err != nil {
					p.errf(d, "map: default: %v", err)
				}
				m.Defaults = append(m.Defaults, t)
			}
			if len(m.Defaults) > len(m.Dests) {
				p.errf(d, "map: %d destinations != %d defaults", len(m.Dests), len(m.Defaults))
			}
			for len(m.Defaults) < len(m.Dests) {
				m.Defaults = append(m.Defaults, route.Template{})
			}
			continue
		}
		mp := route.Mapping{Input: in}
		key := "=" + in
		if re, ok := strings.CutPrefix(in, "~"); ok {
			key = "~" + re
			c, err := regexp.Compile(re)
			if err != nil {
				p.errf(d, "map: compiling regexp for mapping %d: %v", len(m.Mappings), err)
			}
			mp.Re, mp.Input = c, ""
		}
		if prev, dup := seen[key]; dup {
			p.errf(d, "map: mapping %d has a duplicate input '%s' previously used with mapping %d", len(m.Mappings), key[1:], prev)
		}
		seen[key] = len(m.Mappings)
		for d.NextArg() {
			out, lit := scalar(d)
			if out == "-" && lit {
				mp.Outputs, mp.Raw = append(mp.Outputs, nil), append(mp.Raw, "")
				continue
			}
			t, err := route.ParseTemplate(out, opt)
			if err != nil {
				p.errf(d, "map: %v", err)
			}
			mp.Outputs, mp.Raw = append(mp.Outputs, &t), append(mp.Raw, out)
		}
		if len(mp.Outputs) > len(m.Dests) {
			p.errf(d, "map: too many outputs")
		}
		for len(mp.Outputs) < len(m.Dests) {
			mp.Outputs, mp.Raw = append(mp.Outputs, nil), append(mp.Raw, "")
		}
		m.Mappings = append(m.Mappings, mp)
	}
	n.Do = &site.MapVars{Map: m}
	p.maps = append(p.maps, mapAt{m: m, pos: at})
}

// mapAt is a map directive and where it is, for checkMaps.
type mapAt struct {
	m   *route.Map
	pos Pos
}

// checkMaps refuses maps whose placeholders read each other in a circle
// (a destination whose value needs itself), which would never end.
func (p *parser) checkMaps() {
	reads := map[string][]string{} // destination: the mapped names its values read
	for _, ma := range p.maps {
		var names []string
		names = ma.m.Source.MappedNames(names)
		for _, t := range ma.m.Defaults {
			names = t.MappedNames(names)
		}
		for _, mp := range ma.m.Mappings {
			for _, t := range mp.Outputs {
				if t != nil && mp.Re == nil {
					names = t.MappedNames(names)
				}
			}
		}
		for _, d := range ma.m.Dests {
			reads[d] = append(reads[d], names...)
		}
	}
	state := map[string]int{} // 1: being visited, 2: done
	var visit func(string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 1:
			return false
		case 2:
			return true
		}
		state[name] = 1
		for _, next := range reads[name] {
			if !visit(next) {
				return false
			}
		}
		state[name] = 2
		return true
	}
	for _, ma := range p.maps {
		for _, d := range ma.m.Dests {
			if !visit(d) {
				p.errAt(ma.pos, "map: placeholder {%s} reads itself through the maps that define it", d)
				return
			}
		}
	}
}

// varsMatcher reads the lines of a vars matcher (KEY VALUES...), merged
// as Caddy merges them: a key's values are alternatives.
func varsMatcher(lines []line) (route.Vars, error) {
	var m route.Vars
	for _, l := range lines {
		key, err := route.NewVarKey(l.args[0])
		if err != nil {
			return nil, err
		}
		if len(l.args) < 2 {
			return nil, errString("malformed vars matcher: expected at least one value to match against")
		}
		i := -1
		for j := range m {
			if m[j].Key.Name == key.Name {
				i = j
			}
		}
		if i < 0 {
			m, i = append(m, route.VarsField{Key: key}), len(m)
		}
		for _, v := range l.args[1:] {
			t, err := route.ParseTemplate(v, route.TemplateOptions{ReplaceAll: true})
			if err != nil {
				return nil, err
			}
			m[i].Values = append(m[i].Values, t)
		}
	}
	return m, nil
}

// varsRegexpMatcher reads the lines of a vars_regexp matcher ([NAME] KEY
// RE); a later line for a key replaces an earlier one, as in Caddy.
func varsRegexpMatcher(lines []line, matcher string) (route.VarsRegexp, error) {
	var m route.VarsRegexp
	for _, l := range lines {
		args, name := l.args, matcher
		if len(args) == 3 {
			name, args = args[0], args[1:]
		}
		if len(args) != 2 {
			return nil, errString("want [name] key regexp")
		}
		key, err := route.NewVarKey(args[0])
		if err != nil {
			return nil, err
		}
		re, err := regexp.Compile(args[1])
		if err != nil {
			return nil, err
		}
		f := route.VarsRegexpField{Key: key, Re: re, Capture: name}
		replaced := false
		for j := range m {
			if m[j].Key.Name == key.Name {
				m[j], replaced = f, true
			}
		}
		if !replaced {
			m = append(m, f)
		}
	}
	return m, nil
}

type errString string

func (e errString) Error() string { return string(e) }
