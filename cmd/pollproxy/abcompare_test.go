package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestABCompare runs two real instances on different pollers behind the
// same steady load, then `pollproxy ab --compare` on their admin
// listeners: it pairs their intervals, names each one's pollers and
// judges whole-process CPU per request, p99 and memory.
func TestABCompare(t *testing.T) {
	backends := netpoll.Available()
	a, b := backends[0], backends[len(backends)-1]
	origin := servertest.Origin(t, servertest.Says("ok"))
	certFile, keyFile, roots := servertest.CertFiles(t)
	// Thirty paired intervals or more are asked for: ten seconds at
	// 300 ms, or under -short five at 100 ms, the shortest the options
	// allow.
	load, interval, pairWait := 10*time.Second, 300*time.Millisecond, 40*time.Second
	if testing.Short() {
		load, interval = 5*time.Second, 100*time.Millisecond
	}
	type instance struct {
		port  int
		admin string
	}
	start := func(poller string, unixAdmin bool) instance {
		dir := t.TempDir()
		in := instance{servertest.FreePort(t), fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))}
		if unixAdmin {
			in.admin = "unix/" + filepath.Join(dir, "admin.sock")
		}
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tpoller %s\n\tadmin %s\n\tab_interval %v\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\treverse_proxy %s\n\ttls %s %s\n}\n",
			poller, in.admin, interval, filepath.Join(dir, "storage"), in.port, origin, certFile, keyFile)), 0o644)
		startProc(t, "pollproxy running", nil, "run", "--config", file)
		return in
	}
	// B's admin listener is a unix socket: the command reaches either.
	ia, ib := start(a, false), start(b, true)

	// The same load on both: a bounded number of requests per client,
	// stopped once the two have paired enough intervals (below), and in
	// any case after a bounded time.
	deadline := time.Now().Add(load + pairWait)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, in := range []instance{ia, ib} {
		c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", in.port), roots)
		url := fmt.Sprintf("https://localhost:%d/", in.port)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000000 && time.Now().Before(deadline); i++ {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := c.Get(url)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
				}
			}()
		}
	}
	adminA, adminB := ia.admin, ib.admin
	report := func(admin string) *ab.Report {
		r, err := fetchReport(admin, 2)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Thirty paired intervals take the load time on a quiet machine; on
	// a loaded one intervals end late and some do not pair (their ends
	// more than half an interval apart), so the load goes on until
	// there are enough, within pairWait more.
	time.Sleep(load)
	var c *ab.Canary
	servertest.Within(pairWait, func() bool {
		c = ab.Compare(report(adminA), report(adminB), adminA, adminB, 0)
		return c.Pairs >= 3*10
	})
	close(stop)
	wg.Wait()

	out, err := exec.Command(pollproxyBinary(t), "ab", "--compare", adminA, adminB).CombinedOutput()
	if err != nil {
		t.Fatalf("ab --compare: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("pollproxy ab --compare:\n%s", text)
	for _, want := range []string{adminA, adminB, a + " ×1", b + " ×1", "process_cpu_per_request", "p99", "rss", "load balance"} {
		if !strings.Contains(text, want) {
			t.Errorf("ab --compare output lacks %q:\n%s", want, text)
		}
	}
	// The same verdict from the reports themselves: enough intervals
	// paired for every figure to have its interval.
	c = ab.Compare(report(adminA), report(adminB), adminA, adminB, 0)
	if c.Pairs < 3*10 {
		t.Fatalf("%d paired intervals after %v at %v and %v more, want 30 or more:\n%s", c.Pairs, load, interval, pairWait, text)
	}
	for _, res := range c.Results {
		if res.Status == "too few intervals" || !(res.Base > 0) || !(res.Cand > 0) {
			t.Errorf("%s: %s (A %v, B %v)", res.Metric, res.Text, res.Base, res.Cand)
		}
	}
	if strings.Join(c.A.Backends, ",") != a || strings.Join(c.B.Backends, ",") != b {
		t.Errorf("backends %v and %v, want %s and %s", c.A.Backends, c.B.Backends, a, b)
	}
	if err := exec.Command(pollproxyBinary(t), "ab", "--compare", adminA).Run(); err == nil {
		t.Error("ab --compare with one address succeeded")
	}
}
