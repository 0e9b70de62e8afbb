package oracle

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/internal/phpfpmtest"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// phpOracleApp is what php-fpm serves to both servers: a front
// controller, a script that prints its CGI environment and body, and the
// statuses, redirects and lengths PHP can answer with.
var phpOracleApp = map[string]string{
	"index.php": `<?php echo "front ", $_SERVER['REQUEST_URI'], " ", $_SERVER['SCRIPT_NAME'], "\n";`,
	"env.php": `<?php
$s = $_SERVER;
ksort($s);
foreach ($s as $k => $v) { if (is_string($v)) echo $k, '=', $v, "\n"; }
echo 'BODY=', file_get_contents('php://input'), "\n";`,
	"status.php":    `<?php header('Status: 201 Created'); header('X-App: yes'); echo "made\n";`,
	"redirect.php":  `<?php header('Location: /elsewhere');`,
	"notfound.php":  `<?php http_response_code(404); echo "no such thing\n";`,
	"length.php":    `<?php header('Content-Length: 5'); echo "12345678";`,
	"flush.php":     `<?php echo "one\n"; flush(); echo "two\n";`,
	"sub/index.php": `<?php echo "sub index\n";`,
	"style.css":     "body{}",
	"evil.ｐhp":      "<?php echo 'ran';",
}

// phpRequests are sent to both servers, over HTTP/1.1 and HTTP/2.
var phpRequests = []request{
	{method: "GET", path: "/"},
	{method: "GET", path: "/blog/2024/hello?x=1"},
	{method: "GET", path: "/index.php/api/users"},
	{method: "GET", path: "/env.php/extra/info?a=1&b=2", header: [][2]string{{"X-Multi", "one"}, {"X-Multi", "two"},
		{"Proxy", "http://evil:8080"}, {"Cookie", "a=1"}, {"Cookie", "b=2"}, {"Accept", "*/*"}}},
	{method: "GET", path: "/env.php", header: [][2]string{{"Host", "php.test"}, {"User-Agent", ""}}},
	{method: "POST", path: "/env.php", body: "a=1&b=two"},
	{method: "POST", path: "/env.php", body: "{}", header: [][2]string{{"Content-Type", "application/json"}}},
	{method: "PUT", path: "/env.php", body: strings.Repeat("s", 4000), chunked: true},
	{method: "PUT", path: "/env.php", body: strings.Repeat("b", 5000), chunked: true},
	{method: "DELETE", path: "/env.php"},
	{method: "OPTIONS", path: "/env.php"},
	{method: "HEAD", path: "/status.php"},
	{method: "GET", path: "/status.php"},
	{method: "GET", path: "/redirect.php"},
	{method: "GET", path: "/notfound.php"},
	{method: "GET", path: "/length.php"},
	{method: "GET", path: "/flush.php"},
	{method: "GET", path: "/missing.php"},
	{method: "GET", path: "/sub"},
	{method: "GET", path: "/sub?a=b"},
	{method: "GET", path: "/sub/"},
	{method: "GET", path: "/style.css"},
	{method: "GET", path: "/evil.%EF%BD%90hp"},
	{method: "GET", path: "/evil.%EF%BD%90hp/x.php"},
	{method: "GET", path: "/env.php%2f..%2fstatus.php"},
	{method: "GET", path: "/dead/x.php"}, // php-fpm not there: 502
}

// phpDifferences are the deliberate differences (docs/caddyfile.md, "PHP
// (FastCGI)"): a line of the environment, or a response field, whose
// value is each server's own. They are left out of the comparison.
var phpDifferences = map[string]bool{
	"SERVER_SOFTWARE":     true, // each server's name
	"SERVER_ADDR":         true, // pollproxy does not set it
	"REMOTE_PORT":         true, // each connection's
	"HTTP_VIA":            true, // "1.1 Caddy" / "1.1 pollproxy"
	"REQUEST_TIME":        true,
	"REQUEST_TIME_FLOAT":  true,
	"resp via":            true, // "0.0 Caddy" / "0.0 pollproxy"
	"resp date":           true,
	"resp alt-svc":        true, // Caddy's HTTP/3
	"resp server":         true,
	"resp content-length": true, // compared through the body; Caddy's differ by the 502/504 text
}

