package route

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// HeaderOp is one field edit in Caddy's syntax (header, header_up,
// header_down):
//
//	Name value         set (replace every value)
//	+Name value        add
//	-Name              delete; -Prefix*, -*Suffix, -*part* and -* too
//	?Name value        set unless present (response edits only; deferred)
//	>Name value        set, deferred (site.EditResponse.Immediate)
//	Name regexp repl   replace what regexp matches in each value
type HeaderOp struct {
	Op    byte   // '=' set, '+' add, '-' delete, '?' default, '~' replace
	Name  string // lower case; a delete may start or end with '*'
	Value string // the value as written (set, add, default)
	Tmpl  Template
	Re    *regexp.Regexp // replace
	Repl  string
}

// ParseHeaderOp compiles one edit from its arguments (one to three).
// response allows '?' and '>' and refuses placeholders that read request
// fields.
func ParseHeaderOp(args []string, response bool) (HeaderOp, error) {
	return parseHeaderOp(args, response, false)
}

// ParseUpstreamHeaderOp compiles one header_up edit: a request edit that
// runs once an upstream is picked, so its values may use the upstream
// placeholders ({upstream_hostport} ...).
func ParseUpstreamHeaderOp(args []string) (HeaderOp, error) {
	return parseHeaderOp(args, false, true)
}

// UsesUpstream reports whether any of ops fills an upstream placeholder.
func UsesUpstream(ops []HeaderOp) bool {
	for i := range ops {
		if ops[i].Tmpl.UsesUpstream() {
			return true
		}
	}
	return false
}

// MayRemoveHost reports whether ops can remove the Host field or leave it
// empty ("-*", "-Host", "Host" set): the origin then gets the upstream's
// address as its Host (RequestHostMark).
func MayRemoveHost(ops []HeaderOp) bool {
	for i := range ops {
		if op := &ops[i]; op.Op == '-' && op.deletes("host") || op.Op == '=' && op.Name == "host" || op.Op == '~' && op.Name == "host" {
			return true
		}
	}
	return false
}

// CheckUpstreamOps refuses a replacement in a field that another edit sets
// from an upstream placeholder: the replacement would run before the
// upstream is known, where Caddy runs it on the filled value.
func CheckUpstreamOps(ops []HeaderOp) error {
	for i := range ops {
		if !ops[i].Tmpl.UsesUpstream() {
			continue
		}
		for j := range ops {
			if ops[j].Op == '~' && ops[j].Name == ops[i].Name {
				return fmt.Errorf("replacing in %s, which is set from an upstream placeholder, is not supported by pollproxy", ops[i].Name)
			}
		}
	}
	return nil
}

func parseHeaderOp(args []string, response, upstream bool) (HeaderOp, error) {
	if len(args) == 0 || len(args) > 3 {
		return HeaderOp{}, fmt.Errorf("want Name value (set), +Name value (add), -Name (delete) or Name regexp replacement")
	}
	name := args[0]
	op := HeaderOp{Op: '='}
	if len(args) == 3 {
		op.Op = '~'
		name = strings.TrimLeft(name, "+-?>")
	} else if name != "" {
		switch name[0] {
		case '+', '-', '?', '>':
			op.Op, name = name[0], name[1:]
		}
	}
	if op.Op == '>' {
		op.Op = '='
	}
	if op.Op == '?' && !response {
		return op, fmt.Errorf("?%s: the default form only applies to response fields", name)
	}
	op.Name = strings.ToLower(name)
	valid := op.Name
	if op.Op == '-' {
		valid = strings.Trim(valid, "*")
		if valid == "" && op.Name == "*" {
			valid = "x"
		}
	}
	if !field.ValidName(valid) {
		return op, fmt.Errorf("%q is not a valid field name", name)
	}
	if response && op.Op != '-' && field.Lookup(op.Name).Has(field.Framing) {
		// The front end frames the body it sends; a second length, or
		// one the body does not have, makes an answer no client can read.
		return op, fmt.Errorf("%s frames the body, which pollproxy writes itself (only -%s is allowed)", name, name)
	}
	switch {
	case op.Op == '-' && len(args) != 1:
		return op, fmt.Errorf("-%s deletes the field and takes no value", name)
	case op.Op != '-' && len(args) == 1:
		return op, fmt.Errorf("%s needs a value (or -%s to delete it)", args[0], name)
	}
	opt := TemplateOptions{NoRequestFields: response, Upstream: upstream}
	switch op.Op {
	case '~':
		re, err := regexp.Compile(args[1])
		if err != nil {
			return op, fmt.Errorf("regexp %q: %v", args[1], err)
		}
		op.Re, op.Repl = re, args[2]
	case '=', '+', '?':
		if strings.ContainsAny(args[1], "\r\n\x00") {
			return op, fmt.Errorf("the value of %s has a CR, LF or NUL", name)
		}
		t, err := ParseTemplate(args[1], opt)
		if err != nil {
			return op, err
		}
		op.Value, op.Tmpl = args[1], t
	}
	return op, nil
}

