package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// plainClient speaks HTTP/1.1 over TCP to addr whatever the URL's host,
// and follows no redirect.
func plainClient(addr string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

func plainGet(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtoMajor != 1 || res.TLS != nil {
		t.Fatalf("GET %s: %s over TLS %v, want plain HTTP/1.1", url, res.Proto, res.TLS != nil)
	}
	return res, string(b)
}

// TestCleartextSites: a :PORT site and an http://localhost:PORT site serve
// plain HTTP/1.1 with routing, reverse_proxy and metrics as a TLS site
// does; the TLS site beside them gets Caddy's redirect on the http_port.
func TestCleartextSites(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		a, b := startOrigin(t, "A"), startOrigin(t, "B")
		proto := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.Header.Get("X-Forwarded-Proto"))
		}))
		certFile, keyFile, roots := filePair(t, dir)
		pPlain, pHTTP, pTLS := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
		httpPort, adminPort := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	loops 1
	admin 127.0.0.1:%d
	storage %s
	default_bind 127.0.0.1
	http_port %d
	https_port 8443
}

:%d {
	handle /api/* {
		request_header X-Site plain
		reverse_proxy %s
	}
	handle /proto {
		reverse_proxy %s
	}
	header X-Scheme {scheme}
	respond /hello "plain hello" 200
}

http://localhost:%d {
	reverse_proxy %s
}

localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, adminPort, filepath.Join(dir, "storage"), httpPort, pPlain, a.addr, proto, pHTTP, b.addr, pTLS, a.addr, certFile, keyFile)), 0o644)
		start(t, file, Options{Pollers: []string{backend}})

		plain := plainClient(fmt.Sprintf("127.0.0.1:%d", pPlain))
		for i := 0; i < 2; i++ {
			if res, body := plainGet(t, plain, fmt.Sprintf("http://anything.example:%d/api/x", pPlain)); res.StatusCode != 200 || body != "A plain" {
				t.Fatalf(":PORT /api/x: %d %q, want A's answer", res.StatusCode, body)
			}
		}
		if res, body := plainGet(t, plain, fmt.Sprintf("http://127.0.0.1:%d/hello", pPlain)); res.StatusCode != 200 || body != "plain hello" || res.Header.Get("X-Scheme") != "http" {
			t.Fatalf(":PORT /hello: %d %q, {scheme} %q", res.StatusCode, body, res.Header.Get("X-Scheme"))
		}
		if res, body := plainGet(t, plain, fmt.Sprintf("http://127.0.0.1:%d/proto", pPlain)); res.StatusCode != 200 || body != "http" {
			t.Fatalf("X-Forwarded-Proto from a plain site: %d %q, want http", res.StatusCode, body)
		}
		named := plainClient(fmt.Sprintf("127.0.0.1:%d", pHTTP))
		if res, body := plainGet(t, named, fmt.Sprintf("http://localhost:%d/", pHTTP)); res.StatusCode != 200 || body != "B " {
			t.Fatalf("http://localhost:PORT: %d %q, want B's answer", res.StatusCode, body)
		}
		tc := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", pTLS), roots)
		if code, body, _ := servertest.GetH2(t, tc, fmt.Sprintf("https://localhost:%d/", pTLS)); code != 200 || body != "A " {
			t.Fatalf("TLS site: %d %q", code, body)
		}
		// A TLS client on the plain port gets no handshake.
		if _, err := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", pPlain), roots).Get(fmt.Sprintf("https://localhost:%d/", pPlain)); err == nil {
			t.Error("a TLS handshake succeeded on a plain-HTTP site")
		}

		// Caddy's redirect: the TLS site's name, on the http_port, to its
		// own port; another name to https://NAME/ (Caddy's catch-all).
		redir := plainClient(fmt.Sprintf("127.0.0.1:%d", httpPort))
		res, body := plainGet(t, redir, fmt.Sprintf("http://localhost:%d/path?q=1", httpPort))
		if want := fmt.Sprintf("https://localhost:%d/path?q=1", pTLS); res.StatusCode != http.StatusPermanentRedirect || res.Header.Get("Location") != want {
			t.Errorf("redirect: %d %q, want 308 %s", res.StatusCode, res.Header.Get("Location"), want)
		}
		// As Caddy's redirect route (a static_response): no body and
		// no Content-Type.
		if _, typed := res.Header["Content-Type"]; body != "" || typed || res.ContentLength != 0 {
			t.Errorf("redirect: body %q, Content-Type %q, length %d; want neither, length 0", body, res.Header.Get("Content-Type"), res.ContentLength)
		}
		res, _ = plainGet(t, redir, "http://other.example/")
		if want := "https://other.example/"; res.Header.Get("Location") != want {
			t.Errorf("redirect of another name: %q, want %s", res.Header.Get("Location"), want)
		}

		// The plain requests are counted like any other.
		m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminPort))
		if !strings.Contains(m, fmt.Sprintf(`pollproxy_requests_total{code="2xx",loop="0",poller="%s",upstream="%s"} 3`, backend, a.addr)) ||
			!strings.Contains(m, fmt.Sprintf(`pollproxy_requests_total{code="2xx",loop="0",poller="%s",upstream="%s"} 1`, backend, b.addr)) {
			t.Errorf("metrics lack the plain requests:\n%s", grepLines(m, "pollproxy_requests_total"))
		}
	})
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCleartextRedirectsOff: auto_https disable_redirects (and off) leave
// the http_port alone; a plain site on the http_port answers there itself;
// a reload cannot turn a listener from HTTP into HTTPS.
func TestCleartextRedirectsOff(t *testing.T) {
	dir := t.TempDir()
	a := startOrigin(t, "A")
	certFile, keyFile, _ := filePair(t, dir)
	pTLS, httpPort := servertest.FreePort(t), servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	conf := func(global, extra string) {
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port %d\n\t%s\n}\nlocalhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n%s",
			filepath.Join(dir, "storage"), httpPort, global, pTLS, a.addr, certFile, keyFile, extra)), 0o644)
	}
	for _, global := range []string{"auto_https disable_redirects", "auto_https off"} {
		conf(global, "")
		r := start(t, file, Options{})
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpPort)); err == nil {
			c.Close()
			t.Errorf("%s: something listens on the http_port", global)
		}
		r.in.Close()
	}

	conf("", fmt.Sprintf(":%d {\n\trespond \"mine\"\n}\n", httpPort))
	r := start(t, file, Options{})
	c := plainClient(fmt.Sprintf("127.0.0.1:%d", httpPort))
	if res, body := plainGet(t, c, fmt.Sprintf("http://localhost:%d/", httpPort)); res.StatusCode != 200 || body != "mine" {
		t.Errorf("a site on the http_port: %d %q, want its own answer", res.StatusCode, body)
	}
	os.WriteFile(file, []byte(strings.Replace(mustRead(t, file), fmt.Sprintf(":%d {", httpPort), fmt.Sprintf("https://:%d {\n\ttls internal", httpPort), 1)), 0o644)
	if err := r.in.Reload(); err == nil || !strings.Contains(err.Error(), "changes between HTTP and HTTPS") {
		t.Errorf("reload from HTTP to HTTPS on one port: %v", err)
	}
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCleartextH2C: servers { protocols h1 h2 h2c } lets a plain-HTTP site
// take HTTP/2 with prior knowledge, proxied like any request.
func TestCleartextH2C(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		a := startOrigin(t, "A")
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port off\n\tservers {\n\t\tprotocols h1 h2 h2c\n\t}\n}\n:%d {\n\treverse_proxy %s\n}\n",
			filepath.Join(dir, "storage"), port, a.addr)), 0o644)
		start(t, file, Options{Pollers: []string{backend}})
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p}
		t.Cleanup(tr.CloseIdleConnections)
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.ProtoMajor != 2 || string(b) != "A " {
			t.Fatalf("h2c: %d %s %q", res.StatusCode, res.Proto, b)
		}
	})
}

// TestCleartextWebSocket: a WebSocket through a plain-HTTP site, a tunnel
// over the cleartext connection, both ways, then closed by the client.
func TestCleartextWebSocket(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		origin := streamOrigin(t)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port off\n}\n:%d {\n\treverse_proxy %s\n}\n",
			filepath.Join(dir, "storage"), port, origin)), 0o644)
		start(t, file, Options{Pollers: []string{backend}})
		c := newStreamClients(t, port, nil).ws(t, fmt.Sprintf("ws://127.0.0.1:%d/ws", port))
		for i := 0; i < 3; i++ {
			if err := echo(c, strings.Repeat("x", 1+i*15000)); err != nil {
				t.Fatalf("echo %d: %v", i, err)
			}
		}
		if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// TestCleartextProxyProtocol: on a plain-HTTP site the PROXY header comes
// before the request, and the front end, started after it, reports the
// client it names (X-Forwarded-For at the origin), also when the header
// and the request arrive in one segment.
func TestCleartextProxyProtocol(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port off\n\tservers {\n\t\tlistener_wrappers {\n\t\t\tproxy_protocol {\n\t\t\t\tallow 127.0.0.1/32\n\t\t\t}\n\t\t}\n\t}\n}\n:%d {\n\treverse_proxy %s\n}\n",
			filepath.Join(dir, "storage"), port, clientAddrOrigin(t))), 0o644)
		start(t, file, Options{Pollers: []string{backend}})
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "PROXY TCP4 198.51.100.7 127.0.0.1 56324 80\r\nGET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
		out, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), "HTTP/1.1 200") || !strings.HasSuffix(string(out), "\r\n\r\n198.51.100.7") {
			t.Fatalf("answer %q, want 200 with the client the header named", out)
		}
	})
}

// TestRedirectsFollowReload: the http_port's redirects take the names of
// a reloaded configuration: a site added by the reload is redirected to its
// own HTTPS port, not to 443.
func TestRedirectsFollowReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := filePair(t, dir)
	pA, pB, httpPort := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	conf := func(extra string) {
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port %d\n}\nlocalhost:%d {\n\trespond A\n\ttls %s %s\n}\n%s",
			filepath.Join(dir, "storage"), httpPort, pA, certFile, keyFile, extra)), 0o644)
	}
	conf("")
	r := start(t, file, Options{})
	c := plainClient(fmt.Sprintf("127.0.0.1:%d", httpPort))
	redirect := func(host, want string) {
		t.Helper()
		res, _ := plainGet(t, c, fmt.Sprintf("http://%s:%d/x?y", host, httpPort))
		if res.StatusCode != http.StatusPermanentRedirect || res.Header.Get("Location") != want {
			t.Errorf("http://%s/x?y: %d to %q, want 308 to %q", host, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
	redirect("localhost", fmt.Sprintf("https://localhost:%d/x?y", pA))
	redirect("b.localhost", "https://b.localhost/x?y")
	conf(fmt.Sprintf("b.localhost:%d {\n\trespond B\n\ttls %s %s\n}\n", pB, certFile, keyFile))
	if err := r.in.Reload(); err != nil {
		t.Fatal(err)
	}
	redirect("b.localhost", fmt.Sprintf("https://b.localhost:%d/x?y", pB))
	redirect("localhost", fmt.Sprintf("https://localhost:%d/x?y", pA))
}
