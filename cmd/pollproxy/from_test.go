package main

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

func TestParseFrom(t *testing.T) {
	for _, c := range []struct {
		from       string
		name, bind string
		port       int
		err        string
	}{
		{from: "localhost:8443", name: "localhost", bind: "localhost", port: 8443},
		{from: "app.localhost:9443", name: "app.localhost", bind: "localhost", port: 9443},
		{from: "https://App.Localhost.", name: "app.localhost", bind: "localhost", port: 443},
		{from: "127.0.0.1:0", name: "127.0.0.1", bind: "127.0.0.1", port: 0},
		{from: "[::1]:8443", name: "::1", bind: "::1", port: 8443},
		{from: "example.com", name: "example.com", bind: "", port: 443},
		{from: ":8443", err: "plain HTTP"},
		{from: "localhost:80", err: "plain HTTP"},
		{from: "http://localhost:8443", err: "only https://"},
		{from: "localhost:8443/app", err: "paths"},
		{from: "localhost:x", err: "bad port"},
	} {
		a, err := parseFrom(c.from)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.from, err, c.err)
			}
			continue
		}
		if err != nil || a.name != c.name || a.bind != c.bind || a.port != c.port {
			t.Errorf("%s: %+v %v, want name %q bind %q port %d", c.from, a, err, c.name, c.bind, c.port)
		}
	}
}

// TestReverseProxyDevName: the two forms a developer tries first. --from
// names the site (app.localhost is not an address to look up), and --to
// :PORT reaches an app that listens on 127.0.0.1 only, as reverse_proxy
// :PORT does in a Caddyfile. The printed URL verifies with the printed
// local CA root for the site's name.
func TestReverseProxyDevName(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := startOrigin(t, "the app")
		_, originPort, _ := net.SplitHostPort(origin)
		port := servertest.FreePort(t)
		p := startProc(t, "local CA root", []string{"POLLPROXY_DATA=" + t.TempDir()},
			"reverse-proxy", "--from", fmt.Sprintf("app.localhost:%d", port), "--to", ":"+originPort,
			"--loops", "1", "--poller", backend)
		out := p.wait("\n", time.Second)
		url := regexp.MustCompile(`https://\S+/`).FindString(out)
		if want := fmt.Sprintf("https://app.localhost:%d/", port); url != want {
			t.Fatalf("printed URL %q, want %q", url, want)
		}
		m := regexp.MustCompile(`local CA root \(for curl --cacert\): (\S+)`).FindStringSubmatch(p.wait("\n", time.Second))
		if m == nil {
			t.Fatal("no local CA root printed")
		}
		pemBytes, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pemBytes) {
			t.Fatal("the CA root file holds no certificate")
		}
		// *.localhost resolves to loopback in browsers and curl without
		// DNS; the test's resolver may not know it, so it dials loopback.
		tr := &http.Transport{
			TLSClientConfig:   &stdtls.Config{RootCAs: roots},
			ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
			},
		}
		defer tr.CloseIdleConnections()
		if body := getBody(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, url); body != "the app" {
			t.Errorf("answered %q, want the app's %q", body, "the app")
		}
	})
}
