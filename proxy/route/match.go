package route

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Matcher is one compiled request matcher.
type Matcher interface {
	Match(c *Ctx) bool
}

// ClientIPFunc derives a request's client address: the peer's, or one a
// trusted proxy reported. The client_ip matcher and the client_ip_hash
// policy read it.
type ClientIPFunc func(r *stream.Request) netip.Addr

// PeerIP is the ClientIPFunc that trusts nobody: the immediate peer.
func PeerIP(r *stream.Request) netip.Addr { return r.RemoteAddr.Addr().Unmap() }

// Ctx is one request as the matchers see it; a Handler keeps one and
// reuses it, so matching allocates nothing.
type Ctx struct {
	Req      *stream.Request
	clientFn ClientIPFunc
	client   netip.Addr
	haveIP   bool
	path     string // the path matchers compare (decoded, cleaned)
	havePath bool
	// matcherName is the named matcher an expression being evaluated
	// belongs to: its regexps' captures take that name.
	matcherName string

	// The fields below are the site runtime's (proxy/site): its handler
	// sets them and its file matcher reads and sets them; route's own
	// matchers never look at them.

	// Root is the root directive's, for this request.
	Root string
	// Files is what file matchers learned of the disk, in the site
	// runtime's own type (nil until a file matcher runs).
	Files any
	// FileRel is {http.matchers.file.relative}: what a file matcher found.
	FileRel string
	// FileRem is {http.matchers.file.remainder}: what its split_path cut
	// off after the file.
	FileRem string
	// FailStatus is the status a file matcher reached ("=NNN"): the
	// routes stop and answer it as an error.
	FailStatus int
}

// NewCtx returns a context for r with the given client address function
// (nil: PeerIP).
func NewCtx(r *stream.Request, fn ClientIPFunc) *Ctx {
	c := &Ctx{}
	c.Reset(r, fn)
	return c
}

// Reset points c at a new request.
func (c *Ctx) Reset(r *stream.Request, fn ClientIPFunc) {
	if fn == nil {
		fn = PeerIP
	}
	*c = Ctx{Req: r, clientFn: fn}
}

// ClientIP is the request's client address (see ClientIPFunc).
func (c *Ctx) ClientIP() netip.Addr {
	if !c.haveIP {
		c.client, c.haveIP = c.clientFn(c.Req), true
	}
	return c.client
}

// Path is the request path the path matchers compare: percent-decoded and
// with duplicate slashes and dot segments removed, as Caddy matches it.
// It allocates only when the raw path needs that work.
func (c *Ctx) Path() string {
	if !c.havePath {
		c.path, c.havePath = matchPath(PathOnly(c.Req.Path)), true
	}
	return c.path
}

// PathChanged forgets the cached path after a rewrite.
func (c *Ctx) PathChanged() { c.havePath = false }

func matchPath(p string) string {
	if strings.IndexByte(p, '%') >= 0 {
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
	}
	if strings.Contains(p, "//") || strings.Contains(p, "/.") {
		trail := strings.HasSuffix(p, "/") && len(p) > 1
		p = path.Clean("/" + p)
		if trail && p != "/" {
			p += "/"
		}
	}
	return p
}

// All is a matcher set: every matcher must match (a nil or empty set
// matches every request).
type All []Matcher

// Match implements Matcher.
func (a All) Match(c *Ctx) bool {
	for _, m := range a {
		if !m.Match(c) {
			return false
		}
	}
	return true
}

// Not negates a set of matcher sets: it matches when none of them does.
type Not []All

// Match implements Matcher.
func (n Not) Match(c *Ctx) bool {
	for _, s := range n {
		if s.Match(c) {
			return false
		}
	}
	return true
}

// Path matches the request path against patterns, without case, as
// Caddy's path matcher: "*" everything, "/prefix*", "*.suffix",
// "*part*", an exact path, or a glob with "*" inside. The patterns are
// classified once, so matching is a prefix, suffix or equality test.
type Path struct {
	Patterns []string
	compiled []pathPattern
}

type patKind uint8

const (
	patAll patKind = iota
	patExact
	patPrefix
	patSuffix
	patContains
	patGlob
)

type pathPattern struct {
	kind patKind
	text string
}

// NewPath validates, lowercases and classifies patterns.
func NewPath(patterns []string) (Path, error) {
	p := Path{Patterns: patterns}
	for _, s := range patterns {
		if s == "" {
			return p, fmt.Errorf("empty path pattern")
		}
		if _, err := path.Match(s, ""); err != nil {
			return p, fmt.Errorf("path pattern %q: %v", s, err)
		}
		s = strings.ToLower(s)
		n, glob := strings.Count(s, "*"), strings.ContainsAny(s, "?[")
		pp := pathPattern{kind: patGlob, text: s}
		switch {
		case s == "*":
			pp.kind = patAll
		case glob:
		case n == 0:
			pp.kind = patExact
		case n == 1 && s[len(s)-1] == '*':
			pp = pathPattern{patPrefix, s[:len(s)-1]}
		case n == 1 && s[0] == '*':
			pp = pathPattern{patSuffix, s[1:]}
		case n == 2 && s[0] == '*' && s[len(s)-1] == '*':
			pp = pathPattern{patContains, s[1 : len(s)-1]}
		}
		p.compiled = append(p.compiled, pp)
	}
	return p, nil
}

