package app

import (
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestHTTPSUpstreamCaddyfile: reverse_proxy https://… from a Caddyfile.
// With the origin's certificate in tls_trust_pool, requests and the
// active health checks reach it over TLS, with Host the upstream's; with
// the system roots alone, its certificate does not verify: a 502 and one
// log line naming the upstream.
func TestHTTPSUpstreamCaddyfile(t *testing.T) {
	originCert, originKey, _ := servertest.CertFiles(t)
	cert, err := stdtls.LoadX509KeyPair(originCert, originKey)
	if err != nil {
		t.Fatal(err)
	}
	var checks atomic.Int32
	o := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			checks.Add(1)
		}
		fmt.Fprintf(w, "%s %v", r.Host, r.TLS != nil)
	}))
	o.TLS = &stdtls.Config{Certificates: []stdtls.Certificate{cert}}
	o.StartTLS()
	t.Cleanup(o.Close)
	addr := o.Listener.Addr().String()
	site := fmt.Sprintf(`	handle /trusted/* {
		reverse_proxy https://%[1]s {
			health_uri /health
			health_interval 1h
			transport http {
				tls_trust_pool file %[2]s
				tls_timeout 5s
			}
		}
	}
	handle {
		reverse_proxy https://%[1]s
	}`, addr, originCert)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		checks.Store(0)
		port, cls, r := startSiteLogged(t, backend, site)
		// The checker runs on its own goroutine.
		servertest.Eventually(t, 10*time.Second, "an active health check reaching the origin", func() bool { return checks.Load() > 0 })
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			res, err := c.Get(base + "/trusted/x")
			if err != nil {
				t.Fatalf("%s: %v", proto, err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || string(b) != addr+" true" {
				t.Fatalf("%s: %d %q, want 200 %q", proto, res.StatusCode, b, addr+" true")
			}
		}
		res, err := cls["h2"].Get(base + "/untrusted")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 502 || !strings.Contains(string(b), "certificate") {
			t.Fatalf("untrusted origin: %d %q, want 502 about its certificate", res.StatusCode, b)
		}
		line := r.logged("upstream TLS handshake failed", 10*time.Second)
		if n := strings.Count(line, "upstream TLS handshake failed"); n != 1 || !strings.Contains(line, "upstream="+addr) {
			t.Fatalf("log:\n%s\nwant one failure line naming upstream %s", line, addr)
		}
	})
}
