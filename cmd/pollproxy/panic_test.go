package main

import (
	"context"
	stdtls "crypto/tls"
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
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

var (
	hookOnce sync.Once
	hookPath string
	hookErr  error
	hookOut  []byte
)

// panicHookBinary builds the command with the pollproxy_panichook tag
// (proxy/server/serve_panichook.go): a request carrying
// X-Pollproxy-Panic panics while it is routed.
func panicHookBinary(t *testing.T) string {
	t.Helper()
	hookOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pollproxy-panichook-")
		if err != nil {
			hookErr = err
			return
		}
		hookPath = filepath.Join(dir, "pollproxy")
		args := []string{"build", "-tags", "pollproxy_panichook", "-o", hookPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		hookOut, hookErr = exec.Command("go", append(args, ".")...).CombinedOutput()
	})
	if hookErr != nil {
		t.Fatalf("go build -tags pollproxy_panichook: %v\n%s", hookErr, hookOut)
	}
	return hookPath
}

// TestRunSurvivesPanics: `pollproxy run` with a site whose routing
// panics keeps running and serving, on every backend. Each panic closes
// only its own client connection, is logged once at error level with
// its stack and request line, and is counted in pollproxy_panics_total
// on the admin listener; the process exits 0 on SIGTERM afterwards.
func TestRunSurvivesPanics(t *testing.T) {
	bin := panicHookBinary(t)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		origin := servertest.Origin(t, servertest.Says("A"))
		certFile, keyFile, roots := servertest.CertFiles(t)
		port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin 127.0.0.1:%d\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n",
			adminPort, filepath.Join(dir, "storage"), port, origin, certFile, keyFile)), 0o644)
		p := startBinary(t, bin, "pollproxy running", nil, "run", "--config", file, "--poller", backend)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		base := fmt.Sprintf("https://localhost:%d/", port)
		steady := servertest.H2Client(addr, roots)
		defer steady.CloseIdleConnections()
		if body := getBody(t, steady, base); body != "A" {
			t.Fatalf("before the panics: %q", body)
		}

		const panics = 6
		for i := 0; i < panics; i++ {
			// Every other one over HTTP/1.1; each on a connection of its
			// own, which is the one that goes.
			var cl *http.Client
			if i%2 == 0 {
				cl = servertest.H2Client(addr, roots)
			} else {
				cl = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
					TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}},
					DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
						var d net.Dialer
						return d.DialContext(ctx, network, addr)
					},
				}}
			}
			req, _ := http.NewRequest("GET", fmt.Sprintf("%spanic/%d", base, i), nil)
			req.Header.Set("X-Pollproxy-Panic", "routing")
			resp, err := cl.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			cl.CloseIdleConnections()
			if err == nil {
				t.Fatalf("panic %d: answered %d, want the connection gone", i, resp.StatusCode)
			}
			// The connection that was already open goes on.
			if body := getBody(t, steady, base); body != "A" {
				t.Fatalf("after panic %d: %q", i, body)
			}
		}
		p.wait(fmt.Sprintf("request=\"GET /panic/%d HTTP/1.1\"", panics-1), 10*time.Second)

		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", adminPort))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("pollproxy_panics_total{loop=\"0\",poller=%q} %d", backend, panics); !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
		p.stop(syscall.SIGTERM)
		out := p.out.String()
		logged := regexp.MustCompile(`level=ERROR msg="panic contained: connection abandoned" loop=0 poller=\w+ stage=(event|task) panic="pollproxy_panichook: routing" site=localhost:\d+ request="GET /panic/\d HTTP/(1\.1|2\.0)" stack=`).FindAllString(out, -1)
		if len(logged) != panics {
			t.Errorf("%d panics logged at error level with their request, want %d:\n%s", len(logged), panics, out)
		}
		if n := strings.Count(out, "serve_panichook.go"); n != panics {
			t.Errorf("%d stacks reach the panic, want %d", n, panics)
		}
	})
}
