package app

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/fcgi"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/phpfpmtest"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// phpApp is a small PHP application: a front controller with pretty
// URLs, scripts that show the CGI environment, set a status, stream with
// flush(), take uploads, write to stderr, and a static file beside them.
var phpApp = map[string]string{
	"index.php": `<?php
header('Content-Type: application/json');
$route = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
echo json_encode(['front' => true, 'route' => $route, 'script' => $_SERVER['SCRIPT_NAME'], 'path_info' => $_SERVER['PATH_INFO'] ?? null]);
`,
	"env.php": `<?php
header('Content-Type: application/json');
$in = file_get_contents('php://input');
echo json_encode(['server' => $_SERVER, 'body_len' => strlen($in), 'body_md5' => md5($in), 'post' => $_POST]);
`,
	"status.php": `<?php
header('Status: 201 Created');
header('X-App: yes');
echo "made\n";
`,
	"redirect.php": `<?php
header('Location: /elsewhere');
`,
	"notfound.php": `<?php
http_response_code(404);
echo "no such thing\n";
`,
	"upload.php": `<?php
header('Content-Type: text/plain');
foreach ($_FILES as $k => $f) { echo $k, ' ', $f['size'], ' ', md5_file($f['tmp_name']), "\n"; }
echo 'field ', $_POST['field'] ?? '', "\n";
`,
	"stream.php": `<?php
echo "first\n";
flush();
$f = $_GET['wait'];
for ($i = 0; $i < 1000 && !file_exists($f); $i++) { usleep(5000); }
echo file_exists($f) ? "second\n" : "gave up\n";
`,
	"slow.php": `<?php
sleep(3);
echo "late\n";
`,
	"stderr.php": `<?php
error_log('something went wrong');
echo "ok\n";
`,
	"length.php": `<?php
header('Content-Length: 5');
echo "12345678";
`,
	"sub/index.php": `<?php echo "sub index\n";`,
	"big.php": `<?php
header('Content-Type: text/plain');
$s = '';
for ($i = 0; $i < 20000; $i++) { $s .= sprintf("%07d pollproxy fastcgi\n", $i); }
echo $s; // one write: the head and the body's first bytes arrive in one read
`,
	"style.css": "body{}",
	"evil.ｐhp":  "<?php echo 'ran';",
}

// bigBody is what big.php prints: 500,000 bytes, in many records and
// many reads, the first of them holding the CGI head.
var bigBody = func() string {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "%07d pollproxy fastcgi\n", i)
	}
	return b.String()
}()

// fpmSite is a Caddyfile site body serving root through php_fastcgi to
// upstream, with file_server for the rest.
func fpmSite(root, upstream, extra string) string {
	return fmt.Sprintf("\troot * %s\n\tphp_fastcgi %s {\n%s\t}\n\tfile_server\n", root, upstream, extra)
}