// MustPath is NewPath for patterns known to be valid.
func MustPath(patterns ...string) Path {
	p, err := NewPath(patterns)
	if err != nil {
		panic(err)
	}
	return p
}

// Match implements Matcher.
func (p Path) Match(c *Ctx) bool {
	rp := c.Path()
	for _, pp := range p.compiled {
		if pp.match(rp) {
			return true
		}
	}
	return false
}

func (pp *pathPattern) match(rp string) bool {
	switch pp.kind {
	case patAll:
		return true
	case patExact:
		return strings.EqualFold(pp.text, rp)
	case patPrefix:
		return hasPrefixFold(rp, pp.text)
	case patSuffix:
		return hasSuffixFold(rp, pp.text)
	case patContains:
		return containsFold(rp, pp.text)
	}
	ok, _ := path.Match(pp.text, strings.ToLower(rp))
	return ok
}

// hasPrefixFold compares without case; prefix is lower case already, so
// a byte that matches exactly needs no folding (the common case).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if c == prefix[i] {
			continue
		}
		if c >= 'A' && c <= 'Z' && c+'a'-'A' == prefix[i] {
			continue
		}
		if c >= 0x80 {
			return strings.EqualFold(s[:len(prefix)], prefix)
		}
		return false
	}
	return true
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// PathRegexp matches the request path against a regular expression and,
// when it does, saves the groups under Name for {re.Name.N} (Name is
// path_regexp's first argument, else the named matcher's name, as Caddy
// names them).
type PathRegexp struct {
	Re   *regexp.Regexp
	Name string
}

// Match implements Matcher.
func (p PathRegexp) Match(c *Ctx) bool { return capture(c, p.Name, p.Re, c.Path()) }

// capture matches s against re and, when it matches, saves the groups on
// the request for the {re.*} placeholders. Only a match allocates.
func capture(c *Ctx, name string, re *regexp.Regexp, s string) bool {
	idx := re.FindStringSubmatchIndex(s)
	if idx == nil {
		return false
	}
	c.Req.Captures = append(c.Req.Captures, stream.Capture{Name: name, Input: s, Index: idx, Groups: re.SubexpNames()})
	return true
}

// Host matches the request's host, without case; "*" stands for one
// label ("*.example.com").
type Host []string

// NewHost lowercases names.
func NewHost(names []string) Host {
	h := make(Host, len(names))
	for i, n := range names {
		h[i] = strings.TrimSuffix(strings.ToLower(n), ".")
	}
	return h
}

// Match implements Matcher.
func (h Host) Match(c *Ctx) bool {
	host := HostOnly(c.Req.Authority)
	for _, pat := range h {
		if pat == host || (strings.IndexByte(pat, '*') >= 0 && matchLabels(pat, host)) {
			return true
		}
	}
	return false
}

func matchLabels(pat, host string) bool {
	for {
		pi, hi := strings.IndexByte(pat, '.'), strings.IndexByte(host, '.')
		if (pi < 0) != (hi < 0) {
			return false
		}
		if pi < 0 {
			return pat == "*" || pat == host
		}
		if pl := pat[:pi]; pl != "*" && pl != host[:hi] {
			return false
		}
		pat, host = pat[pi+1:], host[hi+1:]
	}
}

// Method matches the request method (upper case).
type Method []string

// Match implements Matcher.
func (m Method) Match(c *Ctx) bool {
	for _, v := range m {
		if v == c.Req.Method {
			return true
		}
	}
	return false
}

// HeaderField is one field of a header matcher: its values are
// alternatives ("*" wildcards at either end); none means the field must be
// present; Absent (Caddy's "!Field") that it must not be.
type HeaderField struct {
	Name   string
	Values []string
	Absent bool
}

// ParseHeaderField reads a header matcher's line, FIELD [VALUE...] or
// !FIELD (absent, no value), as Caddy's request and response matchers
// both take it.
func ParseHeaderField(args []string) (HeaderField, error) {
	if len(args) == 0 {
		return HeaderField{}, fmt.Errorf("want a field name")
	}
	name := strings.ToLower(args[0])
	f := HeaderField{Name: strings.TrimPrefix(name, "!"), Absent: strings.HasPrefix(name, "!"), Values: args[1:]}
	if f.Absent && len(f.Values) > 0 {
		return f, fmt.Errorf("!%s asserts the field is absent and takes no value", f.Name)
	}
	return f, nil
}

