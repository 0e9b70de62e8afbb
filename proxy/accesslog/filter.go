package accesslog

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Filter is one field filter of Caddy's filter format: what it does (Op:
// delete, replace, hash, ip_mask or regexp) to one field of the entry,
// named by its path (request>remote_ip, request>client_ip, request>uri,
// request>headers>NAME, resp_headers>NAME, user_id). Filters run on the
// writer goroutine, never on the loop.
type Filter struct {
	Field   string
	Op      string
	Value   string         // replace: the value; regexp: the replacement
	Re      *regexp.Regexp // regexp
	V4, V6  int            // ip_mask: the prefix lengths kept
	Cookies []CookieAction // cookie: what to do to which cookie
}

// CookieAction is one line of Caddy's cookie filter: replace NAME VALUE,
// hash NAME or delete NAME.
type CookieAction struct {
	Op, Name, Value string
}

// FilterOps are the filters pollproxy implements, of Caddy's.
var FilterOps = []string{"delete", "replace", "hash", "ip_mask", "regexp", "cookie"}

// CheckFilterField says whether pollproxy can filter the field at path.
func CheckFilterField(path string) error {
	switch path {
	case "request>remote_ip", "request>client_ip", "request>uri", "user_id":
		return nil
	}
	for _, p := range []string{"request>headers>", "resp_headers>"} {
		if name, ok := strings.CutPrefix(path, p); ok && name != "" && !strings.Contains(name, ">") {
			return nil
		}
	}
	return fmt.Errorf("filtering %s is not supported by pollproxy (want request>remote_ip, request>client_ip, request>uri, request>headers>NAME, resp_headers>NAME or user_id)", path)
}

// view is an entry's filterable fields after the logger's filters.
type view struct {
	remoteIP, clientIP, uri, userID string
	omit                            [4]bool // remote_ip, client_ip, uri, user_id deleted
	header, resp                    []stream.Field
	headerRepl, respRepl            [][2]string // fields replace made one string: name, value
	headerEmpty, respEmpty          []string    // fields a cookie filter left no value: []
}

// view applies the logger's filters to r's fields, after credentials
// were redacted, as Caddy redacts them before its filters see them.
func (l *Logger) view(r *observe.RequestLog) view {
	v := view{remoteIP: r.Remote.Addr().Unmap().String(), clientIP: clientIP(r).Unmap().String(),
		uri: r.Path, userID: r.User, header: r.Header, resp: r.RespHeader}
	if !l.opts.Credentials {
		v.header, v.resp = redact(v.header), redact(v.resp)
	}
	for i := range l.opts.Filters {
		v.apply(&l.opts.Filters[i])
	}
	return v
}

// redact returns fs with each credential field (credential) one
// REDACTED value, as Caddy logs them without log_credentials: a copy
// when there is one, since the entry's fields may be shared.
func redact(fs []stream.Field) []stream.Field {
	if !slices.ContainsFunc(fs, func(f stream.Field) bool { return credential(f.Name) }) {
		return fs
	}
	out := make([]stream.Field, 0, len(fs))
	for i, f := range fs {
		switch {
		case !credential(f.Name):
			out = append(out, f)
		case !seen(fs[:i], f.Name):
			out = append(out, stream.Field{Name: f.Name, Value: "REDACTED"})
		}
	}
	return out
}

func (v *view) apply(f *Filter) {
	scalar := func(s *string, omit *bool) {
		switch f.Op {
		case "delete":
			*omit = true
		default:
			*s = f.value(*s)
		}
	}
	switch f.Field {
	case "request>remote_ip":
		scalar(&v.remoteIP, &v.omit[0])
	case "request>client_ip":
		scalar(&v.clientIP, &v.omit[1])
	case "request>uri":
		scalar(&v.uri, &v.omit[2])
	case "user_id":
		scalar(&v.userID, &v.omit[3])
	default:
		if name, ok := strings.CutPrefix(f.Field, "request>headers>"); ok {
			if f.Op == "cookie" {
				v.header, v.headerEmpty = f.cookies(v.header, v.headerEmpty, strings.ToLower(name))
			} else {
				v.header, v.headerRepl = f.fields(v.header, v.headerRepl, strings.ToLower(name))
			}
		} else if name, ok := strings.CutPrefix(f.Field, "resp_headers>"); ok {
			if f.Op == "cookie" {
				v.resp, v.respEmpty = f.cookies(v.resp, v.respEmpty, strings.ToLower(name))
			} else {
				v.resp, v.respRepl = f.fields(v.resp, v.respRepl, strings.ToLower(name))
			}
		}
	}
}

