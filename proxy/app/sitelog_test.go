package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// siteLogConfig is the Caddyfile of TestSiteLogs: site A logs json to
// fileA (rolled at 1 MiB), skips /health, bounds /upload bodies and
// answers /teapot itself;
// site B logs errors only, in Caddy's console format through a filter, to fileB; site C
// (plain HTTP) shares fileA's writer, rewrites /c, and with order moves its header
// directive after reverse_proxy, where it never runs.
func siteLogConfig(storage, fileA, fileB, origin, cert, key string, admin, pA, pB, pC, httpPort int, order bool) []byte {
	orderLine := ""
	if order {
		orderLine = "order header last"
	}
	outputA := fmt.Sprintf("output file %s {\n\t\t\troll_size 1MiB\n\t\t\troll_keep 3\n\t\t}", fileA)
	return []byte(fmt.Sprintf(`{
	loops 1
	admin 127.0.0.1:%d
	storage %s
	default_bind 127.0.0.1
	http_port %d
	%s
}

localhost:%d {
	log {
		%s
		format json
	}
	log_skip /health
	request_body /upload* {
		max_size 1000
	}
	respond /teapot "short and stout" 418
	reverse_proxy %s
	tls %s %s
}

localhost:%d {
	log errors {
		output file %s
		format filter {
			wrap console
			request>remote_ip ip_mask 8 32
		}
		level ERROR
	}
	reverse_proxy %s
	tls %s %s
}

:%d {
	log {
		%s
	}
	header X-Order applied
	rewrite /c /rewritten
	reverse_proxy %s
}
`, admin, storage, httpPort, orderLine, pA, outputA, origin, cert, key, pB, fileB, origin, cert, key, pC, outputA, origin))
}

