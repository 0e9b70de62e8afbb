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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// echoOrigin is an HTTP/1.1 app that answers "name target" and reports
// the X-Up field it received in X-Got-Up; it sends a Server and an
// X-Debug-Trace field for the edits to remove.
func echoOrigin(t *testing.T, name string) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "origin")
		w.Header().Set("X-Debug-Trace", "1")
		w.Header().Set("X-Got-Up", r.Header.Get("X-Up"))
		fmt.Fprintf(w, "%s %s", name, r.RequestURI)
	}))
}

// clients are an HTTP/2 and an HTTP/1.1 client over real TLS to addr.
func clients(addr string, roots *x509.CertPool) map[string]*http.Client {
	h1 := &http.Transport{
		TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h2 := servertest.H2Client(addr, roots)
	h2.CheckRedirect = noRedirect
	return map[string]*http.Client{
		"h2":   h2,
		"h1.1": {Transport: h1, Timeout: 10 * time.Second, CheckRedirect: noRedirect},
	}
}

// startSite runs one site body on a loopback port with a file certificate
// on backend; it returns the port and the clients.
func startSite(t *testing.T, backend, body string) (int, map[string]*http.Client) {
	t.Helper()
	port, cls, _ := startSiteLogged(t, backend, body)
	return port, cls
}

// startSiteLogged is startSite that also gives the running instance, whose
// log the test reads.
func startSiteLogged(t *testing.T, backend, body string) (int, map[string]*http.Client, *running) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, roots := filePair(t, dir)
	port := servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\n\nlocalhost:%d {\n\ttls %s %s\n%s\n}\n",
		backend, filepath.Join(dir, "storage"), port, certFile, keyFile, body)), 0o644)
	r := start(t, file, Options{})
	return port, clients(fmt.Sprintf("127.0.0.1:%d", port), roots), r
}

type exchange struct {
	method, path string
	header       map[string]string
	status       int
	body         string            // exact, or a prefix ending in "*"
	want         map[string]string // response fields ("" : absent)
}

func (x exchange) run(t *testing.T, c *http.Client, base string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(x.method, base+x.path, nil)
	for k, v := range x.header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", x.method, x.path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	okBody := string(b) == x.body || (strings.HasSuffix(x.body, "*") && strings.HasPrefix(string(b), x.body[:len(x.body)-1]))
	if resp.StatusCode != x.status || !okBody {
		t.Errorf("%s %s: %d %q, want %d %q", x.method, x.path, resp.StatusCode, b, x.status, x.body)
	}
	for k, v := range x.want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s %s: %s = %q, want %q", x.method, x.path, k, got, v)
		}
	}
	return resp
}

// TestRouting: the routing directives and matchers, in Caddy's order,
// over HTTP/2 and HTTP/1.1 on every poller backend.
func TestRouting(t *testing.T) {
	api, static, app := echoOrigin(t, "api"), echoOrigin(t, "static"), echoOrigin(t, "app")
	site := fmt.Sprintf(`	header Strict-Transport-Security "max-age=31536000"
	header -X-Debug-*
	redir /old /new 301
	@blog path /blog/*
	redir @blog https://blog.example.com{uri} permanent
	handle_path /api/* {
		reverse_proxy %[1]s
	}
	handle /static/* {
		uri strip_prefix /static
		reverse_proxy http://%[2]s {
			header_up X-Up "{method} {host}"
			header_down Server pollproxy-test
		}
	}
	@debug query debug=1
	handle @debug {
		respond "debug" 200
	}
	@outside not remote_ip 127.0.0.0/8 ::1
	handle @outside {
		respond 403
	}
	@json {
		method POST PUT
		header Content-Type application/json*
	}
	handle @json {
		respond "json" 201
	}
	handle /only-header/* {
		header X-Only yes
	}
	handle /re/* {
		rewrite * /rewritten{path}
		reverse_proxy %[3]s
	}
	handle {
		@versioned path_regexp ^/v[0-9]+/
		respond @versioned "versioned"
		@teapot header_regexp X-Brew ^(tea|chai)$
		respond @teapot 418
		@cased path /CASE/*
		respond @cased "case-insensitive"
		abort /abort
		@cel expression "{method} == 'DELETE' && path('/items/*')"
		respond @cel "cel"
		reverse_proxy %[3]s
	}`, api, static, app)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		hsts := "max-age=31536000"
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/old", status: 301, body: "", want: map[string]string{"Location": "/new", "Strict-Transport-Security": hsts}},
					{method: "GET", path: "/blog/post?id=3", status: 301, want: map[string]string{"Location": "https://blog.example.com/blog/post?id=3"}},
					{method: "GET", path: "/api/users?x=1", status: 200, body: "api /users?x=1", want: map[string]string{"Strict-Transport-Security": hsts, "X-Debug-Trace": ""}},
					{method: "GET", path: "/static/app.css", status: 200, body: "static /app.css",
						want: map[string]string{"Server": "pollproxy-test", "X-Got-Up": "GET localhost", "X-Debug-Trace": ""}},
					{method: "GET", path: "/page?debug=1", status: 200, body: "debug", want: map[string]string{"Strict-Transport-Security": hsts}},
					{method: "POST", path: "/submit", header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, status: 201, body: "json"},
					{method: "POST", path: "/submit", header: map[string]string{"Content-Type": "text/plain"}, status: 200, body: "app /submit"},
					{method: "GET", path: "/re/a?q=2", status: 200, body: "app /rewritten/re/a?q=2"},
					// handle blocks are exclusive: the catch-all does not run after a
					// handle without a response, so the answer is Caddy's empty 200.
					{method: "GET", path: "/only-header/x", status: 200, body: "", want: map[string]string{"X-Only": "yes"}},
					{method: "GET", path: "/v2/things", status: 200, body: "versioned"},
					{method: "GET", path: "/pot", header: map[string]string{"X-Brew": "chai"}, status: 418},
					{method: "GET", path: "/pot", header: map[string]string{"X-Brew": "coffee"}, status: 200, body: "app /pot"},
					{method: "GET", path: "/case/x", status: 200, body: "case-insensitive"},
					{method: "DELETE", path: "/items/7", status: 200, body: "cel"},
					{method: "GET", path: "/items/7", status: 200, body: "app /items/7"},
					{method: "GET", path: "/other", status: 200, body: "app /other", want: map[string]string{"Strict-Transport-Security": hsts, "Server": "origin"}},
				} {
					x.run(t, c, base)
				}
				if resp, err := c.Get(base + "/abort"); err == nil {
					resp.Body.Close()
					t.Errorf("GET /abort: %d, want the stream reset", resp.StatusCode)
				}
			})
		}
	})
}

