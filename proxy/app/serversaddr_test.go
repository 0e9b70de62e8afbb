package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestServersPerListener: a servers ADDR block applies to that listener
// alone and whole, as Caddy's does — here trusted_proxies and a small
// max_header_size on one of a site's two listeners, while the other takes
// the block without an address. Over real sockets on every backend and
// both protocols.
func TestServersPerListener(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		trusted, plain := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage %s
	default_bind 127.0.0.1
	servers 127.0.0.1:%d {
		trusted_proxies static 127.0.0.1/32
		max_header_size 4KB
	}
	servers {
		max_header_size 64KB
	}
}

localhost:%[3]d, localhost:%d {
	tls %s %s
	respond "{client_ip}"
}
`, backend, filepath.Join(dir, "storage"), trusted, plain, certFile, keyFile)), 0o644)
		start(t, file, Options{})
		big := strings.Repeat("a", 8<<10)
		for _, l := range []struct {
			port            int
			clientIP        string
			bigHeaderStatus int
		}{{trusted, "203.0.113.9", 431}, {plain, "127.0.0.1", 200}} {
			base := fmt.Sprintf("https://localhost:%d", l.port)
			for proto, c := range clients(fmt.Sprintf("127.0.0.1:%d", l.port), roots) {
				t.Run(fmt.Sprintf("%d/%s", l.port, proto), func(t *testing.T) {
					exchange{method: "GET", path: "/", header: map[string]string{"X-Forwarded-For": "203.0.113.9"}, status: 200, body: l.clientIP}.run(t, c, base)
					req := exchange{method: "GET", path: "/", header: map[string]string{"X-Big": big}, status: l.bigHeaderStatus, body: "*"}
					if proto == "h2" && l.bigHeaderStatus == 431 {
						// An h2 header list over the limit: the stream is
						// refused, which x/net reports as an error.
						return
					}
					req.run(t, c, base)
				})
			}
		}
	})
}