// phpEnv asks env.php for the CGI environment of a request.
func phpEnv(t *testing.T, c *http.Client, req *http.Request) map[string]any {
	t.Helper()
	status, b := do(t, c, req)
	if status != 200 {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, status, b)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(b), &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestPHPFastCGI: php_fastcgi in front of a real php-fpm, over a unix
// socket and TCP, HTTP/2 and HTTP/1.1, on every poller backend: the front
// controller with pretty URLs and PATH_INFO, the canonical redirect,
// statuses from Status and Location, a missing script as 404, static
// files from file_server, a declared Content-Length, HEAD.
func TestPHPFastCGI(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, up := range []string{"unix/" + fpm.Sock, fpm.Addr} {
			name := "tcp"
			if strings.HasPrefix(up, "unix/") {
				name = "unix"
			}
			t.Run(name, func(t *testing.T) {
				port, cls := startSite(t, backend, fpmSite(root, up, ""))
				base := fmt.Sprintf("https://localhost:%d", port)
				runEach(t, cls, base, []exchange{
					{method: "GET", path: "/", status: 200, body: `{"front":true,"route":"\/","script":"\/index.php","path_info":""}`,
						want: map[string]string{"Content-Type": "application/json", "Via": "0.0 pollproxy"}},
					{method: "GET", path: "/blog/2024/hello?x=1", status: 200, body: `{"front":true,"route":"\/blog\/2024\/hello","script":"\/index.php","path_info":""}`},
					{method: "GET", path: "/index.php/api/users", status: 200, body: `{"front":true,"route":"\/index.php\/api\/users","script":"\/index.php","path_info":"\/api\/users"}`},
					{method: "GET", path: "/status.php", status: 201, body: "made\n", want: map[string]string{"X-App": "yes"}},
					{method: "GET", path: "/redirect.php", status: 302, body: "", want: map[string]string{"Location": "/elsewhere"}},
					{method: "GET", path: "/notfound.php", status: 404, body: "no such thing\n"},
					{method: "GET", path: "/missing.php", status: 200, body: `{"front":true,"route":"\/missing.php","script":"\/index.php","path_info":""}`},
					{method: "GET", path: "/sub", status: 308, want: map[string]string{"Location": "./sub/"}},
					{method: "GET", path: "/sub?a=b", status: 308, want: map[string]string{"Location": "./sub/?a=b"}},
					{method: "GET", path: "/sub/", status: 200, body: "sub index\n"},
					{method: "GET", path: "/style.css", status: 200, body: "body{}", want: map[string]string{"Content-Type": "text/css; charset=utf-8"}},
					// A fullwidth "ｐ" never makes a script: the file is served as it is.
					{method: "GET", path: "/evil.%EF%BD%90hp", status: 200, body: "<?php echo 'ran';"},
					{method: "GET", path: "/evil.%EF%BD%90hp/x.php", status: 200, body: `{"front":true,"route":"\/evil.%EF%BD%90hp\/x.php","script":"\/index.php","path_info":""}`},
					{method: "GET", path: "/length.php", status: 200, body: "12345", want: map[string]string{"Content-Length": "5"}},
					{method: "HEAD", path: "/status.php", status: 201, body: ""},
					{method: "GET", path: "/big.php", status: 200, body: bigBody},
				})
			})
		}
	})
}

// TestPHPFastCGIIndexOff: without the index rewrite a missing script is
// php-fpm's 404 (not "No input file specified"), and a path that cannot
// name a script safely is refused before php-fpm sees it.
func TestPHPFastCGIIndexOff(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fpmSite(root, fpm.Addr, "\t\tindex off\n"))
		base := fmt.Sprintf("https://localhost:%d", port)
		runEach(t, cls, base, []exchange{
			{method: "GET", path: "/missing.php", status: 404, body: "File not found.\n"},
			{method: "GET", path: "/status.php", status: 201, body: "made\n"},
			{method: "GET", path: "/%00.php", status: 400, body: "*"},
			{method: "GET", path: "/a%2fb.php", status: 404, body: "File not found.\n"},
			{method: "GET", path: "/env.php%2f..%2fstatus.php", status: 400, body: "*"},
			{method: "GET", path: "/", status: 404, body: ""}, // file_server: no index.html
		})
	})
}

