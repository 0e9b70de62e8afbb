package route

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// maxCookies is net/http's bound on the cookies of a request: with more,
// it reads none.
const maxCookies = 3000

// Cookie returns the value of the first cookie named name in the
// request's Cookie fields, read as net/http reads them for Caddy, the one
// way pollproxy reads cookies: pairs split on ';' and trimmed, a name that
// is a token, a value of cookie octets with its double quotes removed;
// anything else skipped. fold compares names without case, as Caddy's
// {http.request.cookie.*} does; otherwise exactly, as Request.Cookie does
// for the cookie load-balancing policy.
func Cookie(r *stream.Request, name string, fold bool) (string, bool) {
	if name == "" {
		return "", false
	}
	n := 0
	for _, f := range r.Header {
		if f.Name == "cookie" {
			n += strings.Count(f.Value, ";") + 1
		}
	}
	if n == 0 || n > maxCookies {
		return "", false
	}
	for _, f := range r.Header {
		if f.Name != "cookie" {
			continue
		}
		for line := trimSpace(f.Value); line != ""; {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = trimSpace(part)
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			k = trimSpace(k)
			if !field.ValidName(k) || !(k == name || fold && strings.EqualFold(k, name)) {
				continue
			}
			if v, ok := cookieValue(v); ok {
				return v, true
			}
		}
	}
	return "", false
}

// cookieValue is net/http's parseCookieValue: surrounding double quotes
// removed, and only cookie octets allowed.
func cookieValue(raw string) (string, bool) {
	if len(raw) > 1 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	for i := 0; i < len(raw); i++ {
		if b := raw[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return "", false
		}
	}
	return raw, true
}

// trimSpace is textproto.TrimString: ASCII space, tab, CR and LF off both
// ends.
func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
