package app

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestHeaderMatch: header's match block (Caddy's response matchers) edits
// only the responses whose status and fields it matches, on every backend
// and both protocols.
func TestHeaderMatch(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ct := r.URL.Query().Get("ct"); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			code, _ := strconv.Atoi(r.URL.Query().Get("status"))
			w.WriteHeader(code)
		}))
		port, cls := startSite(t, backend, fmt.Sprintf(`	header Cache-Control "max-age=3600" {
		match status 2xx
	}
	header {
		-Cache-Control
		X-Error yes
		match {
			status 500 503
		}
	}
	header X-Image 1 {
		match header Content-Type image/*
	}
	reverse_proxy %s`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/?status=200", status: 200, want: map[string]string{"Cache-Control": "max-age=3600", "X-Error": "", "X-Image": ""}},
				{method: "GET", path: "/?status=404", status: 404, want: map[string]string{"Cache-Control": "", "X-Error": ""}},
				{method: "GET", path: "/?status=503", status: 503, want: map[string]string{"Cache-Control": "", "X-Error": "yes"}},
				{method: "GET", path: "/?status=200&ct=image/png", status: 200, want: map[string]string{"Cache-Control": "max-age=3600", "X-Image": "1"}},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