// TestPHPFastCGIEnv: the CGI environment Caddy's transport builds.
func TestPHPFastCGIEnv(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fpmSite(root, fpm.Addr, "\t\tenv APP_ENV prod\n\t\tenv HTTP_X_TRUSTED from-config\n"))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				req, _ := http.NewRequest("GET", base+"/env.php/extra/info?a=1&b=2", nil)
				req.Header.Add("X-Multi", "one")
				req.Header.Add("X-Multi", "two")
				req.Header.Set("Proxy", "http://evil:8080")
				req.Header.Set("X-Trusted", "from-client")
				req.Header.Set("X_Alias", "underscore")
				req.Header.Set("User-Agent", "")
				v := phpEnv(t, c, req)
				s := v["server"].(map[string]any)
				want := map[string]string{
					"SCRIPT_NAME": "/env.php", "PATH_INFO": "/extra/info", "DOCUMENT_URI": "/env.php",
					"SCRIPT_FILENAME": filepath.Join(root, "env.php"), "DOCUMENT_ROOT": root,
					"PATH_TRANSLATED": filepath.Join(root, "extra/info"),
					"QUERY_STRING":    "a=1&b=2", "REQUEST_URI": "/env.php/extra/info?a=1&b=2",
					"REQUEST_METHOD": "GET", "CONTENT_LENGTH": "0", "CONTENT_TYPE": "",
					"GATEWAY_INTERFACE": "CGI/1.1", "REMOTE_ADDR": "127.0.0.1", "SERVER_NAME": "localhost",
					"SERVER_PORT": fmt.Sprint(port), "HTTPS": "on", "SSL_PROTOCOL": "TLSv1.3", "REQUEST_SCHEME": "https",
					"HTTP_HOST": fmt.Sprintf("localhost:%d", port), "HTTP_X_MULTI": "one, two", "HTTP_USER_AGENT": "",
					"APP_ENV": "prod", "HTTP_X_TRUSTED": "from-config",
				}
				for k, w := range want {
					if got, ok := s[k].(string); !ok || got != w {
						t.Errorf("%s = %v, want %q", k, s[k], w)
					}
				}
				for _, k := range []string{"HTTP_PROXY", "HTTP_X_ALIAS"} {
					if _, ok := s[k]; ok {
						t.Errorf("%s = %v, want none", k, s[k])
					}
				}
				// A POST without a type gets Caddy's default, and its body.
				req, _ = http.NewRequest("POST", base+"/env.php", strings.NewReader("a=1&b=two"))
				v = phpEnv(t, c, req)
				s = v["server"].(map[string]any)
				if s["CONTENT_LENGTH"] != "9" || s["CONTENT_TYPE"] != "application/x-www-form-urlencoded" || v["body_len"] != 9.0 {
					t.Errorf("POST: CONTENT_LENGTH %v CONTENT_TYPE %v body %v", s["CONTENT_LENGTH"], s["CONTENT_TYPE"], v["body_len"])
				}
				if p, _ := v["post"].(map[string]any); p["b"] != "two" {
					t.Errorf("POST form: %v", v["post"])
				}
			})
		}
	})
}

// TestPHPFastCGIBodies: a multipart upload of several MiB streams to
// php-fpm; a chunked body under 4 KiB is buffered and sent with its
// length, a longer one is refused with 411 before PHP runs.
func TestPHPFastCGIBodies(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	file := bytes.Repeat([]byte("pollproxy-fastcgi-upload-"), 6<<20/25)
	sum := md5.Sum(file)
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	w.WriteField("field", "value")
	fw, _ := w.CreateFormFile("file", "big.bin")
	fw.Write(file)
	w.Close()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fpmSite(root, "unix/"+fpm.Sock, ""))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				req, _ := http.NewRequest("POST", base+"/upload.php", bytes.NewReader(mp.Bytes()))
				req.Header.Set("Content-Type", w.FormDataContentType())
				status, body := do(t, c, req)
				want := fmt.Sprintf("file %d %s\nfield value\n", len(file), hex.EncodeToString(sum[:]))
				if status != 200 || body != want {
					t.Errorf("upload: %d %q, want %q", status, body, want)
				}
				// Chunked (HTTP/1.1) or without a length (h2): io.Reader hides it.
				small := strings.Repeat("s", 4000)
				req, _ = http.NewRequest("PUT", base+"/env.php", io.MultiReader(strings.NewReader(small)))
				v := phpEnv(t, c, req)
				if s := v["server"].(map[string]any); s["CONTENT_LENGTH"] != "4000" || v["body_len"] != 4000.0 {
					t.Errorf("small chunked: CONTENT_LENGTH %v body %v", s["CONTENT_LENGTH"], v["body_len"])
				}
				req, _ = http.NewRequest("PUT", base+"/env.php", io.MultiReader(strings.NewReader(strings.Repeat("b", 5000))))
				if status, _ := do(t, c, req); status != 411 {
					t.Errorf("long chunked: %d, want 411", status)
				}
			})
		}
	})
}

