package main

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// origin is a plain HTTP/1.1 app on loopback that answers with its name;
// /slow waits for release (or two seconds) first.
type origin struct {
	name    string
	addr    string
	started chan struct{} // a /slow request arrived
	release chan struct{}
}

func startOrigin(t *testing.T, name string) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{name: name, addr: ln.Addr().String(), started: make(chan struct{}, 16), release: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			o.started <- struct{}{}
			select {
			case <-o.release:
			case <-time.After(2 * time.Second):
			}
			fmt.Fprintf(w, "%s slow", o.name)
			return
		}
		w.Header().Set("X-Origin", o.name)
		fmt.Fprintf(w, "%s %s", o.name, r.Header.Get("X-Site"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return o
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// proc is a running "pollproxy run".
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func startRun(t *testing.T, caddyfile string, extra ...string) *proc {
	t.Helper()
	cmd := exec.Command(pollproxyBinary(t), append([]string{"run", "--config", caddyfile}, extra...)...)
	// The Caddyfile and the flags decide the pollers, not the test's
	// environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POLLPROXY_POLLER=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &proc{t: t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("pollproxy output:\n%s", p.stderr)
		}
	})
	p.waitLog("pollproxy running", 20*time.Second)
	return p
}

// waitLog waits for a line containing s and returns the output so far.
func (p *proc) waitLog(s string, d time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		out := p.stderr.String()
		if strings.Contains(out, s) {
			return out
		}
		select {
		case <-p.done:
			p.t.Fatalf("pollproxy exited (%v) before logging %q", p.err, s)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q in pollproxy's output after %v", s, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) signal(s syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatal(err)
	}
}

// h2Client dials addr whatever the URL's host, verifies with roots and
// speaks HTTP/2 only.
func h2Client(addr string, roots *x509.CertPool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &stdtls.Config{RootCAs: roots, NextProtos: []string{"h2"}},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		t.Errorf("GET %s: %s, want HTTP/2", url, resp.Proto)
	}
	return resp.StatusCode, string(b), resp
}

