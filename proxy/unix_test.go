package proxy_test

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestUnixSocketUpstream: an upstream written unix//path is reached over
// that Unix socket, its connections kept alive and reused; a socket
// nobody listens on is a 502.
func TestUnixSocketUpstream(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		sock := filepath.Join(dir, "app.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ErrorLog: discardLog, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "unix "+r.Host)
		})}
		go srv.Serve(ln)
		defer srv.Close()

		name := "unix/" + sock // "unix//tmp/…/app.sock"
		path, ok := upstream.UnixSocketPath(name)
		if !ok || path != sock {
			t.Fatalf("UnixSocketPath(%q) = %q %v", name, path, ok)
		}
		up := &upstream.Upstream{Name: name, Path: path}
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}})
		cl := e.h2Client(nil)
		for range 5 {
			res, b := get(t, cl, "https://app.example/")
			if res.StatusCode != 200 || string(b) != "unix app.example" {
				t.Fatalf("%d %q", res.StatusCode, b)
			}
		}
		if s := up.Stats(); s.Requests != 5 || s.Connects != 1 {
			t.Errorf("upstream %+v: want 5 requests over 1 connection", s)
		}

		gone := &upstream.Upstream{Name: "unix/" + filepath.Join(dir, "none.sock"), Path: filepath.Join(dir, "none.sock")}
		e = startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{gone}})
		if res, b := get(t, e.h2Client(nil), "https://app.example/"); res.StatusCode != 502 {
			t.Fatalf("missing socket: %d %q, want 502", res.StatusCode, b)
		}
	})
}