// TestPHPFastCGIStream: what PHP flush()es reaches the client before the
// script ends (the script waits for the client to have read it).
func TestPHPFastCGIStream(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fpmSite(root, fpm.Addr, "\t\tflush_interval -1\n"))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				mark := filepath.Join(root, "seen-"+backend+"-"+proto) // where php-fpm's workers may look
				resp, err := c.Get(base + "/stream.php?wait=" + mark)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				line := make([]byte, 6)
				if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "first\n" {
					t.Fatalf("first line: %q %v", line, err)
				}
				os.WriteFile(mark, nil, 0o644)
				rest, _ := io.ReadAll(resp.Body)
				if string(rest) != "second\n" {
					t.Errorf("rest: %q, want second", rest)
				}
			})
		}
	})
}

// TestPHPFastCGIFailures: a script slower than read_timeout is a 504; a
// php-fpm that is not there is a 502; what PHP writes on stderr is logged
// with capture_stderr.
func TestPHPFastCGIFailures(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, phpApp)
	dead := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls, r := startSiteLogged(t, backend, fmt.Sprintf("\troot * %s\n\thandle /dead/* {\n\t\tphp_fastcgi %s\n\t}\n\tphp_fastcgi %s {\n\t\tread_timeout 500ms\n\t\tcapture_stderr\n\t}\n", root, dead, fpm.Addr))
		base := fmt.Sprintf("https://localhost:%d", port)
		c := cls["h1.1"]
		for _, x := range []exchange{
			{method: "GET", path: "/slow.php", status: 504, body: "*"},
			{method: "GET", path: "/dead/index.php", status: 502, body: "*"},
			{method: "GET", path: "/stderr.php", status: 200, body: "ok\n"},
			{method: "GET", path: "/status.php", status: 201, body: "made\n"}, // the pool goes on after the timeout
		} {
			x.run(t, c, base)
		}
		if log := r.logged("something went wrong", 10*time.Second); !strings.Contains(log, "level=WARN msg=stderr") {
			t.Errorf("stderr not logged at WARN:\n%s", log)
		}
	})
}

// TestPHPFastCGIRestart: php-fpm closes kept-alive connections when a
// worker reaches pm.max_requests, and is restarted while requests run:
// a connection found closed is replaced, never answered with a 502, and
// once php-fpm is back every request succeeds.
func TestPHPFastCGIRestart(t *testing.T) {
	fpm := phpfpmtest.Start(t, 3)
	root := phpfpmtest.Site(t, phpApp)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fpmSite(root, "unix/"+fpm.Sock, ""))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for i := range 40 { // workers retire every 3 requests
				if status, body := send(t, c, "GET", base+"/status.php", "", nil); status != 201 || body != "made\n" {
					t.Fatalf("%s request %d: %d %q", proto, i, status, body)
				}
			}
		}
		// Restarted mid-load: requests during the restart may fail (the
		// socket is gone), none may hang; after it, all succeed.
		c := cls["h2"]
		done := make(chan int, 8)
		for range 4 {
			go func() {
				failed := 0
				for range 25 {
					req, _ := http.NewRequest("GET", base+"/status.php", nil)
					resp, err := c.Do(req)
					if err != nil || resp.StatusCode != 201 {
						failed++
					}
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				done <- failed
			}()
		}
		fpm.Restart()
		for range 4 {
			<-done
		}
		for proto, c := range cls {
			for i := range 10 {
				if status, body := send(t, c, "GET", base+"/status.php", "", nil); status != 201 || body != "made\n" {
					t.Fatalf("%s after restart, request %d: %d %q", proto, i, status, body)
				}
			}
		}
	})
}

