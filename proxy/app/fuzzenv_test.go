package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// fuzzEnv is what one fuzzing process serves its inputs with: a running
// instance per poller backend (started on first use, one loop each), a
// loopback origin (HTTP/1.1 and h2c with prior knowledge), a port
// nothing listens on, and a directory of files (templates among them). An input reloads one
// instance with its site (Instance.Reload: the handler swap a SIGHUP
// makes), so an input costs a reload and a few requests, not a start.
type fuzzEnv struct {
	tb       testing.TB
	dir      string
	origin   string
	dead     string
	root     string
	backends []string
	servers  map[string]*fuzzServer
}

// fuzzServer is one instance under fuzzing.
type fuzzServer struct {
	in     *Instance
	file   string
	site   string // the fuzzed site's address, host:port
	alive  string // a site beside it that always answers "alive"
	admin  string
	last   string // the Caddyfile it serves
	panics *panicWatch
	// The panics told of so far: in its log, and in
	// pollproxy_panics_total.
	logged  int
	counted float64
}

func newFuzzEnv(tb testing.TB) *fuzzEnv {
	e := &fuzzEnv{tb: tb, dir: tb.TempDir(), backends: netpoll.Available(), servers: map[string]*fuzzServer{}}
	if len(e.backends) == 0 {
		tb.Fatal("no poller backend available")
	}
	e.origin = fuzzOriginServer(tb)
	e.dead = fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(tb))
	e.root = filepath.Join(e.dir, "www")
	for name, body := range fuzzFiles {
		name = filepath.Join(e.root, name)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// fuzzOriginServer starts fuzzOrigin on loopback: HTTP/1.1 and h2c
// with prior knowledge, closing connections gracefully (lingerConn).
func fuzzOriginServer(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(fuzzOrigin),
		// The sites also send it FastCGI records, which it reads as a
		// request head that may never end (no newline): it gives up
		// after a second and closes, where it would wait forever, and
		// the proxy with it (as Caddy's, whose FastCGI transport has
		// no read timeout by default).
		ReadHeaderTimeout: time.Second,
		Protocols:         new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go srv.Serve(lingerListener{ln})
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// lingerListener accepts lingerConns.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return lingerConn{c.(*net.TCPConn)}, nil
}

// lingerConn closes as servers that linger do (nginx's lingering_close):
// its side first, then what the peer still sends is read and dropped
// for a moment. Go's server closes at once after refusing a request
// (400 for a bad escape in the path), and with the request's body
// unread the kernel resets the connection: the proxy then cannot tell
// the answer's close-delimited body from a truncated one and resets the
// client's stream, as Caddy does, which the fuzzer would take for a
// failure.
type lingerConn struct{ *net.TCPConn }

func (c lingerConn) Close() error {
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	io.Copy(io.Discard, c.TCPConn)
	return c.TCPConn.Close()
}

// fuzzFiles are the files under the fuzzed sites' root: the request
// targets' files, index.html and app.css templates (app.css rendered
// only when templates' mime names text/css), x.php for php_fastcgi.
var fuzzFiles = map[string]string{
	"index.html":     `<h1>{{.Req.URL.Path}}</h1>{{include "part.html" "arg"}}{{.RespHeader.Set "X-Tpl" "yes"}}`,
	"part.html":      `part {{index .Args 0}}`,
	"static/app.css": `body { color: {{ph "query.k"}} }`,
	"x.php":          `<?php echo "php";`,
}

// fuzzOrigin is the application behind the fuzzed sites. Its answer
// depends on the path it receives (after the site's rewrites): /s/NNN
// answers status NNN, /big 100 KiB, /chunk a flushed stream, /nobody
// 204, /early a 103 first; anything else a page long enough for encode
// to compress.
func fuzzOrigin(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	p := r.URL.Path
	w.Header().Set("X-Origin", "o")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	switch {
	case strings.HasPrefix(p, "/s/") && len(p) >= 6:
		code, err := strconv.Atoi(p[3:6])
		if err != nil || code < 200 || code > 599 {
			code = 200
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d", code)
	case strings.HasPrefix(p, "/big"):
		w.Write(bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16))
	case strings.HasPrefix(p, "/chunk"):
		for i := range 3 {
			fmt.Fprintf(w, "piece %d\n", i)
			w.(http.Flusher).Flush()
		}
	case strings.HasPrefix(p, "/nobody"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(p, "/early"):
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "after early hints")
	default:
		for range 12 {
			fmt.Fprintf(w, "<p>origin %s %s</p>\n", r.Method, r.RequestURI)
		}
	}
}

// server returns the instance for a backend, starting it on first use.
func (e *fuzzEnv) server(backend string) *fuzzServer {
	if s := e.servers[backend]; s != nil {
		return s
	}
	s := &fuzzServer{
		file:   filepath.Join(e.dir, backend+".Caddyfile"),
		site:   fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(e.tb)),
		alive:  fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(e.tb)),
		admin:  fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(e.tb)),
		panics: &panicWatch{},
	}
	if err := os.WriteFile(s.file, []byte(e.caddyfile(s, backend, "\trespond \"ready\"\n", "")), 0o644); err != nil {
		e.tb.Fatal(err)
	}
	cfg, err := Load(s.file)
	if err != nil {
		e.tb.Fatal(err)
	}
	s.in, err = Start(cfg, Options{Logger: slog.New(slog.NewTextHandler(s.panics, nil)), Version: "fuzz"})
	if err != nil {
		e.tb.Fatalf("start on %s: %v", backend, err)
	}
	e.tb.Cleanup(s.in.Close)
	s.counted = s.panicsCounted(e.tb)
	e.servers[backend] = s
	return s
}

