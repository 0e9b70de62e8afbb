package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestResponseVia: a proxied response carries pollproxy's Via as Caddy's
// carries its own: the origin response's version, before the origin's own
// Via, kept when header_down removes the origin's; an answer pollproxy
// makes itself has none.
func TestResponseVia(t *testing.T) {
	http10 := servertest.ServeConns(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		plain, withVia := headOrigin(t), headOrigin(t, "Via: 1.1 nginx")
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle /plain {
		reverse_proxy %[1]s
	}
	handle /via {
		reverse_proxy %[2]s
	}
	handle /down {
		reverse_proxy %[2]s {
			header_down -Via
		}
	}
	handle /old {
		reverse_proxy %[3]s
	}
	respond "self"`, plain, withVia, http10))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []struct {
				path string
				want []string
			}{
				{"/plain", []string{"1.1 pollproxy"}},
				{"/via", []string{"1.1 pollproxy", "1.1 nginx"}},
				{"/down", []string{"1.1 pollproxy"}},
				{"/old", []string{"1.0 pollproxy"}},
				{"/self", nil},
			} {
				t.Run(proto+x.path, func(t *testing.T) {
					resp, err := c.Get(base + x.path)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if got := resp.Header.Values("Via"); !slices.Equal(got, x.want) {
						t.Errorf("Via %q, want %q", got, x.want)
					}
				})
			}
		}
	})
}

// TestRequestVia: the origin gets the client's Via lines and then
// pollproxy's, on a line of its own, naming the version the client spoke,
// as Caddy's Via does.
func TestRequestVia(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, _ := startSite(t, backend, "\treverse_proxy "+headOrigin(t))
		vias := func(body string) []string {
			var got []string
			_, fields := headLines(body)
			for _, f := range fields {
				if name, v, _ := strings.Cut(f, ":"); name == "via" {
					got = append(got, strings.TrimSpace(v))
				}
			}
			return got
		}
		for _, c := range []struct {
			name, request string
			want          []string
		}{
			{"1.1", "GET / HTTP/1.1\r\nHost: localhost\r\nVia: 1.1 edge\r\nConnection: close\r\n\r\n", []string{"1.1 edge", "1.1 pollproxy"}},
			{"1.0", "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", []string{"1.0 pollproxy"}},
		} {
			if _, body := rawH1(t, port, c.request); !slices.Equal(vias(body), c.want) {
				t.Errorf("HTTP/%s: origin got Via %q, want %q", c.name, vias(body), c.want)
			}
		}
		_, body := rawH2(t, port, nil, ":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", "/", "via", "1.1 edge")
		if want := []string{"1.1 edge", "2.0 pollproxy"}; !slices.Equal(vias(body), want) {
			t.Errorf("h2: origin got Via %q, want %q", vias(body), want)
		}
	})
}
