package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestInvoke: a named route runs where invoke stands, with matchers of
// its own, its directives sorted as a site's (and the invokes among the
// site's), and the site's routes after
// it run on when it answers nothing, as Caddy's invoke; on every backend
// and both protocols.
func TestInvoke(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		body := fmt.Sprintf(`	invoke tag
	invoke /api/* api
	respond "site {vars.from}"
}

&(api) {
	@v1 path /v1/*
	respond @v1 "v1 {path}"
	uri strip_prefix /api
	reverse_proxy %s
}

&(tag) {
	header X-Tag tagged
	vars from named`, o)
		port, cls := startSite(t, backend, body)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				// The invoke with a matcher sorts first, as in Caddy, and
				// answers: the other never runs.
				{method: "GET", path: "/api/x", status: 200, body: "o /x", want: map[string]string{"X-Tag": ""}},
				// uri sorts before respond inside the named route.
				{method: "GET", path: "/api/v1/y", status: 200, body: "v1 /v1/y", want: map[string]string{"X-Tag": ""}},
				// A named route of matcherless directives keeps its first
				// alone (vars sorts before header), as Caddy's does.
				{method: "GET", path: "/other", status: 200, body: "site named", want: map[string]string{"X-Tag": ""}},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
