package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestTemplates: the templates directive renders what file_server,
// respond and a reverse proxy answer, when its type is one the directive
// renders, off the loops, with Caddy's functions reading the site's root;
// the rendered answer has its own length and no validators; another type
// passes untouched; a broken template is a 500 and httpError its status,
// which the site's error routes render. On every backend and both
// protocols.
func TestTemplates(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		www := t.TempDir()
		for name, body := range map[string]string{
			"index.html":  `<h1>{{.Req.URL.Path}}</h1>{{include "part.html" "arg"}}|{{(splitFrontMatter (readFile "post.md")).Meta.title}}|{{ph "http.request.host"}}{{ph "host"}}`,
			"part.html":   `part {{index .Args 0}}`,
			"post.md":     "---\ntitle: Hello\n---\nbody",
			"broken.html": `{{ nope`,
			"gone.html":   `x{{httpError 410}}`,
			"data.json":   `{"a": "{{not rendered}}"}`,
			"header.html": `{{.RespHeader.Set "X-From-Template" "yes"}}ok`,
		} {
			os.WriteFile(filepath.Join(www, name), []byte(body), 0o644)
		}
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	root * %s
	templates
	handle /say {
		header Content-Type text/plain
		respond "year {{now | date \"2006\" | len}} {{upper \"x\"}}"
	}
	handle /proxied {
		reverse_proxy %s
	}
	handle_errors 410 {
		respond "gone {err.status_code}"
	}
	file_server`, www, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/", status: 200, body: "<h1>/</h1>part arg|Hello|localhost", want: map[string]string{"Etag": "", "Last-Modified": "", "Content-Length": "34"}},
				{method: "GET", path: "/say", status: 200, body: "year 4 X"},
				{method: "GET", path: "/data.json", status: 200, body: `{"a": "{{not rendered}}"}`},
				{method: "GET", path: "/broken.html", status: 500, body: ""},
				{method: "GET", path: "/gone.html", status: 410, body: "gone 410"},
				{method: "GET", path: "/header.html", status: 200, body: "ok", want: map[string]string{"X-From-Template": "yes"}},
				{method: "GET", path: "/proxied", status: 200, body: "o /proxied"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}

// TestTemplatesProxiedNoBody: templates over a reverse proxy whose
// answer has no body (the answer to a HEAD, a 204) answers on HTTP/1.1
// as on h2. FuzzSites found HTTP/1.1 closing the connection without an
// answer: the proxy ended the response while the (empty) body rendered.
func TestTemplatesProxiedNoBody(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, http.HandlerFunc(fuzzOrigin))
		addr := startPlain(t, backend, fmt.Sprintf("\ttemplates\n\treverse_proxy %s", origin))
		for _, x := range []struct {
			method, target string
			status         int
		}{{"HEAD", "/", 200}, {"HEAD", "/s/404", 404}, {"GET", "/nobody", 204}, {"HEAD", "/nobody", 204}, {"GET", "/", 200}} {
			for _, h2 := range []bool{false, true} {
				status, err := statusOnce(t, addr, fuzzRequest{h2: h2, method: x.method, target: x.target})
				if err != nil || status != x.status {
					t.Errorf("%s %s (h2 %v): %d %v, want %d", x.method, x.target, h2, status, err, x.status)
				}
			}
		}
	})
}

// TestTemplatesHTTPErrorNotFinal: httpError with a status that is no
// final answer (99, a 1xx, 600) answers 500, on HTTP/1.1 and h2.
// FuzzSites found httpError 99 leaving the client waiting: the 99 went
// to the front end as an informational head.
func TestTemplatesHTTPErrorNotFinal(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := startPlain(t, backend, "\ttemplates\n\trespond /99 `{{httpError 99}}`\n\trespond /103 `{{httpError 103}}`\n\trespond `{{httpError 600}}`")
		for _, target := range []string{"/99", "/103", "/600"} {
			for _, h2 := range []bool{false, true} {
				status, err := statusOnce(t, addr, fuzzRequest{h2: h2, method: "GET", target: target})
				if err != nil || status != 500 {
					t.Errorf("%s (h2 %v): %d %v, want 500", target, h2, status, err)
				}
			}
		}
	})
}

// statusOnce sends r on a new connection to addr and returns the final
// answer's status.
func statusOnce(t *testing.T, addr string, r fuzzRequest) (int, error) {
	t.Helper()
	if r.h2 {
		c, err := dialH2(addr, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a, err := c.roundTrip(r, addr)
		return a.status, err
	}
	c, err := dialH1(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := c.roundTrip(r, addr)
	return a.status, err
}
