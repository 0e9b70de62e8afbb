package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestAdminUnixSocket: admin unix//PATH|MODE, as Caddy writes it. A socket
// left behind by a process that is gone is replaced, the new one takes the
// mode, Host is not checked on it (as in Caddy: no name reaches a socket,
// its permissions say who may), Origin still is, and /poller switches.
func TestAdminUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	// A stale socket: its listener closed without unlinking it.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	certFile, keyFile, _ := filePair(t, dir)
	backends := netpoll.Available()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin unix/%s|0600
	storage %s
	default_bind 127.0.0.1
}

localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, backends[0], sock, filepath.Join(dir, "storage"), servertest.FreePort(t), startOrigin(t, "A").addr, certFile, keyFile)), 0o644)
	r := start(t, file, Options{})

	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("admin socket: %v %v, want a socket with mode 0600", fi.Mode(), err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	call := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://any.name.example"+path, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/healthz", "", nil); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz with any Host: %d %q", code, body)
	}
	if code, _ := call("GET", "/ab.json", "", map[string]string{"Origin": "http://evil.example"}); code != 403 {
		t.Errorf("a page's origin on the socket: %d, want 403", code)
	}
	to := backends[len(backends)-1]
	if code, body := call("POST", "/poller", fmt.Sprintf("%q", to), map[string]string{"Content-Type": "application/json"}); code != 200 {
		t.Errorf("POST /poller: %d %s", code, body)
	}
	if got := strings.Join(r.in.Backends(), " "); got != to {
		t.Errorf("backends %q after POST over the socket, want %s", got, to)
	}
}