// Header matches request fields; every field must match.
type Header []HeaderField

// Match implements Matcher.
func (h Header) Match(c *Ctx) bool {
	for i := range h {
		if !h[i].match(c.Req) {
			return false
		}
	}
	return true
}

func (f *HeaderField) match(r *stream.Request) bool {
	if f.Name == "host" {
		return f.matchValue(r.Authority)
	}
	if len(r.Hop) == 0 {
		return f.matchFields(r.Header)
	}
	// The hop-by-hop fields too ("header Connection *Upgrade*"), as
	// Caddy's matcher sees them: the field matches in either list, or
	// is absent from both.
	if f.Absent {
		return f.matchFields(r.Header) && f.matchFields(r.Hop)
	}
	return f.matchFields(r.Header) || f.matchFields(r.Hop)
}

// matchFields matches the field against fields, a request's or a
// response's.
func (f *HeaderField) matchFields(fields []stream.Field) bool {
	found := false
	for _, rf := range fields {
		if rf.Name != f.Name {
			continue
		}
		found = true
		if f.Absent {
			return false
		}
		if f.matchValue(rf.Value) {
			return true
		}
	}
	if f.Absent {
		return !found
	}
	return found && len(f.Values) == 0
}

func (f *HeaderField) matchValue(v string) bool {
	if len(f.Values) == 0 {
		return true
	}
	for _, want := range f.Values {
		if wildcard(want, v) {
			return true
		}
	}
	return false
}

// wildcard compares v with a pattern that may start and/or end with "*".
func wildcard(pat, v string) bool {
	switch {
	case pat == "*":
		return true
	case len(pat) > 1 && pat[0] == '*' && pat[len(pat)-1] == '*':
		return strings.Contains(v, pat[1:len(pat)-1])
	case pat[0] == '*':
		return strings.HasSuffix(v, pat[1:])
	case pat[len(pat)-1] == '*':
		return strings.HasPrefix(v, pat[:len(pat)-1])
	}
	return pat == v
}

// HeaderRegexp matches one request field's value against a regexp and
// saves the groups of the first value that matches under Capture, as
// PathRegexp does.
type HeaderRegexp struct {
	Name    string // the field, lowercase
	Re      *regexp.Regexp
	Capture string
}

// Match implements Matcher.
func (h HeaderRegexp) Match(c *Ctx) bool {
	if h.Name == "host" {
		return capture(c, h.Capture, h.Re, c.Req.Authority)
	}
	for _, fs := range [2][]stream.Field{c.Req.Header, c.Req.Hop} {
		for _, f := range fs {
			if f.Name == h.Name && capture(c, h.Capture, h.Re, f.Value) {
				return true
			}
		}
	}
	return false
}

// QueryParam is one key of a query matcher and its alternative values
// ("*": any value).
type QueryParam struct {
	Key    string
	Values []string
}

// Query matches query parameters; every key must match.
type Query []QueryParam

// Match implements Matcher. As Caddy's, a malformed query (a ';' in a
// pair, a bad escape: url.ParseQuery's errors) matches nothing.
func (q Query) Match(c *Ctx) bool {
	raw := QueryOnly(c.Req.Path)
	for i := range q {
		p := &q[i]
		matched := false
		wellFormed := eachQueryPair(raw, func(k, v string) bool {
			if k == p.Key && !matched {
				for _, want := range p.Values {
					if want == "*" || want == v {
						matched = true
					}
				}
			}
			return true
		})
		if !wellFormed || !matched {
			return false
		}
	}
	return true
}

// RemoteIP matches the immediate peer's address.
type RemoteIP []netip.Prefix

// Match implements Matcher.
func (m RemoteIP) Match(c *Ctx) bool { return inRanges(m, c.Req.RemoteAddr.Addr().Unmap()) }

// ClientIP matches the client's address (Ctx.ClientIP).
type ClientIP []netip.Prefix

// Match implements Matcher.
func (m ClientIP) Match(c *Ctx) bool { return inRanges(m, c.ClientIP()) }

func inRanges(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Protocol matches http, https, http/1.1 or http/2 (grpc and http/3 are
// not spoken by pollproxy's front ends).
type Protocol string

// Match implements Matcher.
func (p Protocol) Match(c *Ctx) bool {
	switch p {
	case "http":
		return c.Req.Scheme == "http"
	case "https":
		return c.Req.Scheme == "https"
	case "http/1.0":
		return c.Req.Proto == "HTTP/1.0"
	case "http/1.1":
		return c.Req.Proto == "HTTP/1.1"
	case "http/2":
		return c.Req.Proto == "HTTP/2.0"
	case "http/1.1+":
		return c.Req.Proto == "HTTP/1.1" || c.Req.Proto == "HTTP/2.0"
	case "http/2+":
		return c.Req.Proto == "HTTP/2.0"
	}
	return false
}