// TestOracleFastCGI serves one PHP site through php_fastcgi with stock
// Caddy and with pollproxy (on every poller backend), both in front of
// the same php-fpm, and compares every answer: status, response fields,
// body, and the CGI environment PHP saw.
func TestOracleFastCGI(t *testing.T) {
	bin := buildCaddy(t)
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpOracleApp)
	https, plain := servertest.FreePort(t), servertest.FreePort(t)
	certs := certificate(t, []string{"php.test"})
	block := fmt.Sprintf("https://php.test:%d {\n\ttls CERTFILE KEYFILE\n\troot * %s\n\thandle /dead/* {\n\t\tphp_fastcgi 127.0.0.1:%d\n\t}\n\tphp_fastcgi %s\n\tfile_server\n}\n",
		https, root, closedPort(t), fpm.Addr)
	global := fmt.Sprintf("\tadmin off\n\thttp_port %d\n\thttps_port %d\n\tdefault_bind 127.0.0.1\n\tstorage file_system STORAGE\n", plain, https)
	p := &plan{https: https, http: plain, sites: []site{{label: "php", host: "php.test"}},
		caddy:     "{\n" + global + "\tskip_install_trust\n}\n" + block,
		pollproxy: "{\n" + global + "}\n" + block}

	caddyAnswers := func() map[string]map[string]string {
		out, exited, stop := startCaddy(t, bin, certs.Replace(p.caddy))
		defer stop()
		if err := ready(p, exited); err != nil {
			t.Fatalf("Caddy: %v\n%s", err, out)
		}
		return askPHP(p)
	}()

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		in, log := startPollproxy(t, backend, certs.Replace(p.pollproxy))
		defer in.Close()
		if err := ready(p, nil); err != nil {
			t.Fatalf("pollproxy: %v\n%s", err, log)
		}
		ours := askPHP(p)
		own := func(want map[string]string) bool {
			return want["status"] == "411" || want["status"] == "502" || want["status"] == "504"
		}
		compareAnswers(t, caddyAnswers, ours, func(f string, want, _ map[string]string) bool {
			return phpDifferences[f] || f == "body" || own(want) && f == "resp content-type"
		})
		for _, k := range sortedKeys(caddyAnswers) {
			want, got := caddyAnswers[k], ours[k]
			if w, g := phpBody(want["body"]), phpBody(got["body"]); w != g && !own(want) {
				t.Errorf("%s: body:\nCaddy:\n%s\npollproxy:\n%s", k, w, g)
			}
		}
	})
}

// askPHP sends every request over HTTP/1.1 and HTTP/2.
func askPHP(p *plan) map[string]map[string]string {
	c := newClients(p)
	defer c.close()
	out := map[string]map[string]string{}
	base := fmt.Sprintf("https://php.test:%d", p.https)
	for _, r := range phpRequests {
		for proto, cl := range map[string]*http.Client{"h1": c.h1, "h2": c.h2} {
			out[proto+" "+r.String()] = sendPlain(cl, base, r)
		}
	}
	return out
}

// sendPlain is send without an origin: the answer's status, fields and
// body.
func sendPlain(c *http.Client, base string, r request) map[string]string {
	req, err := r.toHTTP(base)
	if err != nil {
		return map[string]string{"error": err.Error()}
	}
	resp, err := c.Do(req)
	if err != nil {
		return map[string]string{"error": "no answer"}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	got := map[string]string{"status": fmt.Sprint(resp.StatusCode), "body": string(b)}
	for name, vs := range resp.Header {
		got["resp "+strings.ToLower(name)] = strings.Join(vs, "\n")
	}
	return got
}

// phpBody is a body with the environment lines that differ on purpose
// left out. pollproxy's own answers (411, 502, 504) have a short text
// body and its type, Caddy's none: the status alone is compared.
func phpBody(b string) string {
	var out []string
	for _, l := range strings.SplitAfter(b, "\n") {
		name, _, ok := strings.Cut(l, "=")
		if ok && phpDifferences[name] {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
