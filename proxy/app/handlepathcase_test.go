package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestStripPrefixIgnoresCase: handle_path and uri strip_prefix strip their
// prefix whatever its case or the request's, as Caddy does (its path
// matcher and its strip both ignore case): handle_path /Mixed/* gives
// /mixed/x the path /x, on every backend and both protocols.
func TestStripPrefixIgnoresCase(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle_path /Mixed/* {
		reverse_proxy %[1]s
	}
	handle /api/* {
		uri strip_prefix /API
		reverse_proxy %[1]s
	}`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/mixed/x", status: 200, body: "o /x"},
				{method: "GET", path: "/MIXED/y?q=1", status: 200, body: "o /y?q=1"},
				{method: "GET", path: "/Mixed/z", status: 200, body: "o /z"},
				{method: "GET", path: "/api/a", status: 200, body: "o /a"},
				{method: "GET", path: "/Api/b", status: 200, body: "o /b"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