func (op *HeaderOp) value(r *stream.Request) string {
	if op.Tmpl.parts == nil {
		return op.Value
	}
	if r == nil {
		s, _ := op.Tmpl.Literal()
		return s
	}
	return op.Tmpl.Expand(r)
}

// deletes reports whether a delete op covers the field name (lower case):
// the same wildcards as the header matcher's values.
func (op *HeaderOp) deletes(name string) bool { return wildcard(op.Name, name) }

// ApplyHeaderOps edits fs (lower-case names) in Caddy's order: delete-all,
// adds, sets, deletes, replacements, then the ?Field defaults; placeholders are filled from r (which
// may be nil for response edits that use none). It reuses fs's array.
func ApplyHeaderOps(fs []stream.Field, ops []HeaderOp, r *stream.Request) []stream.Field {
	fs = applyOps(fs, ops, r, mainOps)
	return applyOps(fs, ops, r, defaultOps)
}

// ApplyMainOps applies ops' edits but the ?Field defaults, as
// ApplyHeaderOps does: for a header directive whose defaults apply
// apart from its other edits.
func ApplyMainOps(fs []stream.Field, ops []HeaderOp, r *stream.Request) []stream.Field {
	return applyOps(fs, ops, r, mainOps)
}

// ApplyDefaultOps applies ops' ?Field defaults alone, in reverse, as
// Caddy's handlers for them nest.
func ApplyDefaultOps(fs []stream.Field, ops []HeaderOp, r *stream.Request) []stream.Field {
	return applyOps(fs, ops, r, defaultOps)
}

// Which of a header directive's edits applyOps applies: Caddy makes each
// ?Field default a handler of its own, always deferred, that runs after
// the directive's other edits at once or, deferred, before them.
const (
	mainOps    = iota // all but the ?Field defaults
	defaultOps        // the ?Field defaults alone
)

// applyOps is ApplyHeaderOps for the edits of ops which selects. The
// defaults apply in reverse, as Caddy's handlers for them nest.
func applyOps(fs []stream.Field, ops []HeaderOp, r *stream.Request, which int) []stream.Field {
	if which == defaultOps {
		for i := len(ops) - 1; i >= 0; i-- {
			if op := &ops[i]; op.Op == '?' && !HasField(fs, op.Name) {
				fs = append(fs, stream.Field{Name: op.Name, Value: op.value(r)})
			}
		}
		return fs
	}
	for i := range ops {
		if ops[i].Op == '-' && ops[i].Name == "*" {
			fs = fs[:0]
		}
	}
	for i := range ops {
		if op := &ops[i]; op.Op == '+' {
			fs = append(fs, stream.Field{Name: op.Name, Value: op.value(r)})
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Op != '=' {
			continue
		}
		fs = RemoveFields(fs, func(n string) bool { return n == op.Name })
		fs = append(fs, stream.Field{Name: op.Name, Value: op.value(r)})
	}
	for i := range ops {
		if op := &ops[i]; op.Op == '-' && op.Name != "*" {
			fs = RemoveFields(fs, op.deletes)
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Op != '~' {
			continue
		}
		for j := range fs {
			if fs[j].Name == op.Name {
				fs[j].Value = op.Re.ReplaceAllString(fs[j].Value, op.Repl)
			}
		}
	}
	return fs
}

// HasField reports whether fs (lower-case names) holds a field name.
func HasField(fs []stream.Field, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// RemoveFields removes the fields whose names drop reports, reusing
// fs's array.
func RemoveFields(fs []stream.Field, drop func(string) bool) []stream.Field {
	kept := fs[:0]
	for _, f := range fs {
		if !drop(f.Name) {
			kept = append(kept, f)
		}
	}
	return kept
}
