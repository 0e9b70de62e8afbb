package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// awaitCount waits until the output holds want n times.
func (p *proc) awaitCount(want string, n int, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for strings.Count(p.out.String(), want) < n {
		if time.Now().After(deadline) {
			p.t.Fatalf("%q not %d times in pollproxy's output after %v", want, n, d)
		}
		select {
		case <-p.done:
			p.t.Fatalf("pollproxy exited (%v) before printing %q %d times", p.err, want, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRunWatch: run --watch reloads when a file the Caddyfile imports
// changes; a bad file is logged with its file:line and the running
// configuration keeps serving; fixing it reloads again.
func TestRunWatch(t *testing.T) {
	dir := t.TempDir()
	a, b, c := servertest.Origin(t, servertest.Says("A")), servertest.Origin(t, servertest.Says("B")), servertest.Origin(t, servertest.Says("C"))
	certFile, keyFile, roots := servertest.CertFiles(t)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
	file, site := filepath.Join(dir, "Caddyfile"), filepath.Join(dir, "site.caddy")
	os.WriteFile(file, fmt.Appendf(nil, "{\n\tloops 1\n\tadmin 127.0.0.1:%d\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\timport site.caddy\n\ttls %s %s\n}\n",
		adminPort, filepath.Join(dir, "storage"), port, certFile, keyFile), 0o644)
	os.WriteFile(site, []byte("reverse_proxy "+a+"\n"), 0o644)
	p := startProc(t, "watching config file for changes", nil, "run", "--config", file, "--watch")
	client := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	base := fmt.Sprintf("https://localhost:%d/", port)
	if body := getBody(t, client, base); body != "A" {
		t.Fatalf("before any change: %q", body)
	}

	os.WriteFile(site, []byte("reverse_proxy "+b+"\n"), 0o644)
	p.awaitCount("msg=reloaded", 1, 20*time.Second)
	if body := getBody(t, client, base); body != "B" {
		t.Errorf("after the imported file changed: %q, want B", body)
	}

	os.WriteFile(site, []byte("# still B\nreverse_proxy "+b+" {\n\tlb_policy fastest\n}\n"), 0o644)
	p.wait(site+":3: reverse_proxy: lb_policy", 20*time.Second)
	if body := getBody(t, client, base); body != "B" {
		t.Errorf("after a bad change: %q, want the running B", body)
	}

	os.WriteFile(site, []byte("reverse_proxy "+c+"\n"), 0o644)
	p.awaitCount("msg=reloaded", 2, 20*time.Second)
	if body := getBody(t, client, base); body != "C" {
		t.Errorf("after the fix: %q, want C", body)
	}
	p.stop(syscall.SIGTERM)
}
