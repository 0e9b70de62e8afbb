package app

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestEndToEnd serves two sites on one port over an A/B split of
// pollers: a file pair and the local CA, the metrics and a Common Log
// Format access log.
func TestEndToEnd(t *testing.T) {
	haveBackends(t, "epoll", "poll")
	dir := t.TempDir()
	a, b := startOrigin(t, "A"), startOrigin(t, "B")
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
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
	log
	reverse_proxy %[5]s {
		header_up X-Site files
		header_down -X-Origin
	}
	tls %[6]s %[7]s
}

*.localhost:%[4]d {
	log
	reverse_proxy %[8]s {
		header_up X-Site internal
	}
	tls internal
}
`, adminPort, storage, accessLog, port, a.addr, certFile, keyFile, b.addr)), 0o644)

	r := start(t, file, Options{})
	localRoot(t, storage, roots)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := fmt.Sprintf("https://localhost:%d", port)
	const n = 20
	for i := 0; i < n; i++ {
		// A client per request: new connections spread over both loops.
		c := servertest.H2Client(addr, roots)
		status, body, resp := servertest.GetH2(t, c, base+"/")
		if status != 200 || body != "A files" || resp.Header.Get("X-Origin") != "" {
			t.Fatalf("localhost: %d %q %v", status, body, resp.Header)
		}
		c.CloseIdleConnections()
	}
	c := servertest.H2Client(addr, roots)
	if status, body, _ := servertest.GetH2(t, c, fmt.Sprintf("https://app.localhost:%d/", port)); status != 200 || body != "B internal" {
		t.Errorf("app.localhost (tls internal, wildcard): %d %q", status, body)
	}
	if _, err := servertest.H2Client(addr, x509.NewCertPool()).Get(base + "/"); err == nil {
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
		`pollproxy_h2_window_budget_bytes{poller="epoll,poll"} 2.68435456e+08`,
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
	if err := r.in.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
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

// TestReload moves a site to another origin under a request in flight,
// refuses a broken file, and honours the poller override.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	a, b := startOrigin(t, "A"), startOrigin(t, "B")
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
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
	log
	reverse_proxy %s {
		lb_policy first
		%s
	}
	tls %s %s
}
`, adminPort, filepath.Join(dir, "storage"), accessLog, port, upstream, extra, certFile, keyFile))
	}
	os.WriteFile(file, conf(a.addr, ""), 0o644)
	r := start(t, file, Options{Pollers: []string{"poll"}})
	c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	base := fmt.Sprintf("https://localhost:%d", port)
	if _, body, _ := servertest.GetH2(t, c, base+"/"); body != "A " {
		t.Fatalf("before reload: %q", body)
	}
	if m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminPort)); !strings.Contains(m, `pollproxy_poller_waits_total{loop="0",poller="poll"}`) {
		t.Errorf("Options.Pollers did not override the Caddyfile's auto:\n%s", m)
	}

	// A long request in flight on the client's connection...
	slow := getAsync(c, base+"/slow")
	<-a.started

	// ...survives a reload that moves the site to another origin.
	os.WriteFile(file, conf(b.addr, ""), 0o644)
	if err := r.in.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	r.logged("msg=reloaded", time.Second)
	if _, body, _ := servertest.GetH2(t, c, base+"/"); body != "B " {
		t.Errorf("after reload: %q, want B", body)
	}
	close(a.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("in-flight request across the reload: %q", got)
	}

	// A broken file is refused, with its line, and the old one kept.
	os.WriteFile(file, conf(b.addr, "lb_policy fastest"), 0o644)
	want := file + `:15: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, least_conn, first, random`
	if err := r.in.Reload(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("reload of a broken file: %v, want %s", err, want)
	}
	if out := r.logged("reload failed", time.Second); !strings.Contains(out, strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("reload error log lacks %s", want)
	}
	if _, body, _ := servertest.GetH2(t, c, base+"/"); body != "B " {
		t.Errorf("after a failed reload: %q, want B", body)
	}

	if err := r.in.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
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
	req, _ := rec["request"].(map[string]any)
	for k, v := range map[string]any{"msg": "handled request", "logger": "http.log.access", "status": 200.0,
		"upstream": a.addr, "poller": "poll", "loop": 0.0} {
		if rec[k] != v {
			t.Errorf("JSON %s = %v, want %v", k, rec[k], v)
		}
	}
	for k, v := range map[string]any{"method": "GET", "uri": "/", "proto": "HTTP/2.0", "host": fmt.Sprintf("localhost:%d", port)} {
		if req[k] != v {
			t.Errorf("JSON request.%s = %v, want %v", k, req[k], v)
		}
	}
}

