package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestOriginRequestFraming: the body framing an origin receives is the
// one Caddy's transport (net/http) writes: none for a bodiless GET,
// DELETE or OPTIONS, even when the client declared "Content-Length: 0";
// "Content-Length: 0" for an empty POST, PUT or PATCH, also from an h2
// client that sent none; the length when known; chunked otherwise.
func TestOriginRequestFraming(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, _ := startSite(t, backend, "\treverse_proxy "+headOrigin(t))
		framing := func(t *testing.T, body string) string {
			t.Helper()
			_, fields := headLines(body)
			cl, hasCL := hasField(fields, "content-length")
			te, hasTE := hasField(fields, "transfer-encoding")
			switch {
			case hasCL && hasTE:
				return "both"
			case hasCL:
				return "length " + cl
			case hasTE:
				return te
			}
			return "none"
		}
		h1 := func(method, extra string) string {
			return fmt.Sprintf("%s /x HTTP/1.1\r\nHost: localhost\r\n%sConnection: close\r\n\r\n", method, extra)
		}
		for _, c := range []struct{ name, request, want string }{
			{"GET", h1("GET", ""), "none"},
			{"GET 1.0", "GET /x HTTP/1.0\r\nHost: localhost\r\n\r\n", "none"},
			{"GET length 0", h1("GET", "Content-Length: 0\r\n"), "none"},
			{"HEAD", h1("HEAD", ""), "none"},
			{"DELETE length 0", h1("DELETE", "Content-Length: 0\r\n"), "none"},
			{"OPTIONS", h1("OPTIONS", ""), "none"},
			{"POST", h1("POST", ""), "length 0"},
			{"PUT length 0", h1("PUT", "Content-Length: 0\r\n"), "length 0"},
			{"PATCH", h1("PATCH", ""), "length 0"},
			{"POST body", h1("POST", "Content-Length: 3\r\n") + "abc", "length 3"},
			{"POST chunked", h1("POST", "Transfer-Encoding: chunked\r\n") + "3\r\nabc\r\n0\r\n\r\n", "chunked"},
		} {
			t.Run("h1.1/"+c.name, func(t *testing.T) {
				status, body := rawH1(t, port, c.request)
				if c.name == "HEAD" {
					// No body comes back; the origin's answer to GET
					// shows what a bodiless request gets.
					if status != 200 {
						t.Fatalf("status %d", status)
					}
					return
				}
				if got := framing(t, body); status != 200 || got != c.want {
					t.Errorf("origin got framing %q (status %d), want %q; head:\n%s", got, status, c.want, body)
				}
			})
		}
		h2 := func(method string) []string {
			return []string{":method", method, ":scheme", "https", ":authority", "localhost", ":path", "/x"}
		}
		for _, c := range []struct {
			name  string
			body  []byte
			pairs []string
			want  string
		}{
			{"GET", nil, h2("GET"), "none"},
			{"DELETE", nil, h2("DELETE"), "none"},
			{"POST", nil, h2("POST"), "length 0"},
			{"PUT length 0", nil, append(h2("PUT"), "content-length", "0"), "length 0"},
			{"POST body", []byte("abc"), h2("POST"), "chunked"},
			{"POST body length", []byte("abc"), append(h2("POST"), "content-length", "3"), "length 3"},
		} {
			t.Run("h2/"+c.name, func(t *testing.T) {
				status, body := rawH2(t, port, c.body, c.pairs...)
				if got := framing(t, body); status != "200" || got != c.want {
					t.Errorf("origin got framing %q (status %s), want %q; head:\n%s", got, status, c.want, body)
				}
			})
		}
	})
}
