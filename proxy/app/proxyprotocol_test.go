package app

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// clientAddrOrigin answers with the client address pollproxy forwarded.
func clientAddrOrigin(t *testing.T) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("X-Forwarded-For"))
	}))
}

// viaHeader GETs https://localhost:port/ over a connection from the
// loopback address src that first sends header (none when empty), and
// returns the body (the client address the origin was told) or the error.
func viaHeader(addr, src, header string, roots *x509.CertPool) (string, error) {
	tr := &http.Transport{
		DialTLSContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			if _, err := io.WriteString(c, header); err != nil {
				c.Close()
				return nil, err
			}
			tc := stdtls.Client(c, &stdtls.Config{ServerName: "localhost", RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		},
		ForceAttemptHTTP2: true,
	}
	defer tr.CloseIdleConnections()
	_, port, _ := net.SplitHostPort(addr)
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://localhost:" + port + "/")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// startHAProxy runs HAProxy in TCP mode on a free loopback port in front
// of backend, sending a version 2 PROXY header on each connection, and
// returns its address.
func startHAProxy(t *testing.T, backend string) string {
	t.Helper()
	bin := testenv.Tool(t, "haproxy", "haproxy")
	addr := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global
	maxconn 64
defaults
	mode tcp
	timeout connect 5s
	timeout client 30s
	timeout server 30s
frontend in
	bind %s
	default_backend pollproxy
backend pollproxy
	server p %s send-proxy-v2
`, addr, backend)), 0o644)
	runListening(t, "haproxy", exec.Command(bin, "-db", "-f", cfg), addr)
	return addr
}

// startProxyProtocolSite starts a site on loopback behind Caddy's
// listener_wrappers { proxy_protocol { pp } tls }, proxying to an origin
// that answers with the client address it was told; it returns the
// listener's address and the roots that verify it.
func startProxyProtocolSite(t *testing.T, backend, pp string) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	port := servertest.FreePort(t)
	storage := filepath.Join(dir, "storage")
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage %s
	servers {
		listener_wrappers {
			proxy_protocol {
				%s
			}
			tls
		}
	}
}

localhost:%d {
	reverse_proxy %s
}
`, backend, storage, pp, port, clientAddrOrigin(t))), 0o644)
	start(t, file, Options{})
	roots := localRoots(t, storage)
	return fmt.Sprintf("127.0.0.1:%d", port), roots
}

// TestProxyProtocol: Caddy's listener_wrappers { proxy_protocol } with
// HAProxy as the real load balancer in front. The client address a PROXY
// header carries reaches the origin (X-Forwarded-For) when its sender is
// allowed; from a source in neither list the header is read and dropped
// (Caddy's default fallback_policy ignore); a denied source that sends
// one is refused; an allowed one may still connect without one.
func TestProxyProtocol(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, roots := startProxyProtocolSite(t, backend, `timeout 2s
				allow 127.0.0.1/32
				deny 127.0.0.3/32`)
		const v1 = "PROXY TCP4 198.51.100.7 127.0.0.1 56324 443\r\n"

		for _, c := range []struct {
			name, src, header, want string
		}{
			{"allowed source, version 1 header", "127.0.0.1", v1, "198.51.100.7"},
			{"allowed source, no header", "127.0.0.1", "", "127.0.0.1"},
			{"other source: header dropped", "127.0.0.2", v1, "127.0.0.2"},
			{"denied source without a header", "127.0.0.3", "", "127.0.0.3"},
		} {
			if got, err := viaHeader(addr, c.src, c.header, roots); err != nil || got != c.want {
				t.Errorf("%s: %q %v, want client %s", c.name, got, err, c.want)
			}
		}
		if got, err := viaHeader(addr, "127.0.0.3", v1, roots); err == nil {
			t.Errorf("denied source with a header: answered %q, want the connection refused", got)
		}
		if got, err := viaHeader(addr, "127.0.0.1", "PROXY TCP4 garbage\r\n", roots); err == nil {
			t.Errorf("malformed header: answered %q, want the connection refused", got)
		}

		// HAProxy from 127.0.0.1 (allowed) carries the client's own
		// loopback address, 127.0.0.2, in a version 2 header.
		ha := startHAProxy(t, addr)
		got, err := viaHeader(ha, "127.0.0.2", "", roots)
		if err != nil || got != "127.0.0.2" {
			t.Errorf("through HAProxy send-proxy-v2: %q %v, want client 127.0.0.2", got, err)
		}
	})
}

// TestProxyProtocolRequired: fallback_policy require refuses a connection
// without a header, and a silent one once timeout has passed.
func TestProxyProtocolRequired(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, roots := startProxyProtocolSite(t, backend, `timeout 300ms
				fallback_policy require`)
		if got, err := viaHeader(addr, "127.0.0.1", "PROXY TCP6 2001:db8::7 ::1 1 443\r\n", roots); err != nil || got != "2001:db8::7" {
			t.Errorf("with a header: %q %v, want client 2001:db8::7", got, err)
		}
		if got, err := viaHeader(addr, "127.0.0.1", "", roots); err == nil {
			t.Errorf("without a header: answered %q, want the connection refused", got)
		}
		// A client that sends nothing is closed at the header's timeout,
		// long before the handshake timeout.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF && !strings.Contains(fmt.Sprint(err), "reset") {
			t.Errorf("silent client: read %d, %v; want the connection closed", n, err)
		}
	})
}
