package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// hostOrigin is an HTTP/1.1 app that answers with the Host and X-Up it
// received, so a test sees exactly what header_up made of them.
func hostOrigin(t *testing.T) string {
	t.Helper()
	var addr string // set before any request arrives
	addr = servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s|%s|%s|%s", addr, r.Host, r.Header.Get("X-Up"), r.Header.Get("X-Forwarded-Host"))
	}))
	return addr
}

// TestUpstreamPlaceholders: Caddy's "header_up Host {upstream_hostport}"
// gives each origin its own address as Host, on the upstream that
// answers: after a connect to another one failed, and as round robin moves
// between two; X-Forwarded-Host keeps the client's.
func TestUpstreamPlaceholders(t *testing.T) {
	a, b := hostOrigin(t), hostOrigin(t)
	refused := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}()
	site := fmt.Sprintf(`	handle /first/* {
		reverse_proxy %[3]s %[1]s {
			lb_policy first
			lb_retries 1
			header_up Host {upstream_hostport}
			header_up X-Up "{http.reverse_proxy.upstream.host} {http.reverse_proxy.upstream.port} {method}"
		}
	}
	handle /rr/* {
		reverse_proxy %[1]s %[2]s {
			header_up Host {upstream_hostport}
		}
	}
	handle {
		reverse_proxy %[1]s
	}`, a, b, refused)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		client := fmt.Sprintf("localhost:%d", port)
		aHost, aPort, _ := net.SplitHostPort(a)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				get := func(path string) string {
					t.Helper()
					resp, err := c.Get(base + path)
					if err != nil {
						t.Fatalf("GET %s: %v", path, err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					return string(body)
				}
				// The refused upstream was tried first: the head the origin
				// got was filled for it, not for the one that failed.
				for range 3 {
					want := fmt.Sprintf("%s|%s|%s %s GET|%s", a, a, aHost, aPort, client)
					if got := get("/first/x"); got != want {
						t.Errorf("GET /first/x: %q, want %q", got, want)
					}
				}
				seen := map[string]bool{}
				for range 4 {
					got := get("/rr/x")
					var answered, host string
					fmt.Sscanf(got, "%s", &answered)
					if i := len(a); len(got) > 2*i {
						answered, host = got[:i], got[i+1:2*i+1]
					}
					if answered != host || (answered != a && answered != b) {
						t.Errorf("GET /rr/x: %q: Host is not the answering upstream", got)
					}
					seen[answered] = true
				}
				if len(seen) != 2 {
					t.Errorf("round robin reached %d upstreams, want 2", len(seen))
				}
				// Without header_up the origin gets the client's Host.
				if got, want := get("/other"), fmt.Sprintf("%s|%s||%s", a, client, client); got != want {
					t.Errorf("GET /other: %q, want %q", got, want)
				}
			})
		}
	})
}
