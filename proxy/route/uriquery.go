package route

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// QueryOps are Caddy's uri query edits, applied in Caddy's order: renames,
// sets, adds, replacements, deletes. Keys and values may hold
// placeholders. As in Caddy, the edited query is re-encoded with its keys
// sorted.
type QueryOps struct {
	Rename  [][2]Template // from, to
	Set     [][2]Template // key, value
	Add     [][2]Template // key, value
	Replace []QueryReplace
	Delete  []Template
}

// QueryReplace replaces what Search matches in the values of Key ("*":
// every key) with Replace ($1 for groups).
type QueryReplace struct {
	Key     Template
	Search  *regexp.Regexp
	Replace string
}

// ParseQueryOp adds one uri query operation, in Caddy's forms: -KEY
// (delete), +KEY VALUE (add), FROM>TO (rename), KEY SEARCH REPLACE
// (replace by regular expression), KEY VALUE (set).
func (q *QueryOps) ParseQueryOp(args []string) error {
	tmpl := func(s string) (Template, error) { return ParseTemplate(s, TemplateOptions{}) }
	pair := func(a, b string) ([2]Template, error) {
		x, err := tmpl(a)
		if err != nil {
			return [2]Template{}, err
		}
		y, err := tmpl(b)
		return [2]Template{x, y}, err
	}
	key := args[0]
	switch {
	case strings.HasPrefix(key, "-"):
		if len(args) != 1 {
			return fmt.Errorf("query -%s: want no value", strings.TrimLeft(key, "-"))
		}
		t, err := tmpl(strings.TrimLeft(key, "-"))
		q.Delete = append(q.Delete, t)
		return err
	case strings.HasPrefix(key, "+"):
		if len(args) != 2 {
			return fmt.Errorf("query %s: want one value", key)
		}
		p, err := pair(strings.TrimLeft(key, "+"), args[1])
		q.Add = append(q.Add, p)
		return err
	case strings.Contains(key, ">"):
		if len(args) != 1 {
			return fmt.Errorf("query %s: a rename takes no value", key)
		}
		from, to, _ := strings.Cut(key, ">")
		p, err := pair(from, to)
		q.Rename = append(q.Rename, p)
		return err
	case len(args) == 3:
		re, err := regexp.Compile(args[1])
		if err != nil {
			return fmt.Errorf("query %s: %v", key, err)
		}
		k, err := tmpl(key)
		q.Replace = append(q.Replace, QueryReplace{Key: k, Search: re, Replace: args[2]})
		return err
	case len(args) == 2:
		p, err := pair(key, args[1])
		q.Set = append(q.Set, p)
		return err
	}
	return fmt.Errorf("query %s: want KEY VALUE, +KEY VALUE, -KEY, FROM>TO or KEY SEARCH REPLACE", key)
}

// Apply returns the query edited for r.
func (q *QueryOps) Apply(query string, r *stream.Request) string {
	v := url.Values{} // as Caddy, what parses is kept
	eachQueryPair(query, func(k, val string) bool {
		v[k] = append(v[k], val)
		return true
	})
	for _, p := range q.Rename {
		from, to := p[0].Expand(r), p[1].Expand(r)
		if vals, ok := v[from]; ok && from != "" && to != "" && from != to {
			v[to] = vals
			delete(v, from)
		}
	}
	for _, p := range q.Set {
		if k := p[0].Expand(r); k != "" {
			v[k] = []string{p[1].Expand(r)}
		}
	}
	for _, p := range q.Add {
		if k := p[0].Expand(r); k != "" {
			v[k] = append(v[k], p[1].Expand(r))
		}
	}
	for _, rp := range q.Replace {
		k := rp.Key.Expand(r)
		for name, vals := range v {
			if k != "*" && name != k {
				continue
			}
			for i := range vals {
				vals[i] = rp.Search.ReplaceAllString(vals[i], rp.Replace)
			}
		}
	}
	for _, t := range q.Delete {
		delete(v, t.Expand(r))
	}
	return v.Encode()
}
