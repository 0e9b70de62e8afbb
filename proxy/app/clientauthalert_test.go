package app

import (
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestClientAuthRefusalAlert: under TLS 1.3 a client that shows no
// certificate to a site that requires one hears why, every time. The
// client thinks the handshake done once it sent its Finished and sends
// its request right behind it; the server looks at the (missing)
// certificate only then, and the request may reach the loop before the
// failed handshake's own task does. That path used to close the
// connection without the alert, a few times in a hundred, and a close
// with the request unread could reset the connection under the alert.
func TestClientAuthRefusalAlert(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
}

mtls.localhost:%d {
	tls internal {
		client_auth {
			mode require
		}
	}
	respond "protected"
}
`, backend, filepath.Join(dir, "storage"), port)), 0o644)
		start(t, file, Options{})
		cfg := &stdtls.Config{ServerName: "mtls.localhost", InsecureSkipVerify: true,
			MinVersion: stdtls.VersionTLS13, NextProtos: []string{"http/1.1"}}
		lost := map[string]int{}
		for range 150 {
			c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
				fmt.Sprintf("127.0.0.1:%d", port), cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: mtls.localhost\r\n\r\n")
			_, err = io.ReadAll(c)
			c.Close()
			if err == nil || !strings.Contains(err.Error(), "certificate required") {
				lost[fmt.Sprint(err)]++
			}
		}
		if len(lost) > 0 {
			t.Fatalf("of 150 refused clients, these did not hear the certificate_required alert: %v", lost)
		}
	})
}
