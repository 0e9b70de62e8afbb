package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestHopFieldPlaceholders: placeholders and header matchers read the
// hop-by-hop fields an HTTP/1.1 client sent (Connection, Keep-Alive,
// Upgrade, TE, the fields Connection names), as Caddy's do, though none is
// forwarded as it came (but "TE: trailers", as Caddy): header_up
// Connection {header.Connection} sends the client's value, not an empty
// field.
func TestHopFieldPlaceholders(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, _ := startSite(t, backend, fmt.Sprintf(`	@ka header Connection *keep-alive*
	handle @ka {
		reverse_proxy %s {
			header_up Connection {header.Connection}
			header_up X-KA {header.Keep-Alive}
			header_up X-Named {header.X-Hop}
			header_up X-TE {header.TE}
		}
	}
	respond "not matched"`, headOrigin(t)))
		status, body := rawH1(t, port, "GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive, X-Hop\r\nConnection: te\r\n"+
			"Keep-Alive: timeout=5\r\nX-Hop: 1\r\nTE: trailers\r\n\r\n")
		if status != 200 {
			t.Fatalf("status %d: %q", status, body)
		}
		_, fields := headLines(body)
		for name, want := range map[string]string{
			"connection": "keep-alive, X-Hop,te", "x-ka": "timeout=5", "x-named": "1", "x-te": "trailers",
		} {
			if got, _ := hasField(fields, name); got != want {
				t.Errorf("origin got %s %q, want %q; head:\n%s", name, got, want, body)
			}
		}
		for _, name := range []string{"keep-alive", "x-hop"} {
			if v, ok := hasField(fields, name); ok {
				t.Errorf("origin got hop-by-hop %s: %q", name, v)
			}
		}
		// The one hop-by-hop field Caddy passes on, reduced to the token.
		if v, _ := hasField(fields, "te"); v != "trailers" {
			t.Errorf("origin got te %q, want trailers", v)
		}
	})
}