// caddyfile is a whole configuration around one site's directives: the
// fuzzed site on a plain-HTTP port that also takes h2c, the named routes
// it invokes, and the site beside it that tells the loop is still
// serving.
func (e *fuzzEnv) caddyfile(s *fuzzServer, backend, site, namedRoutes string) string {
	return fmt.Sprintf(`{
	poller %s
	loops 1
	admin %s
	storage %s
	default_bind 127.0.0.1
	http_port off
	auto_https off
	grace_period 1s
	servers {
		protocols h1 h2 h2c
	}
	log {
		output discard
	}
}

http://%s {
%s}

http://%s {
	respond "alive"
}
%s`, backend, s.admin, filepath.Join(e.dir, "storage"), s.site, site, s.alive, namedRoutes)
}

// load makes s serve the site's directives (and named routes). It reports false when the
// configuration is refused, after checking that every error names a
// line of the file.
func (e *fuzzEnv) load(t *testing.T, s *fuzzServer, backend, site, namedRoutes string) bool {
	text := e.caddyfile(s, backend, site, namedRoutes)
	if text == s.last {
		return true
	}
	if err := os.WriteFile(s.file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.in.Reload()
	if err == nil {
		s.last = text
		return true
	}
	var es config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("a refused configuration's error names no line: %v\n%s", err, numbered(text))
	}
	for _, ce := range es {
		if ce.Pos.File != s.file || ce.Pos.Line <= 0 {
			t.Fatalf("a refused configuration's error names no line of the file: %v\n%s", ce, numbered(text))
		}
	}
	return false
}

// numbered is a Caddyfile with line numbers, for failure messages.
func numbered(text string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&b, "%3d  %s\n", i+1, l)
	}
	return b.String()
}

// checkAlive asks the site beside the fuzzed one for its answer on a new
// connection: the loop they share still serves.
func (s *fuzzServer) checkAlive(t *testing.T, deadline time.Time) {
	c, err := dialH1(s.alive, deadline)
	if err != nil {
		t.Fatalf("the loop no longer accepts: %v", err)
	}
	defer c.Close()
	a, err := c.roundTrip(fuzzRequest{method: "GET", target: "/"}, s.alive)
	if err != nil || a.status != 200 {
		t.Fatalf("the loop no longer answers a plain request: status %d, %v", a.status, err)
	}
}

// newPanics reports the panics the instance told of since it was last
// asked: in its log (a record that says panic) or counted in
// pollproxy_panics_total.
func (s *fuzzServer) newPanics(t *testing.T) string {
	logged, rec := s.panics.seen()
	counted := s.panicsCounted(t)
	var out []string
	if logged > s.logged {
		out = append(out, fmt.Sprintf("%d logged, the first: %s", logged-s.logged, rec))
	}
	if counted > s.counted {
		out = append(out, fmt.Sprintf("pollproxy_panics_total went from %v to %v", s.counted, counted))
	}
	s.logged, s.counted = logged, counted
	return strings.Join(out, "; ")
}

// panicWatch is the instance's log, watched for a recovered panic: a
// loop that contains a panic to its connection logs it and keeps
// serving, and the fuzzer must fail all the same.
type panicWatch struct {
	mu     sync.Mutex
	count  int
	record string // the first record that told of a panic
}

func (p *panicWatch) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("panic")) {
		p.mu.Lock()
		if p.count == 0 {
			p.record = string(b)
		}
		p.count++
		p.mu.Unlock()
	}
	return len(b), nil
}

// seen returns how many records told of a panic, and the first.
func (p *panicWatch) seen() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count, p.record
}

// panicsCounted reads pollproxy_panics_total from the admin listener:
// the panics the loops recovered from, when the build counts them (0
// when it does not).
func (s *fuzzServer) panicsCounted(t testing.TB) float64 {
	c := &http.Client{Timeout: inputBudget}
	res, err := c.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	var total float64
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "pollproxy_panics_total") {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics: %q", l)
		}
		total += v
	}
	return total
}
