package app

import (
	"fmt"
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

// TestShutdownDelayHealthCheck: Caddy's shutdown_delay example (the
// global options page). Before a stop, /health-check answers 200 and
// {http.shutting_down} reads false; during the delay it answers 503
// "Bye-bye in" the time left, while the other routes, and a site that
// only proxies (its header_up reads the placeholder), answer as before.
func TestShutdownDelayHealthCheck(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		a := startOrigin(t, "A")
		certFile, keyFile, roots := filePair(t, dir)
		port, proxyPort := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		const delay = 3 * time.Second
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	admin off
	loops 2
	http_port off
	storage %s
	default_bind 127.0.0.1
	shutdown_delay %v
}

localhost:%d {
	tls %s %s
	handle /health-check {
		@goingDown vars {http.shutting_down} true
		respond @goingDown "Bye-bye in {http.time_until_shutdown}" 503
		respond 200
	}
	handle {
		respond "Hello, world!"
	}
}

localhost:%d {
	tls %s %s
	reverse_proxy %s {
		header_up X-Site {http.shutting_down}
	}
}
`, backend, filepath.Join(dir, "storage"), delay, port, certFile, keyFile, proxyPort, certFile, keyFile, a.addr)), 0o644)
		r := start(t, file, Options{})
		c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
		pc := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", proxyPort), roots)
		health := fmt.Sprintf("https://localhost:%d/health-check", port)
		hello := fmt.Sprintf("https://localhost:%d/", port)
		proxied := fmt.Sprintf("https://localhost:%d/", proxyPort)

		for _, x := range []struct {
			c         *http.Client
			url, want string
		}{{c, health, "200 "}, {c, hello, "200 Hello, world!"}, {pc, proxied, "200 A false"}} {
			if got := <-getAsync(x.c, x.url); got != x.want {
				t.Errorf("before the stop: %s: %q, want %q", x.url, got, x.want)
			}
		}

		done := make(chan error, 1)
		go func() { done <- r.in.Shutdown() }()
		r.logged("shutdown delayed", 5*time.Second)

		got := <-getAsync(c, health)
		left, ok := strings.CutPrefix(got, "503 Bye-bye in ")
		if d, err := time.ParseDuration(left); !ok || err != nil || d <= 0 || d > delay {
			t.Errorf("during the delay: /health-check: %q, want 503 \"Bye-bye in\" a duration in (0, %v]", got, delay)
		}
		if got := <-getAsync(c, hello); got != "200 Hello, world!" {
			t.Errorf("during the delay: /: %q, want 200 Hello, world!", got)
		}
		if got := <-getAsync(pc, proxied); got != "200 A true" {
			t.Errorf("during the delay: proxied: %q, want %q", got, "200 A true")
		}

		select {
		case err := <-done:
			if err != nil {
				t.Errorf("shutdown: %v", err)
			}
		case <-time.After(delay + 10*time.Second):
			t.Fatal("no return after the delay")
		}
	})
}
