package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestRegexpCaptures: path_regexp and header_regexp save their groups for
// {re.NAME.N}, {re.NAME.GROUP} and {re.N} with Caddy's names (a matcher's
// own name, else the named matcher's), in matchers and in expressions,
// the later match overwriting; a group no match saved stays written in
// respond as Caddy's replacer leaves it. The answers are what Caddy gives
// for the same file. A rewrite to an origin uses them too, on every backend
// and both protocols.
func TestRegexpCaptures(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	@static path_regexp static \.([a-f0-9]{6})\.(css|js)$
	handle @static {
		rewrite * /assets/{re.static.2}/{re.static.1}
		reverse_proxy %s
	}
	@named path_regexp ^/n/(?P<id>[0-9]+)(/(x))?
	respond @named "named {re.named.id} {re.id} {re.named.3}|{re.named.9}|{re.other.1}|"
	@login header_regexp login Cookie login_([a-f0-9]+)
	respond @login "login {re.login.1} {re.1}"
	@h header_regexp X-Id ^(?P<v>[a-z]+)$
	respond @h "h {re.h.v}"
	@e `+"`path_regexp('^/e/(\\\\w+)') && header_regexp('ua', 'User-Agent', '^(\\\\w+)')`"+`
	respond @e "e {re.e.1} {re.ua.1} {re.1}"
	@both {
		path_regexp ^/b/(\w+)
		not path_regexp x ^/b/zz
	}
	respond @both "b {re.both.1} {re.x.0}"
	respond "none"`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/a.abcdef.css", status: 200, body: "o /assets/css/abcdef"},
				{method: "GET", path: "/n/42", status: 200, body: "named 42 42 |{http.regexp.named.9}|{http.regexp.other.1}|"},
				{method: "GET", path: "/n/42/x", status: 200, body: "named 42 42 x|{http.regexp.named.9}|{http.regexp.other.1}|"},
				{method: "GET", path: "/c", header: map[string]string{"Cookie": "login_beef"}, status: 200, body: "login beef beef"},
				{method: "GET", path: "/h", header: map[string]string{"X-Id": "abc"}, status: 200, body: "h abc"},
				{method: "GET", path: "/e/foo", header: map[string]string{"User-Agent": "curl/8"}, status: 200, body: "e foo curl curl"},
				{method: "GET", path: "/b/yy", status: 200, body: "b yy {http.regexp.x.0}"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
