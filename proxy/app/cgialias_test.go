package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestCGIAliasFieldsDropped: request fields whose names hold '_' or '.'
// ("X_Forwarded_For", which CGI-style apps read as X-Forwarded-For) are
// dropped from every request, as Caddy drops them: no origin and no
// forward_auth service gets them, and no matcher sees them. Over HTTP/2
// and HTTP/1.1 on every backend.
func TestCGIAliasFieldsDropped(t *testing.T) {
	auth := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k := range r.Header {
			if strings.ContainsAny(k, "_.") {
				w.WriteHeader(401)
				fmt.Fprintf(w, "auth got %s", k)
				return
			}
		}
	}))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := headOrigin(t)
		port, cls := startSite(t, backend, fmt.Sprintf(`	@alias header X_Forwarded_For *
	respond @alias "matched an alias" 400
	handle /auth/* {
		forward_auth %[2]s {
			uri /check
		}
		reverse_proxy %[1]s
	}
	handle {
		reverse_proxy %[1]s
	}`, o, auth))
		base := fmt.Sprintf("https://localhost:%d", port)
		hdr := map[string]string{"X_Forwarded_For": "6.6.6.6", "X.Real.IP": "6.6.6.6", "Plain-Field": "kept"}
		for proto, c := range cls {
			for _, path := range []string{"/x", "/auth/x"} {
				t.Run(proto+path, func(t *testing.T) {
					status, body := send(t, c, "GET", base+path, "", hdr)
					if status != 200 {
						t.Fatalf("status %d: %s", status, body)
					}
					_, fields := headLines(body)
					for _, f := range fields {
						name, _, _ := strings.Cut(f, ":")
						if strings.ContainsAny(name, "_.") {
							t.Errorf("origin got %q", f)
						}
					}
					if v, _ := hasField(fields, "plain-field"); v != "kept" {
						t.Errorf("plain-field = %q, want kept", v)
					}
					if v, _ := hasField(fields, "x-forwarded-for"); v != "127.0.0.1" {
						t.Errorf("x-forwarded-for = %q, want the peer's", v)
					}
				})
			}
		}
	})
}