// TestSiteLogs: per-site access logs over real sockets on every backend —
// Caddy's json and console entries in each site's own file, log_skip,
// level, a file shared by two sites, rolling at roll_size with gzip, a
// file rotated away reopened on reload, and order changing which
// directives run.
func TestSiteLogs(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		var uploaded atomic.Int64
		origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/fail":
				w.WriteHeader(503)
			case strings.HasPrefix(r.URL.Path, "/upload"):
				n, _ := io.Copy(io.Discard, r.Body)
				uploaded.Store(max(uploaded.Load(), n))
				fmt.Fprintf(w, "got %d", n)
			default:
				w.Header().Set("X-Origin", "o")
				w.Header().Set("X-Path", r.URL.Path)
				io.WriteString(w, "ok")
			}
		}))
		certFile, keyFile, roots := filePair(t, dir)
		fileA, fileB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
		pA, pB, pC := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
		httpPort, admin := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		conf := func(order bool) []byte {
			return siteLogConfig(filepath.Join(dir, "storage"), fileA, fileB, origin, certFile, keyFile, admin, pA, pB, pC, httpPort, order)
		}
		os.WriteFile(file, conf(true), 0o644)
		r := start(t, file, Options{Pollers: []string{backend}})
		h1 := tlsClient(roots, "http/1.1")
		urlA, urlB := fmt.Sprintf("https://localhost:%d", pA), fmt.Sprintf("https://localhost:%d", pB)

		status(t, h1, "GET", urlA+"/first", 200)
		status(t, h1, "GET", urlA+"/health", 200) // log_skip
		status(t, h1, "GET", urlB+"/", 200)       // below B's level
		status(t, h1, "GET", urlB+"/fail", 503)
		res, err := plainClient(fmt.Sprintf("127.0.0.1:%d", pC)).Get(fmt.Sprintf("http://127.0.0.1:%d/c", pC))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.Header.Get("X-Order") != "" {
			t.Errorf("order header last: X-Order %q, want none (header sorts after reverse_proxy)", res.Header.Get("X-Order"))
		}
		if res.Header.Get("X-Path") != "/rewritten" {
			t.Errorf("site C's origin saw %q, want the rewritten /rewritten", res.Header.Get("X-Path"))
		}

		status(t, h1, "GET", urlA+"/teapot", 418) // answered by the routes, logged all the same

		// Site A's file: Caddy's json entry, field for field.
		a := awaitLines(t, fileA, 3)
		if strings.Contains(strings.Join(a, ""), "/health") {
			t.Errorf("log_skip /health was logged: %q", a)
		}
		var first map[string]any
		if err := json.Unmarshal([]byte(a[0]), &first); err != nil {
			t.Fatalf("%v: %q", err, a[0])
		}
		req, _ := first["request"].(map[string]any)
		hdrs, _ := req["headers"].(map[string]any)
		resp, _ := first["resp_headers"].(map[string]any)
		if first["level"] != "info" || first["logger"] != "http.log.access.log0" || first["msg"] != "handled request" ||
			first["status"] != 200.0 || first["size"] != 2.0 || first["bytes_read"] != 0.0 || req["uri"] != "/first" ||
			req["method"] != "GET" || req["proto"] != "HTTP/1.1" || req["remote_ip"] != "127.0.0.1" || req["host"] != fmt.Sprintf("localhost:%d", pA) ||
			hdrs["User-Agent"] == nil || resp["X-Origin"] == nil {
			t.Errorf("site A entry %s", a[0])
		}
		if tls, _ := req["tls"].(map[string]any); tls["proto"] != "http/1.1" || tls["server_name"] != "localhost" || tls["version"] != 772.0 {
			t.Errorf("site A entry's tls %v", req["tls"])
		}
		// Site C's entry went to the same file, under its own logger name,
		// with the uri the client sent (before rewrite), as Caddy logs it.
		if !strings.Contains(a[1], `"logger":"http.log.access.log1"`) || !strings.Contains(a[1], `"uri":"/c"`) || strings.Contains(a[1], `"tls"`) {
			t.Errorf("site C entry %s", a[1])
		}

		if !strings.Contains(a[2], `"uri":"/teapot"`) || !strings.Contains(a[2], `"status":418`) || !strings.Contains(a[2], `"size":15`) ||
			!strings.Contains(a[2], `"resp_headers":{"Content-Type":["text/plain; charset=utf-8"],"Content-Length":["15"]}`) {
			t.Errorf("respond entry %s", a[2])
		}

		// Site B's file: only the 503, as Caddy's console line, its
		// remote_ip masked by the filter format.
		b := awaitLines(t, fileB, 1)
		parts := strings.SplitN(b[0], "\t", 5)
		if len(b) != 1 || len(parts) != 5 || !strings.Contains(parts[1], "ERROR") || parts[2] != "http.log.access.errors" ||
			parts[3] != "handled request" || !strings.Contains(parts[4], `"status":503`) || !strings.Contains(parts[4], `"remote_ip":"127.0.0.0"`) {
			t.Errorf("site B lines %q", b)
		}

		// request_body max_size, on HTTP/1.1 and h2, with and without a
		// declared length: 413, and the origin never gets more than 1000
		// bytes.
		h2 := tlsClient(roots, "h2")
		for _, c := range []struct {
			name   string
			client *http.Client
		}{{"h1", h1}, {"h2", h2}} {
			res := post(t, c.client, urlA+"/upload", 500, true)
			if res != 200 {
				t.Errorf("%s: 500 bytes: status %d, want 200", c.name, res)
			}
			if res := post(t, c.client, urlA+"/upload-declared", 5000, true); res != 413 {
				t.Errorf("%s: declared 5000 bytes: status %d, want 413", c.name, res)
			}
			if res := post(t, c.client, urlA+"/upload-streamed", 50000, false); res != 413 {
				t.Errorf("%s: streamed 50000 bytes: status %d, want 413", c.name, res)
			}
		}
		if n := uploaded.Load(); n > 1000 {
			t.Errorf("the origin read %d body bytes, more than max_size 1000", n)
		}

		// Reload after the file was rotated away: the next entry goes to a
		// new file by the old name. Without the order line, header runs.
		if err := os.Rename(fileA, fileA+".old"); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(file, conf(false), 0o644)
		if err := r.in.Reload(); err != nil {
			t.Fatal(err)
		}
		status(t, h1, "GET", urlA+"/after-reload", 200)
		if a := awaitLines(t, fileA, 1); !strings.Contains(a[0], `"uri":"/after-reload"`) {
			t.Errorf("after reload %q", a)
		}
		res, err = plainClient(fmt.Sprintf("127.0.0.1:%d", pC)).Get(fmt.Sprintf("http://127.0.0.1:%d/c", pC))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.Header.Get("X-Order") != "applied" {
			t.Errorf("without order: X-Order %q, want applied", res.Header.Get("X-Order"))
		}

		// Rolling: more than roll_size (1 MiB) of entries rolls a.log into
		// a gzipped file beside it.
		long := strings.Repeat("x", 8000)
		for i := 0; i < 150; i++ {
			status(t, h1, "GET", urlA+"/roll?"+strconv.Itoa(i)+long, 200)
		}
		gz := awaitRolled(t, dir)
		f, err := os.Open(gz)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", gz, err)
		}
		rolled, _ := io.ReadAll(zr)
		if !bytes.Contains(rolled, []byte(`"uri":"/after-reload"`)) || !bytes.Contains(rolled, []byte(`"uri":"/roll?0x`)) {
			t.Errorf("rolled file holds %d bytes without the first entries", len(rolled))
		}
		if st, err := os.Stat(fileA); err != nil || st.Size() >= 1<<20 {
			t.Errorf("a.log after rolling: %v %v", st, err)
		}
	})
}