// TestReloadListeners: a new port gets a listener, a removed one drains
// its request in flight and then stops accepting.
func TestReloadListeners(t *testing.T) {
	dir := t.TempDir()
	a := startOrigin(t, "A")
	certFile, keyFile, roots := filePair(t, dir)
	p1, p2 := servertest.FreePort(t), servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	conf := func(ports ...int) []byte {
		s := fmt.Sprintf("{\n\tadmin off\n\tloops 1\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tgrace_period 5s\n}\n", filepath.Join(dir, "storage"))
		for _, p := range ports {
			s += fmt.Sprintf("localhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n", p, a.addr, certFile, keyFile)
		}
		return []byte(s)
	}
	os.WriteFile(file, conf(p1), 0o644)
	r := start(t, file, Options{})
	c1 := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", p1), roots)
	slow := getAsync(c1, fmt.Sprintf("https://localhost:%d/slow", p1))
	<-a.started

	os.WriteFile(file, conf(p2), 0o644)
	if err := r.in.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if _, ok := r.in.Addr(fmt.Sprintf("127.0.0.1:%d", p1)); ok {
		t.Errorf("the removed listener is still listed")
	}
	c2 := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", p2), roots)
	if status, body, _ := servertest.GetH2(t, c2, fmt.Sprintf("https://localhost:%d/", p2)); status != 200 || body != "A " {
		t.Errorf("new port: %d %q", status, body)
	}
	close(a.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("request in flight on the removed port: %q", got)
	}
	// The removed server closes on a goroutine of its own once drained.
	servertest.Eventually(t, 5*time.Second, "the removed port refusing after draining", func() bool {
		_, _, err := servertest.Fetch(servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", p1), roots), fmt.Sprintf("https://localhost:%d/", p1))
		return err != nil
	})
}

func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	a := startOrigin(t, "A")
	certFile, keyFile, roots := filePair(t, dir)
	port := servertest.FreePort(t)
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
	r := start(t, file, Options{})
	c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	slow := getAsync(c, fmt.Sprintf("https://localhost:%d/slow", port))
	<-a.started
	done := make(chan error, 1)
	go func() { done <- r.in.Shutdown() }()
	r.logged("shutting down", 5*time.Second)
	select {
	case <-done:
		t.Fatal("shut down with a request in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(a.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("in-flight request across Shutdown: %q", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no return after the last request")
	}
}

// TestShutdownDeadline: connections still busy at grace_period are
// closed and named.
func TestShutdownDeadline(t *testing.T) {
	a := startOrigin(t, "A")
	tlsCfg, roots := selfSigned(t)
	cfg := builtConfig(a.addr)
	cfg.GracePeriod = 200 * time.Millisecond
	in := startBuilt(t, cfg, Options{TLS: tlsCfg})
	addr, _ := in.Addr(cfg.Listeners()[0].Addr)
	slow := getAsync(servertest.H2Client(addr.String(), roots), "https://localhost/slow")
	<-a.started
	err := in.Shutdown()
	if !errors.Is(err, ErrGraceEnded) || !strings.Contains(err.Error(), "still open after 200ms") {
		t.Errorf("shutdown past the deadline: %v", err)
	}
	if got := <-slow; strings.HasPrefix(got, "200") {
		t.Errorf("the request outlived the deadline: %q", got)
	}
	close(a.release)
}

// builtConfig is what the reverse-proxy command builds: one site for any
// host on a loopback port the system picks.
func builtConfig(upstream string) *config.Config {
	return &config.Config{
		Loops:       1,
		DefaultBind: "127.0.0.1",
		GracePeriod: config.DefaultGracePeriod,
		Sites: []*config.Site{{
			Addrs: []config.Address{{Port: 0}},
			Proxy: config.Proxy{Upstreams: []string{upstream}, Policy: proxy.RoundRobin},
		}},
	}
}

// TestBuiltConfig serves a configuration built in code with the caller's
// TLS configuration, for any host, without metrics or logs, and refuses
// to reload it.
func TestBuiltConfig(t *testing.T) {
	a := startOrigin(t, "A")
	tlsCfg, roots := selfSigned(t)
	cfg := builtConfig(a.addr)
	in := startBuilt(t, cfg, Options{TLS: tlsCfg})
	addr, ok := in.Addr(cfg.Listeners()[0].Addr)
	if !ok || addr.Port() == 0 {
		t.Fatalf("Addr: %v %v", addr, ok)
	}
	c := servertest.H2Client(addr.String(), roots)
	for _, host := range []string{"localhost", "other.example"} {
		req, _ := http.NewRequest("GET", "https://localhost/", nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Origin") != "A" {
			t.Errorf("Host %s: %d %v", host, resp.StatusCode, resp.Header)
		}
	}
	if b := in.Backends(); len(b) != 1 {
		t.Errorf("Backends %v, want one loop", b)
	}
	if err := in.Reload(); err == nil {
		t.Errorf("a built configuration reloaded")
	}
	if status, _, _ := servertest.GetH2(t, c, "https://localhost/"); status != 200 {
		t.Errorf("after the refused reload: %d", status)
	}
}

// TestStartError: a port in use fails the start with the site's line and
// leaves nothing running.
func TestStartError(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	certFile, keyFile, _ := filePair(t, dir)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf("{\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\treverse_proxy 127.0.0.1:1\n\ttls %s %s\n}\n",
		filepath.Join(dir, "storage"), port, certFile, keyFile)), 0o644)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Start(cfg, Options{})
	if err == nil {
		in.Close()
		t.Fatal("started on a port in use")
	}
	if want := fmt.Sprintf("%s:6: listen 127.0.0.1:%d", file, port); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}