// TestQuickStart: Caddy's reverse-proxy quick start, "reverse_proxy
// :9000", proxies to localhost:9000.
func TestQuickStart(t *testing.T) {
	up := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "quick") }))
	_, upPort, _ := net.SplitHostPort(up)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, "\treverse_proxy :"+upPort)
		for _, c := range cls {
			exchange{method: "GET", path: "/", status: 200, body: "quick"}.run(t, c, fmt.Sprintf("https://localhost:%d", port))
		}
	})
}

// TestPolicies: the hashing and cookie policies keep a key on one
// upstream; lb_retries moves a request off an upstream that refuses.
func TestPolicies(t *testing.T) {
	a, b, c := echoOrigin(t, "a"), echoOrigin(t, "b"), echoOrigin(t, "c")
	refused := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}()
	site := fmt.Sprintf(`	handle /header/* {
		reverse_proxy %[1]s %[2]s %[3]s {
			lb_policy header X-User
		}
	}
	handle /cookie/* {
		reverse_proxy %[1]s %[2]s %[3]s {
			lb_policy cookie sticky s3cret
		}
	}
	handle /uri/* {
		reverse_proxy %[1]s %[2]s %[3]s {
			lb_policy uri_hash
		}
	}
	handle /ip/* {
		reverse_proxy %[1]s %[2]s %[3]s {
			lb_policy ip_hash
		}
	}
	handle /first/* {
		reverse_proxy %[4]s %[1]s {
			lb_policy first
			lb_retries 1
		}
	}
	handle /noretry/* {
		reverse_proxy %[4]s {
			lb_retries 0
		}
	}
	handle /fallback/* {
		reverse_proxy %[3]s %[1]s %[2]s {
			lb_policy header X-User {
				fallback first
			}
		}
	}
	handle /weighted/* {
		reverse_proxy %[1]s %[2]s %[3]s {
			lb_policy weighted_round_robin 3 1 0
		}
	}`, a, b, c, refused)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		cl := cls["h2"]
		get := func(path string, hdr map[string]string) (string, *http.Response) {
			t.Helper()
			req, _ := http.NewRequest("GET", base+path, nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.Fields(string(body) + " ?")[0], resp
		}
		same := func(what string, f func(i int) string) {
			t.Helper()
			first := f(0)
			for i := 1; i < 6; i++ {
				if got := f(i); got != first {
					t.Errorf("%s: request %d went to %s, the first to %s", what, i, got, first)
				}
			}
		}
		seen := map[string]bool{}
		for _, user := range []string{"ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal"} {
			same("header "+user, func(int) string {
				up, _ := get("/header/x", map[string]string{"X-User": user})
				seen[up] = true
				return up
			})
		}
		if len(seen) < 2 {
			t.Errorf("header policy: 8 users all went to %v", seen)
		}
		same("uri", func(int) string { up, _ := get("/uri/fixed", nil); return up })
		same("ip", func(i int) string { up, _ := get(fmt.Sprintf("/ip/%d", i), nil); return up })

		up, resp := get("/cookie/x", nil)
		ck := resp.Header.Get("Set-Cookie")
		if !strings.HasPrefix(ck, "sticky=") || !strings.Contains(ck, "Path=/") || !strings.Contains(ck, "Secure") {
			t.Fatalf("cookie policy: Set-Cookie %q", ck)
		}
		cookie := strings.SplitN(ck, ";", 2)[0]
		same("cookie", func(int) string {
			got, resp := get("/cookie/x", map[string]string{"Cookie": cookie})
			if resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("a request with a valid cookie got a new one: %q", resp.Header.Get("Set-Cookie"))
			}
			if got != up {
				return got
			}
			return up
		})

		for i := 0; i < 4; i++ {
			if up, resp := get("/first/x", nil); resp.StatusCode != 200 || up != "a" {
				t.Errorf("lb_retries 1: %d from %s, want 200 from a", resp.StatusCode, up)
			}
		}
		if _, resp := get("/noretry/x", nil); resp.StatusCode != 502 {
			t.Errorf("refused upstream: %d, want 502", resp.StatusCode)
		}

		// A header policy without its field falls back to first: c,
		// every time; with it, the hash decides.
		for i := 0; i < 4; i++ {
			if up, _ := get("/fallback/x", nil); up != "c" {
				t.Errorf("fallback first: request %d went to %s, want c", i, up)
			}
		}

		// weighted_round_robin 3 1 0, one loop: a three times in every
		// four, b once, c (weight 0) never.
		counts := map[string]int{}
		for i := 0; i < 40; i++ {
			up, _ := get("/weighted/x", nil)
			counts[up]++
		}
		if counts["a"] != 30 || counts["b"] != 10 || counts["c"] != 0 {
			t.Errorf("weighted_round_robin 3 1 0: %v, want a 30, b 10, c 0", counts)
		}
	})
}