// tlsClient is an HTTPS client to localhost speaking proto only.
func tlsClient(roots *x509.CertPool, proto string) *http.Client {
	tr := &http.Transport{TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2"}
	if proto != "h2" {
		tr.TLSNextProto = map[string]func(string, *stdtls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func status(t *testing.T, c *http.Client, method, url string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d", method, url, res.StatusCode, want)
	}
}

// post uploads n bytes, with a content-length when declared (else
// chunked on HTTP/1.1, no length on h2), and returns the status.
func post(t *testing.T, c *http.Client, url string, n int, declared bool) int {
	t.Helper()
	var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("b"), n))
	if !declared {
		pr, pw := io.Pipe()
		go func() {
			chunk := bytes.Repeat([]byte("s"), 500)
			for i := 0; i < n/500; i++ {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Close()
		}()
		body = pr
		defer pr.Close()
	}
	req, _ := http.NewRequest("POST", url, body)
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s (%d bytes): %v", url, n, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// awaitLines waits for a log file to hold at least n lines and returns
// them.
func awaitLines(t *testing.T, name string, n int) []string {
	t.Helper()
	var lines []string
	if !servertest.Within(5*time.Second, func() bool {
		lines = lines[:0]
		if f, err := os.Open(name); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
		return len(lines) >= n
	}) {
		t.Fatalf("%s: %d lines, want %d: %q", filepath.Base(name), len(lines), n, lines)
	}
	return lines
}

// awaitRolled waits for lumberjack's gzipped roll of a.log: complete
// once the uncompressed roll it was made from is gone.
func awaitRolled(t *testing.T, dir string) string {
	t.Helper()
	var rolled string
	if !servertest.Within(10*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "a-*.log.gz"))
		plain, _ := filepath.Glob(filepath.Join(dir, "a-*.log"))
		if len(m) > 0 && len(plain) == 0 {
			rolled = m[0]
		}
		return rolled != ""
	}) {
		ls, _ := filepath.Glob(filepath.Join(dir, "*"))
		t.Fatalf("no rolled a-*.log.gz: %q", ls)
	}
	return rolled
}
