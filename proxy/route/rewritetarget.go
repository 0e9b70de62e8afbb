package route

import (
	"bytes"
	"slices"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// RewriteTarget is the target tmpl's rewrite (or forward_auth's uri)
// gives r, after prefix (the file a try_files rewrite found), as Caddy's
// rewrite builds it. The template is split where it is written: before
// its first '?' the path, after it the query, after a '#' a fragment,
// which is never sent. The path is filled as it is; a '?' a placeholder
// brings into it ("rewrite /api{uri}") starts the query when the template
// writes none of its own (a '#' ends the path there too). The query is
// built as appendRewriteQuery says. A target without a query keeps the
// request's; one with a query, even an empty one, replaces it. Empty:
// the target fills to nothing, no rewrite.
func RewriteTarget(tmpl Template, prefix string, r *stream.Request) string {
	if s, ok := tmpl.Literal(); ok && !strings.ContainsAny(s, "?#") && !strings.ContainsAny(prefix, "?#") {
		// The common case, a fixed path: no copy when the request has no
		// query.
		return keepQuery(escapeTarget(prefix+s), r)
	}
	var buf [256]byte
	b := append(buf[:0], prefix...)
	parts := tmpl.parts
	query, qoff := -1, 0 // the part the template's query starts in, and where
	for i, p := range parts {
		if p.kind != phLiteral {
			b = p.append(b, r)
			continue
		}
		j := strings.IndexAny(p.text, "?#")
		if j < 0 {
			b = append(b, p.text...)
			continue
		}
		b = append(b, p.text[:j]...)
		if p.text[j] == '?' {
			query, qoff = i, j+1
		}
		break
	}
	if j := slices.Index(b, '#'); j >= 0 {
		b = b[:j]
	}
	pathEnd := len(b)
	var injected []byte
	if j := slices.Index(b, '?'); j >= 0 {
		injected, pathEnd = b[j+1:], j
	}
	if query < 0 && injected == nil {
		return keepQuery(escapeTarget(string(b)), r)
	}
	// The template's own query, when it writes one ("/x?" and "/x?#f"
	// write none), wins over an injected one.
	ownQuery := false
	if query >= 0 {
		rest := parts[query].text[qoff:]
		ownQuery = (rest != "" || query < len(parts)-1) && !strings.HasPrefix(rest, "#")
	}
	switch {
	case ownQuery:
		b = appendRewriteQuery(append(b[:pathEnd], '?'), parts[query:], qoff, r)
	case injected != nil:
		// The injected query is text, never a template: Caddy escapes its
		// braces, so that its builder fills nothing in it.
		var qbuf [128]byte
		q := append(qbuf[:0], injected...)
		b = appendQueryText(append(b[:pathEnd], '?'), q)
	default:
		b = b[:pathEnd]
	}
	b = bytes.TrimSuffix(b, []byte("?"))
	to := escapeTarget(string(b))
	switch {
	case to == "" || to[0] == '?':
		return PathOnly(r.Path) + to
	case to[0] != '/':
		return "/" + to
	}
	return to
}

// keepQuery is the target p gives r when a rewrite writes no query: the
// request's query is kept. Empty when p is.
func keepQuery(p string, r *stream.Request) string {
	if p == "" {
		return ""
	}
	slash := ""
	if p[0] != '/' {
		slash = "/"
	}
	if q := QueryOnly(r.Path); q != "" {
		return slash + p + "?" + q
	}
	return slash + p
}

// queryBuilder writes a rewrite's query as Caddy's rewrite builds one:
// the template's query is read in components, keys and values, ended by
// '&' (a key by '=' too; in a value '=' is text). An empty key is left
// out with its '&', so "?{query}&a=b" without a query is "?a=b"; a
// value, even an empty one, is written after its '='. A component
// starts only when something follows its delimiter, so "?a=" is "?a".
// A '#' ends the query: what follows is the fragment.
type queryBuilder struct {
	b     []byte
	start int  // where the query starts in b
	value bool // the component is a value (after '=')
	open  bool // a component has started
	amp   int  // where the '&' before the open key is, or -1
	comp  int  // where the open component starts
	done  bool // a '#' ended the query
}

func (q *queryBuilder) begin() {
	if q.open {
		return
	}
	q.open = true
	if q.value {
		q.b = append(q.b, '=')
	} else {
		q.amp = -1
		if len(q.b) > q.start {
			q.amp = len(q.b)
			q.b = append(q.b, '&')
		}
	}
	q.comp = len(q.b)
}

// end closes the open component (an empty one when none is open); value
// says whether the next is a value.
func (q *queryBuilder) end(value bool) {
	q.begin()
	if !q.value && len(q.b) == q.comp && q.amp >= 0 {
		q.b = q.b[:q.amp]
	}
	q.open, q.value = false, value
}

// put adds one byte of the template's text.
func (q *queryBuilder) put(c byte) {
	switch {
	case q.done:
	case c == '#':
		q.done = true
	case c == '&':
		q.end(false)
	case c == '=' && !q.value:
		q.end(true)
	default:
		q.begin()
		q.b = append(q.b, c)
	}
}

// finish closes the query and returns the buffer.
func (q *queryBuilder) finish() []byte {
	if q.open {
		q.end(false)
	}
	return q.b
}

// appendRewriteQuery appends the query the template parts (the first
// from offset off) give r, as Caddy's rewrite builds it: each
// placeholder's value is query-escaped (url.QueryEscape: a space is '+',
// every byte but letters, digits and -_.~ is %XX), except {query} where a
// key stands, which goes in as it came ("?{query}&p=1"). {path} and
// {path.N} are read from the decoded path, as Caddy's are.
func appendRewriteQuery(dst []byte, parts []part, off int, r *stream.Request) []byte {
	q := queryBuilder{b: dst, start: len(dst)}
	for i, p := range parts {
		if q.done {
			break
		}
		if p.kind == phLiteral {
			t := p.text
			if i == 0 {
				t = t[off:]
			}
			for j := 0; j < len(t); j++ {
				q.put(t[j])
			}
			continue
		}
		q.begin()
		if p.kind == phQuery && !q.value {
			q.b = p.append(q.b, r)
			continue
		}
		mark := len(q.b)
		q.b = p.append(q.b, r)
		if p.kind == phPath || p.kind == phSegment {
			q.b = pathUnescapeTail(q.b, mark)
		}
		q.b = queryEscapeTail(q.b, mark)
	}
	return q.finish()
}

// appendQueryText appends the query text s (one a placeholder brought
// into the path) rebuilt as Caddy rebuilds it: in components, as
// appendRewriteQuery reads them, with its braces written %7B and %7D.
func appendQueryText(dst, s []byte) []byte {
	q := queryBuilder{b: dst, start: len(dst)}
	for _, c := range s {
		switch c {
		case '{':
			q.begin()
			q.b = append(q.b, "%7B"...)
		case '}':
			q.begin()
			q.b = append(q.b, "%7D"...)
		default:
			q.put(c)
		}
	}
	return q.finish()
}

// queryEscapeTail query-escapes b[from:] in place, as url.QueryEscape.
func queryEscapeTail(b []byte, from int) []byte {
	n := 0
	for _, c := range b[from:] {
		if !unreservedInQuery(c) && c != ' ' {
			n++
		}
	}
	end := len(b)
	b = slices.Grow(b, 2*n)[:end+2*n]
	const hex = "0123456789ABCDEF"
	w := len(b)
	for i := end - 1; i >= from; i-- {
		switch c := b[i]; {
		case unreservedInQuery(c):
			w--
			b[w] = c
		case c == ' ':
			w--
			b[w] = '+'
		default:
			w -= 3
			b[w], b[w+1], b[w+2] = '%', hex[c>>4], hex[c&15]
		}
	}
	return b
}

// unreservedInQuery: the bytes url.QueryEscape leaves as they are.
func unreservedInQuery(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// pathUnescapeTail percent-decodes b[from:] in place, as url.PathUnescape
// ('+' stays); with a bad escape it is left as it is.
func pathUnescapeTail(b []byte, from int) []byte {
	s := b[from:]
	if slices.Index(s, '%') < 0 {
		return b
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0) {
			return b
		}
	}
	w := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			s[w] = byte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		} else {
			s[w] = s[i]
		}
		w++
	}
	return b[:from+w]
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// escapeTarget percent-encodes the bytes that never stand in a
// request-target (RFC 9112 §3.2): a space, controls, DEL, '#' and
// non-ASCII, which a placeholder's value ({header.X}, {query.k} decoded)
// may bring into a rewrite's path. Written raw, a space would end the
// request line early, and the origin would read another target and
// version than the ones meant. Other bytes are left as they are ('%'
// too: the rest of the target is already encoded), as a client may have
// sent them.
func escapeTarget(to string) string {
	i := 0
	for i < len(to) && !escapedInTarget(to[i]) {
		i++
	}
	if i == len(to) {
		return to
	}
	const hex = "0123456789ABCDEF"
	b := []byte(to[:i])
	for ; i < len(to); i++ {
		if c := to[i]; escapedInTarget(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func escapedInTarget(c byte) bool { return c <= ' ' || c >= 0x7f || c == '#' }