// fields filters the values of the fields named name: a copy, since the
// entry's fields may be shared.
func (f *Filter) fields(fs []stream.Field, repl [][2]string, name string) ([]stream.Field, [][2]string) {
	if !slices.ContainsFunc(fs, func(x stream.Field) bool { return x.Name == name }) {
		return fs, repl
	}
	out := make([]stream.Field, 0, len(fs))
	for _, x := range fs {
		switch {
		case x.Name != name:
			out = append(out, x)
		case f.Op == "delete":
		case f.Op == "replace":
			// Caddy's replace makes the field one string, not an array.
			if !slices.ContainsFunc(repl, func(r [2]string) bool { return r[0] == name }) {
				repl = append(repl, [2]string{name, f.Value})
			}
		default:
			out = append(out, stream.Field{Name: x.Name, Value: f.value(x.Value)})
		}
	}
	return out, repl
}

// cookies is Caddy's cookie filter on the fields named name: their
// values read as Cookie fields are (net/http's parsing, which Caddy's
// filter uses, so what it drops as malformed goes here too), each
// cookie an action names replaced, hashed or deleted, and the rest
// written back as one field, "a=1; b=2". With no cookie left, the field
// is an empty array (in empty), as Caddy writes it.
func (f *Filter) cookies(fs []stream.Field, empty []string, name string) ([]stream.Field, []string) {
	in := http.Header{}
	for _, x := range fs {
		if x.Name == name {
			in.Add("Cookie", x.Value)
		}
	}
	if len(in) == 0 {
		return fs, empty
	}
	out := &http.Request{Header: http.Header{}}
next:
	for _, c := range (&http.Request{Header: in}).Cookies() {
		for _, a := range f.Cookies {
			if c.Name != a.Name {
				continue
			}
			switch a.Op {
			case "replace":
				c.Value = a.Value
			case "hash":
				c.Value = hash(c.Value)
			case "delete":
				continue next
			}
			break
		}
		out.AddCookie(c)
	}
	kept := make([]stream.Field, 0, len(fs))
	done := false
	for _, x := range fs {
		switch {
		case x.Name != name:
			kept = append(kept, x)
		case !done:
			done = true
			if v := out.Header.Get("Cookie"); v != "" {
				kept = append(kept, stream.Field{Name: name, Value: v})
			} else {
				empty = append(empty, name)
			}
		}
	}
	return kept, empty
}

// hash is Caddy's log hash: the first 4 bytes of the SHA-256, in hex.
func hash(s string) string { return fmt.Sprintf("%.4x", sha256.Sum256([]byte(s))) }

// value is one string after the filter.
func (f *Filter) value(s string) string {
	switch f.Op {
	case "replace":
		return f.Value
	case "hash":
		return hash(s)
	case "regexp":
		return f.Re.ReplaceAllString(s, f.Value)
	case "ip_mask":
		return f.mask(s)
	}
	return s
}

// mask keeps the first V4 or V6 bits of each address in s, as Caddy's
// ip_mask does (comma-separated lists and host:port included).
func (f *Filter) mask(s string) string {
	var parts []string
	for _, value := range strings.Split(s, ",") {
		value = strings.TrimSpace(value)
		host, port, err := net.SplitHostPort(value)
		if err != nil {
			host = value
		}
		ip := net.ParseIP(host)
		if ip == nil {
			parts = append(parts, value)
			continue
		}
		m := net.CIDRMask(f.V4, 32)
		if ip.To4() == nil {
			m = net.CIDRMask(f.V6, 128)
		} else {
			ip = ip.To4()
		}
		masked := ip.Mask(m).String()
		if port != "" {
			masked = net.JoinHostPort(masked, port)
		}
		parts = append(parts, masked)
	}
	return strings.Join(parts, ", ")
}