// TestPHPFastCGIApps: the Caddyfiles the WordPress and Laravel
// documentation give for Caddy validate and serve their front controller,
// its static files (encoded) and, for WordPress, wp-admin's canonical
// redirect; php_fastcgi under a path matcher serves only there.
func TestPHPFastCGIApps(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	wp := phpfpmtest.Site(t, map[string]string{
		"index.php":             `<?php echo "wordpress ", $_SERVER['REQUEST_URI'], "\n";`,
		"wp-admin/index.php":    `<?php echo "dashboard\n";`,
		"wp-login.php":          `<?php echo "login\n";`,
		"wp-includes/js/app.js": strings.Repeat("console.log('wp');\n", 100),
	})
	laravel := phpfpmtest.Site(t, map[string]string{
		"public/index.php":  `<?php echo "laravel ", parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH), " ", $_SERVER['SCRIPT_FILENAME'], "\n";`,
		"public/robots.txt": "User-agent: *\n",
		".env":              "APP_KEY=secret",
	})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Run("wordpress", func(t *testing.T) {
			port, cls := startSite(t, backend, fmt.Sprintf("\troot * %s\n\tencode\n\tphp_fastcgi unix/%s\n\tfile_server\n", wp, fpm.Sock))
			base := fmt.Sprintf("https://localhost:%d", port)
			runEach(t, cls, base, []exchange{
				{method: "GET", path: "/2024/01/hello-world/", status: 200, body: "wordpress /2024/01/hello-world/\n"},
				{method: "GET", path: "/?p=1", status: 200, body: "wordpress /?p=1\n"},
				{method: "GET", path: "/wp-admin", status: 308, want: map[string]string{"Location": "./wp-admin/"}},
				{method: "GET", path: "/wp-admin/", status: 200, body: "dashboard\n"},
				{method: "GET", path: "/wp-login.php", status: 200, body: "login\n"},
				{method: "GET", path: "/wp-includes/js/app.js", header: map[string]string{"Accept-Encoding": "identity"}, status: 200, body: strings.Repeat("console.log('wp');\n", 100)},
			})
		})
		t.Run("laravel", func(t *testing.T) {
			port, cls := startSite(t, backend, fmt.Sprintf("\troot * %s/public\n\tencode zstd gzip\n\tphp_fastcgi %s\n\tfile_server\n", laravel, fpm.Addr))
			base := fmt.Sprintf("https://localhost:%d", port)
			runEach(t, cls, base, []exchange{
				{method: "GET", path: "/users/42/edit", status: 200, body: "laravel /users/42/edit " + laravel + "/public/index.php\n"},
				{method: "POST", path: "/login", status: 200, body: "laravel /login " + laravel + "/public/index.php\n"},
				{method: "GET", path: "/robots.txt", status: 200, body: "User-agent: *\n"},
				{method: "GET", path: "/../.env", status: 200, body: "laravel /../.env " + laravel + "/public/index.php\n"}, // never the file
			})
		})
		t.Run("subpath", func(t *testing.T) {
			port, cls := startSite(t, backend, fmt.Sprintf("\troot * %s\n\tphp_fastcgi /blog/* %s\n\tfile_server\n", wp, fpm.Addr))
			base := fmt.Sprintf("https://localhost:%d", port)
			c := cls["h2"]
			for _, x := range []exchange{
				{method: "GET", path: "/blog/hello", status: 200, body: "wordpress /blog/hello\n"},
				{method: "GET", path: "/shop/hello", status: 404, body: ""},
				{method: "GET", path: "/wp-login.php", status: 200, body: "<?php echo \"login\\n\";"}, // outside /blog: a file
			} {
				x.run(t, c, base)
			}
		})
	})
}

