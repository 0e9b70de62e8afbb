package app

import (
	stdtls "crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestConnPolicyPerPort: one host on two ports is two sites, and each
// port's handshakes follow its own site's tls options, as each of Caddy's
// servers (one per port) has its own connection policies. The host's
// client_auth on one port must neither let a client without a
// certificate through on that port because the other port's site came
// first, nor ask for one on the other port.
func TestConnPolicyPerPort(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		storage := filepath.Join(dir, "storage")
		open1, locked, open2 := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
}

a.localhost:%[3]d {
	tls internal {
		protocols tls1.2 tls1.3
	}
	respond "open"
}

a.localhost:%[4]d {
	tls internal {
		client_auth {
			mode require
		}
	}
	respond "protected"
}

a.localhost:%[5]d {
	tls internal
	respond "open too"
}
`, backend, storage, open1, locked, open2)), 0o644)
		start(t, file, Options{})
		roots := localRoots(t, storage)
		get := func(port int) (string, error) {
			c := h1TLS("a.localhost", roots)
			c.MinVersion = stdtls.VersionTLS13
			_, body, err := tlsGet(fmt.Sprintf("127.0.0.1:%d", port), c)
			return body, err
		}
		if body, err := get(open1); body != "open" {
			t.Errorf("port with protocols only, no client certificate: %q, %v; want open", body, err)
		}
		if body, err := get(locked); err == nil || body != "" {
			t.Errorf("port with client_auth, no client certificate: %q, %v; want refused", body, err)
		}
		if body, err := get(open2); body != "open too" {
			t.Errorf("port with no tls options, no client certificate: %q, %v; want open too", body, err)
		}
	})
}
