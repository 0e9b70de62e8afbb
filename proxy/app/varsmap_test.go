package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestVarsAndMap: the vars directive sets variables that {vars.*}, the
// vars and vars_regexp matchers and their CEL functions read; map
// defines placeholders, filled when read from the request as it is then
// (a rewrite after the map changes {p}), with literal and regexp inputs,
// "-" outputs (the next mapping, then the default) and defaults, and numbers as Caddy's configuration carries
// them. The answers are Caddy's for the same file, on every backend and
// both protocols.
func TestVarsAndMap(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	map {path} {kind} {num} {
		/a        apple   007
		~^/b/(.*)$ "b-$1" -
		/c        -       1.50
		default   other   0
	}
	vars {
		tier gold
		who  {header.X-Who}
	}
	vars /v/set level silver
	@silver vars level silver
	@gold vars_regexp g tier ^(go)ld$
	@cel `+"`vars({'level': ['bronze', 'silver']}) && vars_regexp('who', '^(z+)$')`"+`
	@kinda vars {kind} apple
	respond @cel "cel {re.cel.1}"
	respond @silver "silver {vars.level} {vars.tier}"
	respond @kinda "kind apple {num} {http.vars.who}"
	handle /rw/* {
		rewrite * /a
		reverse_proxy %s {
			header_up X-Up "{kind}:{num}"
		}
	}
	respond @gold "gold {re.g.1} {kind} [{num}] {vars.who} {vars.none}"`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/a", status: 200, body: "kind apple 7 "},
				{method: "GET", path: "/b/x", header: map[string]string{"X-Who": "ann"}, status: 200, body: "gold go b-x [0] ann "},
				{method: "GET", path: "/c", status: 200, body: "gold go other [1.5]  "},
				{method: "GET", path: "/d", status: 200, body: "gold go other [0]  "},
				{method: "GET", path: "/v/set", status: 200, body: "silver silver gold"},
				{method: "GET", path: "/v/set", header: map[string]string{"X-Who": "zz"}, status: 200, body: "cel zz"},
				{method: "GET", path: "/rw/q", status: 200, body: "o /a", want: map[string]string{"X-Got-Up": "apple:7"}},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