func scrape(t *testing.T, admin string) string {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// filePair writes a self-signed certificate for localhost and returns the
// files and a pool trusting it.
func filePair(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	cert, err := pptls.SelfSigned([]string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := pptls.WritePEM(cert, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	return certFile, keyFile, roots
}

// localRoot reads the local CA's root from the storage pollproxy uses.
func localRoot(t *testing.T, storage string, roots *x509.CertPool) {
	t.Helper()
	c, err := pptls.NewCerts(pptls.CertConfig{StorageDir: storage})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pemBytes, err := c.RootPEM()
	if err != nil {
		t.Fatal(err)
	}
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("local root: no certificate")
	}
}

func haveBackends(t *testing.T, names ...string) {
	for _, n := range names {
		if netpoll.ValidName(n) != nil {
			t.Skipf("poller %s not available here", n)
		}
	}
}

func TestRunEndToEnd(t *testing.T) {
	haveBackends(t, "epoll", "poll")
	dir := t.TempDir()
	a, b := startOrigin(t, "A"), startOrigin(t, "B")
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := freePort(t), freePort(t)
	storage := filepath.Join(dir, "storage")
	accessLog := filepath.Join(dir, "access.log")
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller epoll poll
	loops 2
	admin 127.0.0.1:%[1]d
	storage %[2]s
	default_bind 127.0.0.1
	log {
		format common
		output %[3]s
	}
}

localhost:%[4]d {
	reverse_proxy %[5]s {
		header_up X-Site files
		header_down -X-Origin
	}
	tls %[6]s %[7]s
}

*.localhost:%[4]d {
	reverse_proxy %[8]s {
		header_up X-Site internal
	}
	tls internal
}
`, adminPort, storage, accessLog, port, a.addr, certFile, keyFile, b.addr)), 0o644)

	p := startRun(t, file)
	localRoot(t, storage, roots)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := fmt.Sprintf("https://localhost:%d", port)
	const n = 20
	for i := 0; i < n; i++ {
		// A client per request: new connections spread over both loops.
		c := h2Client(addr, roots)
		status, body, resp := get(t, c, base+"/")
		if status != 200 || body != "A files" || resp.Header.Get("X-Origin") != "" {
			t.Fatalf("localhost: %d %q %v", status, body, resp.Header)
		}
		c.CloseIdleConnections()
	}
	c := h2Client(addr, roots)
	if status, body, _ := get(t, c, fmt.Sprintf("https://app.localhost:%d/", port)); status != 200 || body != "B internal" {
		t.Errorf("app.localhost (tls internal, wildcard): %d %q", status, body)
	}
	if _, err := h2Client(addr, x509.NewCertPool()).Get(base + "/"); err == nil {
		t.Errorf("a client without the certificate's root connected")
	}

	m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminPort))
	for _, want := range []string{
		`pollproxy_poller_waits_total{loop="0",poller="epoll"}`,
		`pollproxy_poller_waits_total{loop="1",poller="poll"}`,
		`pollproxy_poller_adds_total{loop="1",poller="poll"}`,
		`pollproxy_requests_total{code="2xx",loop="0",poller="epoll",upstream="` + a.addr + `"}`,
		`pollproxy_requests_total{code="2xx",loop="1",poller="poll",upstream="` + a.addr + `"}`,
		`pollproxy_request_duration_seconds_bucket{loop="0",poller="epoll",upstream="` + a.addr + `",le="0.1"}`,
		`pollproxy_upstream_open_connections{poller="epoll,poll",upstream="` + a.addr + `"}`,
		`pollproxy_upstream_reuse_ratio{poller="epoll,poll",upstream="` + a.addr + `"}`,
		`pollproxy_connections_active{listen="127.0.0.1:` + fmt.Sprint(port) + `",poller="epoll,poll"}`,
		`pollproxy_build_info{poller="epoll,poll"`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Every request is counted once, under one of the two pollers.
	total := 0
	re := regexp.MustCompile(`pollproxy_requests_total\{code="2xx",loop="\d",poller="(epoll|poll)",upstream="` + regexp.QuoteMeta(a.addr) + `"\} (\d+)`)
	for _, mm := range re.FindAllStringSubmatch(m, -1) {
		var v int
		fmt.Sscan(mm[2], &v)
		total += v
	}
	if total != n {
		t.Errorf("2xx requests to A counted %d, want %d", total, n)
	}

	// The access log: one Common Log Format line per request.
	p.signal(syscall.SIGTERM)
	<-p.done
	if p.err != nil {
		t.Fatalf("exit: %v", p.err)
	}
	logBytes, _ := os.ReadFile(accessLog)
	lines := strings.Split(strings.TrimSpace(string(logBytes)), "\n")
	lineRE := regexp.MustCompile(`^127\.0\.0\.1 - - \[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "GET / HTTP/2\.0" 200 \d+ upstream=\S+ duration=\d+\.\d{6} poller=(epoll|poll) loop=[01]$`)
	if len(lines) != n+1 {
		t.Errorf("%d access log lines, want %d", len(lines), n+1)
	}
	for _, l := range lines {
		if !lineRE.MatchString(l) {
			t.Errorf("access log line %q", l)
		}
	}
}

func TestRunReload(t *testing.T) {
	dir := t.TempDir()
	a, b := startOrigin(t, "A"), startOrigin(t, "B")
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := freePort(t), freePort(t)
	accessLog := filepath.Join(dir, "access.json")
	file := filepath.Join(dir, "Caddyfile")
	conf := func(upstream, extra string) []byte {
		return []byte(fmt.Sprintf(`{
	loops 1
	admin 127.0.0.1:%d
	storage %s
	default_bind 127.0.0.1
	log {
		output %s
	}
}

localhost:%d {
	reverse_proxy %s {
		lb_policy first
		%s
	}
	tls %s %s
}
`, adminPort, filepath.Join(dir, "storage"), accessLog, port, upstream, extra, certFile, keyFile))
	}
	os.WriteFile(file, conf(a.addr, ""), 0o644)
	p := startRun(t, file, "--poller", "poll")
	c := h2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	base := fmt.Sprintf("https://localhost:%d", port)
	if _, body, _ := get(t, c, base+"/"); body != "A " {
		t.Fatalf("before reload: %q", body)
	}
	if m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminPort)); !strings.Contains(m, `pollproxy_poller_waits_total{loop="0",poller="poll"}`) {
		t.Errorf("--poller poll did not override the Caddyfile's auto:\n%s", m)
	}

	// A long request in flight on the client's connection...
	slow := make(chan string, 1)
	go func() {
		resp, err := c.Get(base + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	<-a.started

	// ...survives a reload that moves the site to another origin.
	os.WriteFile(file, conf(b.addr, ""), 0o644)
	p.signal(syscall.SIGHUP)
	p.waitLog("msg=reloaded", 10*time.Second)
	if _, body, _ := get(t, c, base+"/"); body != "B " {
		t.Errorf("after reload: %q, want B", body)
	}
	close(a.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("in-flight request across the reload: %q", got)
	}

	// A broken file is refused, with its line, and the old one kept.
	os.WriteFile(file, conf(b.addr, "lb_policy fastest"), 0o644)
	p.signal(syscall.SIGHUP)
	out := p.waitLog("reload failed", 10*time.Second)
	want := file + `:14: reverse_proxy: lb_policy: unknown policy \"fastest\" (want round_robin, least_conn, first)`
	if !strings.Contains(out, want) {
		t.Errorf("reload error lacks %s", want)
	}
	if _, body, _ := get(t, c, base+"/"); body != "B " {
		t.Errorf("after a failed reload: %q, want B", body)
	}

	p.signal(syscall.SIGTERM)
	<-p.done
	if p.err != nil {
		t.Fatalf("exit: %v", p.err)
	}
	// The JSON access log: one object per request.
	logBytes, _ := os.ReadFile(accessLog)
	lines := strings.Split(strings.TrimSpace(string(logBytes)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d JSON lines, want 4:\n%s", len(lines), logBytes)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"msg": "request", "method": "GET", "uri": "/", "status": 200.0, "proto": "HTTP/2.0",
		"host": fmt.Sprintf("localhost:%d", port), "upstream": a.addr, "poller": "poll", "loop": 0.0} {
		if rec[k] != v {
			t.Errorf("JSON %s = %v, want %v", k, rec[k], v)
		}
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	a := startOrigin(t, "A")
	certFile, keyFile, roots := filePair(t, dir)
	port := freePort(t)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	admin off
	loops 2
	storage %s
	default_bind 127.0.0.1
	grace_period 10s
}
localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, filepath.Join(dir, "storage"), port, a.addr, certFile, keyFile)), 0o644)
	p := startRun(t, file)
	c := h2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	base := fmt.Sprintf("https://localhost:%d", port)
	slow := make(chan string, 1)
	go func() {
		resp, err := c.Get(base + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	<-a.started
	p.signal(syscall.SIGTERM)
	p.waitLog("shutting down", 5*time.Second)
	select {
	case <-p.done:
		t.Fatal("exited with a request in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(a.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("in-flight request across SIGTERM: %q", got)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after the last request")
	}
	if p.err != nil {
		t.Errorf("exit: %v, want 0", p.err)
	}
}

func TestRunStartupError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte("localhost:1 {\n\treverse_proxy 127.0.0.1:1 {\n\t\tmax_conns lots\n\t}\n}\n"), 0o644)
	out, err := exec.Command(pollproxyBinary(t), "run", "--config", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), file+`:3: reverse_proxy: max_conns: "lots": want a whole number >= 1`) {
		t.Errorf("run with a bad file: %v\n%s", err, out)
	}
}