// countingListener counts the connections it accepted and keeps them, so
// the test can close them under the proxy.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// closeAll closes every connection accepted so far, from the server's side.
func (l *countingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// TestFastCGIKeepAlive: with Go's own FastCGI server (net/http/fcgi,
// which honours FCGI_KEEP_CONN) behind transport fastcgi, sequential
// requests share one kept-alive connection, a response whose head comes
// with more body than a read holds among them; connections the application
// closed while idle are replaced without an error reaching the client.
func TestFastCGIKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go fcgi.Serve(cl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big.php" {
			// One write: the head and 60,000 bytes of body in one
			// record, more than a read buffer holds.
			w.Write([]byte(bigBody[:60000]))
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	t.Cleanup(func() { ln.Close() })
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		before := cl.accepted()
		port, cls := startSite(t, backend, fmt.Sprintf("\treverse_proxy %s {\n\t\ttransport fastcgi {\n\t\t\tsplit .php\n\t\t}\n\t}\n", ln.Addr()))
		base := fmt.Sprintf("https://localhost:%d", port)
		c := cls["h2"]
		for i := range 30 {
			if status, body := send(t, c, "GET", base+"/app.php/x", "", nil); status != 200 || body != "GET /app.php/x" {
				t.Fatalf("request %d: %d %q", i, status, body)
			}
		}
		if status, body := send(t, c, "GET", base+"/big.php", "", nil); status != 200 || body != bigBody[:60000] {
			t.Fatalf("big: %d, %d bytes", status, len(body))
		}
		if n := cl.accepted() - before; n != 1 {
			t.Errorf("30 sequential requests opened %d connections, want 1", n)
		}
		for i := range 40 {
			cl.closeAll()
			method, form := [2]string{"GET", "POST"}[i%2], [2]string{"", "form=1"}[i%2]
			if status, body := send(t, c, method, base+"/app.php", form, nil); status != 200 || body != method+" /app.php" {
				t.Fatalf("after the application closed its connections, request %d: %d %q", i, status, body)
			}
		}
	})
}

// TestPHPFastCGICopyHeaders: a field forward_auth's copy_headers set
// cannot be shadowed by a client field PHP would fold to the same
// variable (Remote_User for HTTP_REMOTE_USER), nor joined with one the
// client sent under its own name.
func TestPHPFastCGICopyHeaders(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, map[string]string{
		"who.php": `<?php echo $_SERVER['HTTP_REMOTE_USER'] ?? 'none', ' ', $_SERVER['HTTP_REMOTE_EMAIL'] ?? 'none', "\n";`,
	})
	auth := scriptedAuth(t)
	site := fmt.Sprintf("\troot * %s\n\tforward_auth %s {\n\t\turi /auth\n\t\tcopy_headers Remote-User Remote-Email\n\t}\n\tphp_fastcgi %s\n", root, auth, fpm.Addr)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		runEach(t, cls, base, []exchange{
			{method: "GET", path: "/who.php", header: map[string]string{"X-Token": "good"}, status: 200, body: "alice alice@example.com\n"},
			{method: "GET", path: "/who.php", header: map[string]string{"X-Token": "good", "Remote_User": "mallory", "Remote-User": "eve"},
				status: 200, body: "alice alice@example.com\n"},
			{method: "GET", path: "/who.php", header: map[string]string{"X-Token": "good-nomail", "Remote_Email": "spoofed@example.com"},
				status: 200, body: "bob none\n"},
			{method: "GET", path: "/who.php", header: map[string]string{"Remote_User": "mallory"}, status: 401, body: "*"},
		})
	})
}

// TestPHPFastCGIAccel: an X-Accel-Redirect from PHP is left to the
// routes: handle_response serves the file it names, as Caddy's
// documentation shows for php_fastcgi.
func TestPHPFastCGIAccel(t *testing.T) {
	fpm := phpfpmtest.Start(t, 0)
	root := phpfpmtest.Site(t, map[string]string{
		"download.php":       `<?php header('X-Accel-Redirect: /report.txt'); echo "not this\n";`,
		"plain.php":          `<?php echo "plain\n";`,
		"private/report.txt": "the report\n",
	})
	site := fmt.Sprintf("\troot * %s\n\tphp_fastcgi %s {\n\t\t@accel header X-Accel-Redirect *\n\t\thandle_response @accel {\n\t\t\troot * %s/private\n\t\t\trewrite * {rp.header.X-Accel-Redirect}\n\t\t\tfile_server\n\t\t}\n\t}\n", root, fpm.Addr, root)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		runEach(t, cls, base, []exchange{
			{method: "GET", path: "/download.php", status: 200, body: "the report\n", want: map[string]string{"X-Accel-Redirect": ""}},
			{method: "GET", path: "/plain.php", status: 200, body: "plain\n"},
		})
	})
}
