package main

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// The lifecycle (reload, drain, shutdown, certificates, metrics, access
// log) is tested in proxy/app; these tests check that the commands wire
// flags and signals to it and print what they promise.

// proc is a running pollproxy command.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *servertest.SyncBuffer
	done chan struct{}
	err  error
}

// startProc runs pollproxy with args and env added to the test's
// environment without POLLPROXY_POLLER (the flags and files decide), and
// waits for its output to contain ready.
func startProc(t *testing.T, ready string, env []string, args ...string) *proc {
	t.Helper()
	return startBinary(t, pollproxyBinary(t), ready, env, args...)
}

// startBinary is startProc for the build of the command at bin.
func startBinary(t *testing.T, bin, ready string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POLLPROXY_POLLER=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &proc{t: t, cmd: cmd, out: &servertest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("pollproxy output:\n%s", p.out)
		}
	})
	p.wait(ready, 20*time.Second)
	return p
}

// wait waits for output containing s and returns the output so far.
func (p *proc) wait(s string, d time.Duration) string {
	p.t.Helper()
	out, ok := p.out.Await(s, d, p.done)
	if !ok {
		select {
		case <-p.done:
			p.t.Fatalf("pollproxy exited (%v) before printing %q", p.err, s)
		default:
			p.t.Fatalf("no %q in pollproxy's output after %v", s, d)
		}
	}
	return out
}

// stop sends s and waits for a zero exit.
func (p *proc) stop(s syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Fatalf("no exit after %v", s)
	}
	if p.err != nil {
		p.t.Errorf("exit after %v: %v", s, p.err)
	}
}

// getBody GETs url over HTTP/2 and wants a 200.
func getBody(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	status, body, _ := servertest.GetH2(t, c, url)
	if status != 200 {
		t.Errorf("GET %s: %d", url, status)
	}
	return body
}

// TestRunSignals: --poller overrides the file, SIGHUP reloads it, SIGTERM
// drains and exits 0, --stats prints the loops' counters.
func TestRunSignals(t *testing.T) {
	dir := t.TempDir()
	a, b := servertest.Origin(t, servertest.Says("A")), servertest.Origin(t, servertest.Says("B"))
	certFile, keyFile, roots := servertest.CertFiles(t)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	conf := func(upstream string) []byte {
		return []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin 127.0.0.1:%d\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n",
			adminPort, filepath.Join(dir, "storage"), port, upstream, certFile, keyFile))
	}
	os.WriteFile(file, conf(a), 0o644)
	p := startProc(t, "pollproxy running", nil, "run", "--config", file, "--poller", "poll", "--stats")
	c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	base := fmt.Sprintf("https://localhost:%d/", port)
	if body := getBody(t, c, base); body != "A" {
		t.Fatalf("before reload: %q", body)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `pollproxy_poller_waits_total{loop="0",poller="poll"}`) {
		t.Errorf("--poller poll did not override the Caddyfile's auto")
	}

	os.WriteFile(file, conf(b), 0o644)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.wait("msg=reloaded", 10*time.Second)
	if body := getBody(t, c, base); body != "B" {
		t.Errorf("after SIGHUP: %q, want B", body)
	}
	p.stop(syscall.SIGTERM)
	if out := p.out.String(); !strings.Contains(out, "shutting down") || !regexp.MustCompile(`loop 0 poll: waits=\d+`).MatchString(out) {
		t.Errorf("no shutdown log or --stats line")
	}
}

// TestRunGraceEnded: SIGTERM with a request still in flight when
// grace_period ends closes it, logs that it did and exits 0: the stop the
// operator configured, as Caddy and nginx do.
func TestRunGraceEnded(t *testing.T) {
	dir := t.TempDir()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	certFile, keyFile, roots := servertest.CertFiles(t)
	port := servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tgrace_period 200ms\n}\nlocalhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n",
		filepath.Join(dir, "storage"), port, origin, certFile, keyFile)), 0o644)
	p := startProc(t, "pollproxy running", nil, "run", "--config", file)
	c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
	failed := make(chan error, 1)
	go func() {
		resp, err := c.Get(fmt.Sprintf("https://localhost:%d/hold", port))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		failed <- err
	}()
	<-arrived
	p.stop(syscall.SIGTERM) // wants exit status 0
	if out := p.out.String(); !strings.Contains(out, "grace period ended") || !strings.Contains(out, "level=WARN") {
		t.Errorf("no warning that grace_period ended with a connection open:\n%s", out)
	}
	if err := <-failed; err == nil {
		t.Error("the request held past grace_period completed")
	}
}

func TestRunStartupError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte("localhost:1 {\n\treverse_proxy 127.0.0.1:1 {\n\t\tlb_retries lots\n\t}\n}\n"), 0o644)
	out, err := exec.Command(pollproxyBinary(t), "run", "--config", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), file+`:3: reverse_proxy: lb_retries: "lots": want a whole number >= 0`) {
		t.Errorf("run with a bad file: %v\n%s", err, out)
	}
}

// TestDemo follows the demo's printed curl line: its URL verifies with
// its --cacert, and SIGINT stops it.
func TestDemo(t *testing.T) {
	port := servertest.FreePort(t)
	p := startProc(t, "Ctrl-C stops it.", []string{"POLLPROXY_DATA=" + t.TempDir()},
		"demo", "--from", fmt.Sprintf("127.0.0.1:%d", port), "--loops", "1")
	m := regexp.MustCompile(`(?m)^  curl --cacert (\S+) (https://\S+/)$`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no curl line in the demo's output")
	}
	pemBytes, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("--cacert file holds no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &stdtls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	if body := getBody(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, m[2]); !strings.Contains(body, "Hello from the sample app behind pollproxy.") {
		t.Errorf("demo answered %q", body)
	}
	p.stop(syscall.SIGINT)
	if out := p.out.String(); !strings.Contains(out, "draining connections") {
		t.Errorf("no drain line")
	}
}
