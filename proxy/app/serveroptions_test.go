package app

import (
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testca"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestServerOptions: servers { name strict_sni_host trusted_proxies_strict }
// on one listener, none of them on another, over both protocols on every
// backend: a Host that is not the TLS server name is 421 where
// strict_sni_host is on and served where it is not; the client address
// is the rightmost untrusted one of X-Forwarded-For with
// trusted_proxies_strict, the leftmost without; the name is in the
// listener's start log.
func TestServerOptions(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		strict, plain := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage %s
	default_bind 127.0.0.1
	servers 127.0.0.1:%d {
		name guarded
		strict_sni_host on
		trusted_proxies static 127.0.0.1/32 10.0.0.0/8
		trusted_proxies_strict
		keepalive_interval 20s
		keepalive_idle 1m
		keepalive_count 3
		enable_full_duplex
	}
	servers {
		trusted_proxies static 127.0.0.1/32 10.0.0.0/8
		strict_sni_host insecure_off
	}
}

localhost:%[3]d, other.localhost:%[3]d, localhost:%d, other.localhost:%[4]d {
	tls %s %s
	respond "{client_ip}"
}
`, backend, filepath.Join(dir, "storage"), strict, plain, certFile, keyFile)), 0o644)
		r := start(t, file, Options{})
		if log := r.log.String(); !strings.Contains(log, fmt.Sprintf("listen=127.0.0.1:%d", strict)) || !strings.Contains(log, "server=guarded") {
			t.Errorf("no server name in the start log:\n%s", log)
		}
		const xff = "198.51.100.7, 203.0.113.9, 10.1.1.1"
		for _, l := range []struct {
			port           int
			otherStatus    int
			otherBody      string
			clientFromList string
		}{{strict, 421, "", "203.0.113.9"}, {plain, 200, "198.51.100.7", "198.51.100.7"}} {
			for proto, c := range clients(fmt.Sprintf("127.0.0.1:%d", l.port), roots) {
				t.Run(fmt.Sprintf("%d/%s", l.port, proto), func(t *testing.T) {
					get := func(host string) (int, string) {
						req, _ := http.NewRequest("GET", fmt.Sprintf("https://localhost:%d/", l.port), nil)
						req.Host = host
						req.Header.Set("X-Forwarded-For", xff)
						resp, err := c.Do(req)
						if err != nil {
							t.Fatalf("Host %s: %v", host, err)
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						return resp.StatusCode, string(b)
					}
					if status, body := get(fmt.Sprintf("localhost:%d", l.port)); status != 200 || body != l.clientFromList {
						t.Errorf("Host matching the server name: %d %q, want 200 %q", status, body, l.clientFromList)
					}
					if status, body := get(fmt.Sprintf("other.localhost:%d", l.port)); status != l.otherStatus || body != l.otherBody {
						t.Errorf("Host other than the server name: %d %q, want %d %q", status, body, l.otherStatus, l.otherBody)
					}
				})
			}
		}
	})
}

// TestMetricsPerHost: with metrics { per_host }, proxied requests are
// counted by the host they named too, as Caddy labels them: over TLS
// every host (lower case, with its port) on its own; over plain HTTP a
// site's own names on their own (a host with a port never is one) and
// any other as _other.
func TestMetricsPerHost(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, servertest.Says("ok"))
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port, plain, adminPort := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin 127.0.0.1:%d\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tmetrics {\n\t\tper_host\n\t}\n}\n"+
			"localhost:%d, *.localhost:%[4]d {\n\ttls %s %s\n\treverse_proxy %s\n}\nhttp://plain.localhost:%d {\n\treverse_proxy %[7]s\n}\n",
			backend, adminPort, filepath.Join(dir, "storage"), port, certFile, keyFile, origin, plain)), 0o644)
		start(t, file, Options{})
		c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
		for _, host := range []string{"localhost", "LocalHost", "a.localhost", "b.localhost", "localhost"} {
			req, _ := http.NewRequest("GET", fmt.Sprintf("https://localhost:%d/", port), nil)
			req.Host = fmt.Sprintf("%s:%d", host, port)
			if status, body, _ := servertest.Do(t, c, req); status != 200 || body != "ok" {
				t.Fatalf("Host %s: %d %q", host, status, body)
			}
		}
		for _, host := range []string{"plain.localhost", fmt.Sprintf("plain.localhost:%d", plain)} {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", plain), nil)
			req.Host = host
			if status, body, _ := servertest.Do(t, http.DefaultClient, req); status != 200 || body != "ok" {
				t.Fatalf("Host %s: %d %q", host, status, body)
			}
		}
		m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminPort))
		for _, want := range []string{
			fmt.Sprintf(`pollproxy_host_requests_total{code="2xx",host="localhost:%d",loop="0",poller="%s"} 3`, port, backend),
			fmt.Sprintf(`pollproxy_host_requests_total{code="2xx",host="a.localhost:%d",loop="0",poller="%s"} 1`, port, backend),
			fmt.Sprintf(`pollproxy_host_requests_total{code="2xx",host="plain.localhost",loop="0",poller="%s"} 1`, backend),
			fmt.Sprintf(`pollproxy_host_requests_total{code="2xx",host="_other",loop="0",poller="%s"} 1`, backend),
		} {
			if !strings.Contains(m, want) {
				t.Errorf("no %s in:\n%s", want, grepLines(m, "pollproxy_host_requests_total"))
			}
		}
	})
}

// TestClientAuthStrictSNI: where strict_sni_host is not written, a
// listener with a client_auth site answers 421 to a request whose
// handshake named an open site of that listener but whose Host is the
// protected one, as Caddy turns strict SNI on for it; a listener whose
// servers block says strict_sni_host insecure_off lets the request
// through, as it asks. The protected site still serves a client that
// names it and shows its certificate.
func TestClientAuthStrictSNI(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		storage := filepath.Join(dir, "storage")
		ca := testca.New(t, "clients")
		caFile := writeCertPEM(t, filepath.Join(dir, "clients.pem"), ca.Cert.Raw)
		auto, off := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
	servers 127.0.0.1:%[5]d {
		strict_sni_host insecure_off
	}
}

mtls.localhost:%[3]d, mtls.localhost:%[5]d {
	tls internal {
		client_auth {
			mode require_and_verify
			trust_pool file %[4]s
		}
	}
	respond "protected"
}

open.localhost:%[3]d, open.localhost:%[5]d {
	tls internal
	respond "open"
}
`, backend, storage, auto, caFile, off)), 0o644)
		start(t, file, Options{})
		roots := localRoots(t, storage)
		// ask names open.localhost in the handshake and host in the request.
		ask := func(port int, host string) string {
			c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
				fmt.Sprintf("127.0.0.1:%d", port), h1TLS("open.localhost", roots))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
			b, _ := io.ReadAll(c)
			status, _, _ := strings.Cut(string(b), "\r\n")
			_, body, _ := strings.Cut(string(b), "\r\n\r\n")
			return status + " " + body
		}
		for _, c := range []struct {
			port       int
			host, want string
		}{
			{auto, "open.localhost", "HTTP/1.1 200 OK open"},
			{auto, "mtls.localhost", "HTTP/1.1 421 Misdirected Request "},
			{off, "open.localhost", "HTTP/1.1 200 OK open"},
			{off, "mtls.localhost", "HTTP/1.1 200 OK protected"},
		} {
			if got := ask(c.port, c.host); got != c.want {
				t.Errorf("port %d, Host %s after a handshake for open.localhost: %q, want %q", c.port, c.host, got, c.want)
			}
		}
		cfg := h1TLS("mtls.localhost", roots)
		cfg.Certificates = []stdtls.Certificate{ca.Client(t, "good")}
		if _, body, err := tlsGet(fmt.Sprintf("127.0.0.1:%d", auto), cfg); err != nil || body != "protected" {
			t.Errorf("the protected site with its certificate: %q %v", body, err)
		}
	})
}
