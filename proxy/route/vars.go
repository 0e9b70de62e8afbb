package route

import (
	"regexp"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// VarOp is one variable a vars directive sets: both its name and its
// value may hold placeholders, filled when the route runs, as Caddy's
// vars handler fills them.
type VarOp struct {
	Name, Value Template
}

// authUserVar is the variable whose setting is also the authenticated
// user ({http.auth.user.id}), as in Caddy.
const authUserVar = "http.auth.user.id"

// ApplyVars runs a vars directive's operations on r.
func ApplyVars(ops []VarOp, r *stream.Request) {
	for _, op := range ops {
		name, value := op.Name.Expand(r), op.Value.Expand(r)
		r.SetVar(name, value)
		if name == authUserVar {
			r.AuthUser = value
		}
	}
}

// VarKey is what a vars or vars_regexp matcher compares: a variable by
// its name, or, when the key is written as one placeholder ({foo}), that
// placeholder's value.
type VarKey struct {
	Name string
	ph   *Template
}

// NewVarKey compiles a matcher's key, as Caddy reads it.
func NewVarKey(key string) (VarKey, error) {
	k := VarKey{Name: key}
	if strings.HasPrefix(key, "{") && strings.HasSuffix(key, "}") && strings.Count(key, "{") == 1 {
		t, err := ParseTemplate(key, TemplateOptions{ReplaceAll: true})
		if err != nil {
			return k, err
		}
		k.ph = &t
	}
	return k, nil
}

// value is the key's value for r: "" for a variable not set.
func (k VarKey) value(r *stream.Request) string {
	if k.ph != nil {
		return k.ph.Expand(r)
	}
	return string(appendVar(nil, r, k.Name))
}

// VarsField is one key of a vars matcher and the values it may have.
type VarsField struct {
	Key    VarKey
	Values []Template
}

// Vars is Caddy's vars matcher: it matches when any key has any of its
// values (placeholders in them filled); an empty one matches every
// request.
type Vars []VarsField

// Match implements Matcher.
func (m Vars) Match(c *Ctx) bool {
	if len(m) == 0 {
		return true
	}
	for _, f := range m {
		v := f.Key.value(c.Req)
		for _, want := range f.Values {
			if want.Expand(c.Req) == v {
				return true
			}
		}
	}
	return false
}

// VarsRegexpField is one key of a vars_regexp matcher: its regexp, and
// the name its captures are saved under.
type VarsRegexpField struct {
	Key     VarKey
	Re      *regexp.Regexp
	Capture string
}

// VarsRegexp is Caddy's vars_regexp matcher: it matches when any key's
// value matches its regexp, whose captures then fill {re.NAME.N}.
type VarsRegexp []VarsRegexpField

// Match implements Matcher.
func (m VarsRegexp) Match(c *Ctx) bool {
	for _, f := range m {
		if capture(c, f.Capture, f.Re, f.Key.value(c.Req)) {
			return true
		}
	}
	return false
}
