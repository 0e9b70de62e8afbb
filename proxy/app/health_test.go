package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestActiveHealthWired: a Caddyfile's active health checks run: an
// upstream whose health body does not match leaves the rotation.
func TestActiveHealthWired(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		a, b := startOrigin(t, "A"), startOrigin(t, "B")
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 2
	admin off
}

localhost:%d {
	reverse_proxy %s %s {
		health_uri /health
		health_interval 20ms
		health_body "^A "
	}
	tls %s %s
}
`, backend, port, a.addr, b.addr, certFile, keyFile)), 0o644)
		start(t, file, Options{})
		c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
		url := fmt.Sprintf("https://localhost:%d/", port)
		// Active health checks run on goroutines' timers, off the loops.
		servertest.Eventually(t, 5*time.Second, "only A serving after B's health checks failed", func() bool {
			allA := true
			for range 6 {
				if _, body, _ := servertest.GetH2(t, c, url); body != "A " {
					allA = false
				}
			}
			return allA
		})
	})
}
