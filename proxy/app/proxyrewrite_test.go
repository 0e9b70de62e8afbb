package app

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestProxyRewriteMethod: reverse_proxy's method and rewrite change the
// origin's request alone (forward_auth's expanded form): the method, with
// placeholders, and the target, built as the rewrite directive builds it
// (a target without "?" keeps the query); the routes and the client's
// answer see the request as it came; a POST made of a GET without a
// body says Content-Length: 0, as Go's transport does. On every backend
// and both protocols.
func TestProxyRewriteMethod(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Got", fmt.Sprintf("%s %s %q", r.Method, r.RequestURI, b))
			fmt.Fprint(w, "origin")
		}))
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle /auth/* {
		reverse_proxy %[1]s {
			method GET
			rewrite /verify?orig={uri}
		}
	}
	handle /m/* {
		reverse_proxy %[1]s {
			method {header.X-Method}
			rewrite /new{path}
		}
	}
	handle {
		header X-Route {method}
		reverse_proxy %[1]s {
			method post
		}
	}`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/auth/x?a=1", status: 200, body: "origin", want: map[string]string{"X-Got": `GET /verify?orig=%2Fauth%2Fx%3Fa%3D1 ""`}},
				{method: "GET", path: "/m/y?q=2", header: map[string]string{"X-Method": "put"}, status: 200, body: "origin", want: map[string]string{"X-Got": `PUT /new/m/y?q=2 ""`}},
				{method: "GET", path: "/other", status: 200, body: "origin", want: map[string]string{"X-Got": `POST /other ""`, "X-Route": "GET"}},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
