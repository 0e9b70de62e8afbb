package main

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestReverseProxyDevName: the two forms a developer tries first. --from
// names the site (app.localhost is not an address to look up), and --to
// :PORT reaches an app that listens on 127.0.0.1 only, as reverse_proxy
// :PORT does in a Caddyfile. The printed URL verifies with the printed
// local CA root for the site's name.
func TestReverseProxyDevName(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, servertest.Says("the app"))
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

// TestReverseProxyCaddyFlags: caddy reverse-proxy's flags with Caddy's
// meanings: --change-host-header sends the upstream's host:port as Host,
// --header-up and --header-down set fields each way, -t repeats, and
// --access-log writes a JSON line per request.
func TestReverseProxyCaddyFlags(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "host=%s x-up=%s", r.Host, r.Header.Get("X-Up"))
		}))
		port := servertest.FreePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p := startProc(t, "local CA root", []string{"POLLPROXY_DATA=" + t.TempDir()},
			"reverse-proxy", "-f", addr, "-t", origin, "--to", origin, "--change-host-header",
			"-H", "X-Up: one", "--header-down", "X-Down: two", "--access-log", "--internal-certs",
			"--loops", "1", "--poller", backend)
		tr := &http.Transport{TLSClientConfig: &stdtls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/flags")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := "host=" + origin + " x-up=one"; string(body) != want {
			t.Errorf("origin saw %q, want %q", body, want)
		}
		if got := res.Header.Get("X-Down"); got != "two" {
			t.Errorf("X-Down %q, want two", got)
		}
		p.wait(`"uri":"/flags"`, 10*time.Second)
	})
}

// TestReverseProxyHTTPS: --to https://… speaks TLS to the app and, as
// caddy reverse-proxy, verifies its certificate unless --insecure.
func TestReverseProxyHTTPS(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		app := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "tls=%v", r.TLS != nil)
		}))
		t.Cleanup(app.Close)
		for _, insecure := range []bool{true, false} {
			port := servertest.FreePort(t)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			args := []string{"reverse-proxy", "-f", addr, "--to", app.URL, "--internal-certs", "--loops", "1", "--poller", backend}
			if insecure {
				args = append(args, "--insecure")
			}
			startProc(t, "local CA root", []string{"POLLPROXY_DATA=" + t.TempDir()}, args...)
			tr := &http.Transport{TLSClientConfig: &stdtls.Config{InsecureSkipVerify: true}}
			res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			tr.CloseIdleConnections()
			switch {
			case insecure && (res.StatusCode != 200 || string(body) != "tls=true"):
				t.Errorf("--insecure: %d %q, want 200 over TLS", res.StatusCode, body)
			case !insecure && (res.StatusCode != 502 || !strings.Contains(string(body), "certificate")):
				t.Errorf("verified: %d %q, want a 502 about the app's certificate", res.StatusCode, body)
			}
		}
	})
}

func TestReverseProxyFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "127.0.0.1:1", "--header-up", "NoColon"}, `want "Field: value"`},
		{[]string{"--to", "https://127.0.0.1:1,http://127.0.0.1:2"}, "all upstreams must use the same scheme"},
		{[]string{"--to", "wss://127.0.0.1:1"}, "use https:// instead"},
		{[]string{"--from", ":8443", "--to", "127.0.0.1:1"}, "plain HTTP"},
		{[]string{"--from", "localhost:8443"}, "--to is required"},
	} {
		err := runReverseProxy("reverse-proxy", c.args, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
