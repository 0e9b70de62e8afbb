//lint:file-ignore SA1019 x/net's HTTP/2 Transport dials exactly one connection per client, which is what this test counts against the descriptor limit.

package hardening

import (
	"bufio"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	pptls "github.com/pollproxy/pollproxy/tls"
)

const fdLimit = 64

// cpuTicks is a process's user+system CPU time in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// Descriptor exhaustion: pollproxy runs as a subprocess with
// RLIMIT_NOFILE = 64 (prlimit), once per poller backend. Connections are
// opened until accept fails; then the listener must back off (the process
// stays nearly idle although the listener remains readable), an
// established connection keeps being served, and new clients get in once
// descriptors are freed.
func TestDescriptorExhaustion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the pollproxy binary")
	}
	prlimit := testenv.Tool(t, "prlimit", "util-linux")
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	bin := filepath.Join(t.TempDir(), "pollproxy")
	build := exec.Command("go", "build", "-o", bin, "github.com/pollproxy/pollproxy/cmd/pollproxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The backends in parallel: each run is a process of its own, measured
	// on its own descriptors and CPU time, and mostly waits.
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Parallel()
		exhaustDescriptors(t, prlimit, bin, backend)
	})
}

// exhaustDescriptors runs bin over backend under the descriptor limit and
// checks the back-off, the established connection and the recovery.
func exhaustDescriptors(t *testing.T, prlimit, bin, backend string) {
	dir := t.TempDir()
	cert, err := pptls.SelfSigned(nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := pptls.WritePEM(cert, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	tlsCfg := func(proto string) *stdtls.Config {
		return &stdtls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{proto}}
	}

	origin := goodOrigin(t)
	cmd := exec.Command(prlimit, "--nofile="+strconv.Itoa(fdLimit)+":"+strconv.Itoa(fdLimit), "--",
		bin, "reverse-proxy", "--from", "127.0.0.1:0", "--to", origin, "--loops", "1", "--poller", backend,
		"--cert", certFile, "--key", keyFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	var addr string
	urlRe := regexp.MustCompile(`https://([0-9.]+:[0-9]+)/`)
	for addr == "" && lines.Scan() {
		if m := urlRe.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
			// The start line ends with the loops' backends: "(poll)".
			if !strings.HasSuffix(lines.Text(), "("+backend+")") {
				t.Errorf("pollproxy was asked for %s: %q", backend, lines.Text())
			}
		}
	}
	if addr == "" {
		t.Fatal("pollproxy did not start")
	}
	logs := make(chan string, 1000)
	go func() {
		for lines.Scan() {
			select {
			case logs <- lines.Text():
			default:
			}
		}
	}()

	// An established h2 connection with a kept-alive backend connection
	// in the pool (its idle timeout is 4 s).
	tr := &http2.Transport{DialTLSContext: func(ctx context.Context, network, a string, _ *stdtls.Config) (net.Conn, error) {
		d := &stdtls.Dialer{Config: tlsCfg("h2")}
		return d.DialContext(ctx, "tcp", addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 3 * time.Second}
	fetch := func(c *http.Client) error {
		resp, err := c.Get("https://" + addr + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return &statusErr{resp.StatusCode}
		}
		return nil
	}
	if err := fetch(client); err != nil {
		t.Fatal(err)
	}

	// Fill the descriptor table with completed TLS connections until a
	// handshake no longer completes: accept is failing.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	exhausted := false
	for i := 0; i < 2*fdLimit && !exhausted; i++ {
		raw, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, raw)
		c := stdtls.Client(raw, tlsCfg("http/1.1"))
		c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if err := c.Handshake(); err != nil {
			exhausted = true
		}
		c.SetDeadline(time.Time{})
	}
	if !exhausted {
		t.Fatalf("%d connections accepted under a limit of %d", len(held), fdLimit)
	}
	t.Logf("exhausted after %d connections", len(held))
	// Queue a few more in the backlog, keeping the listener readable.
	for i := 0; i < 4; i++ {
		raw, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			held = append(held, raw)
		}
	}

	// No busy loop while exhausted.
	pid := cmd.Process.Pid
	c0 := cpuTicks(t, pid)
	time.Sleep(time.Second)
	c1 := cpuTicks(t, pid)
	t.Logf("CPU while exhausted: %d ticks in 1 s", c1-c0)
	if c1-c0 > 20 { // 20% of a core at 100 Hz
		t.Errorf("pollproxy used %d ticks of CPU in 1 s while descriptors were exhausted", c1-c0)
	}

	// The established connection is still served (over the pooled
	// backend connection).
	if err := fetch(client); err != nil {
		t.Errorf("established connection while exhausted: %v", err)
	}

	// Free descriptors: service resumes for new clients.
	for _, c := range held[:len(held)/2] {
		c.Close()
	}
	held = held[len(held)/2:]
	fresh := func() error {
		tr2 := &http2.Transport{DialTLSContext: tr.DialTLSContext}
		defer tr2.CloseIdleConnections()
		return fetch(&http.Client{Transport: tr2, Timeout: 2 * time.Second})
	}
	var lastErr error
	if !eventually(5*time.Second, func() bool { lastErr = fresh(); return lastErr == nil }) {
		t.Fatalf("no service after descriptors were freed: %v", lastErr)
	}
	paused := 0
	for drained := false; !drained; {
		select {
		case l := <-logs:
			if strings.Contains(l, "accept paused") {
				paused++
			}
		default:
			drained = true
		}
	}
	t.Logf("\"accept paused\" logged %d times", paused)
	if paused == 0 {
		t.Errorf("no accept back-off was logged")
	}
}

type statusErr struct{ code int }

func (e *statusErr) Error() string { return "status " + strconv.Itoa(e.code) }
