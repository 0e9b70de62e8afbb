package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestXAccelRedirect: Caddy's X-Accel-Redirect example as its docs write
// it — the app decides, file_server sends the private file from a root
// the client cannot reach otherwise — over HTTP/2 and HTTP/1.1 on every
// poller backend.
func TestXAccelRedirect(t *testing.T) {
	private := t.TempDir()
	os.WriteFile(filepath.Join(private, "report.txt"), []byte("the private report\n"), 0o644)
	app := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/download" && r.URL.Query().Get("token") == "good" {
			w.Header().Set("X-Accel-Redirect", "/report.txt")
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "no")
	}))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fmt.Sprintf(`	reverse_proxy %s {
		@accel header X-Accel-Redirect *
		handle_response @accel {
			root %s
			rewrite {rp.header.X-Accel-Redirect}
			method GET
			file_server
		}
	}`, app, private))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/download?token=good", status: 200, body: "the private report\n",
					want: map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Accel-Redirect": ""}},
				{method: "POST", path: "/download?token=good", status: 200, body: "the private report\n"},
				{method: "GET", path: "/download?token=bad", status: 403, body: "no"},
				{method: "GET", path: "/report.txt", status: 403, body: "no"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
