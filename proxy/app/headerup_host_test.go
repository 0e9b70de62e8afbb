package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestHeaderUpKeepsHost: header_up edits that remove every field, or Host
// itself, or leave it empty still send a Host, which HTTP/1.1 requires:
// the upstream's address, as Caddy's transport writes for a request whose
// host its edits emptied.
func TestHeaderUpKeepsHost(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := headOrigin(t)
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle /all {
		reverse_proxy %[1]s {
			header_up -*
		}
	}
	handle /host {
		reverse_proxy %[1]s {
			header_up -Host
			header_up X-Kept yes
		}
	}
	handle /empty {
		reverse_proxy %[1]s {
			header_up Host ""
		}
	}
	handle /set {
		reverse_proxy %[1]s {
			header_up Host example.net
		}
	}`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []struct{ path, host string }{
				{"/all", o}, {"/host", o}, {"/empty", o}, {"/set", "example.net"},
			} {
				t.Run(proto+x.path, func(t *testing.T) {
					status, body := send(t, c, "GET", base+x.path, "", nil)
					_, fields := headLines(body)
					host, ok := hasField(fields, "host")
					if status != 200 || !ok || host != x.host {
						t.Errorf("origin got Host %q (present %v, status %d), want %q; head:\n%s", host, ok, status, x.host, body)
					}
				})
			}
		}
	})
}
