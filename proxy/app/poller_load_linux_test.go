package app

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// Sizes of the long download: it spans every switch of the test.
const (
	bigChunks = 48
	bigChunk  = 64 << 10
	bigPause  = 25 * time.Millisecond
)

// startLoadOrigin answers "ok" and serves /big slowly, a chunk at a time.
func startLoadOrigin(t *testing.T) string {
	t.Helper()
	chunk := []byte(strings.Repeat("x", bigChunk))
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(bigChunks*bigChunk))
		for i := 0; i < bigChunks; i++ {
			w.Write(chunk)
			w.(http.Flusher).Flush()
			// Real time: the origin's own pace keeps the download
			// streaming across the switches.
			time.Sleep(bigPause)
		}
	}))
}

// TestPollerSwitchUnderLoad switches the loops ten times between epoll
// and each other backend (poll, io_uring), alone and in splits, while h2
// clients run many streams on one connection each, h1 keep-alive clients
// loop, a long download streams and an idle connection waits: no request
// fails and no client dials a second connection.
func TestPollerSwitchUnderLoad(t *testing.T) {
	names := netpoll.Available()
	if len(names) < 2 || names[0] != "epoll" {
		t.Skipf("backends %v: this test switches epoll and the others", names)
	}
	for _, other := range names[1:] {
		t.Run("epoll-"+other, func(t *testing.T) { switchUnderLoad(t, other) })
	}
}

func switchUnderLoad(t *testing.T, other string) {
	s := startSwitchable(t, startLoadOrigin(t), 2)
	var h2Dials, h1Dials, bigDials, idleDials atomic.Int64
	idle := countingH2(s.addr, s.roots, &idleDials)
	if code, body, _ := servertest.Get(t, idle, s.base+"/"); code != 200 || body != "ok" {
		t.Fatalf("idle connection's first request: %d %q", code, body)
	}

	var stop atomic.Bool
	var ok, failed atomic.Int64
	var errMu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	run := func(c *http.Client, workers int) {
		for i := 0; i < workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					code, body, err := servertest.Fetch(c, s.base+"/")
					if err == nil && (code != 200 || body != "ok") {
						err = fmt.Errorf("%d %q", code, body)
					}
					if err != nil {
						failed.Add(1)
						errMu.Lock()
						if len(errs) < 5 {
							errs = append(errs, err.Error())
						}
						errMu.Unlock()
						continue
					}
					ok.Add(1)
				}
			}()
		}
	}
	const h2Conns, h2Streams, h1Conns = 2, 16, 4
	for i := 0; i < h2Conns; i++ {
		run(countingH2(s.addr, s.roots, &h2Dials), h2Streams)
	}
	run(countingH1(s.addr, s.roots, h1Conns, &h1Dials), h1Conns)

	big := make(chan string, 1)
	go func() {
		resp, err := countingH2(s.addr, s.roots, &bigDials).Get(s.base + "/big")
		if err != nil {
			big <- err.Error()
			return
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		big <- fmt.Sprintf("%d %v", n, err)
	}()

	plan := []string{"B", "A", "A B", "B", "A", "B A", "A", "B", "A B", "A"}
	names := strings.NewReplacer("A", s.from, "B", other)
	for i := range plan {
		plan[i] = names.Replace(plan[i])
	}
	var moves int
	for _, p := range plan {
		// Traffic flows between the switches: requests complete on the
		// loops as they run now before the next switch.
		moreRequests(t, &ok, 20)
		evs, err := s.in.SwitchPollers(strings.Fields(p))
		if err != nil {
			t.Fatalf("switch to %q: %v", p, err)
		}
		for _, ev := range evs {
			if ev.Moved() {
				moves++
			}
		}
		want := strings.Fields(p)
		for i, b := range s.in.Backends() {
			if b != want[i%len(want)] {
				t.Fatalf("after switching to %q loop %d runs %s", p, i, b)
			}
		}
	}
	if got, want := <-big, fmt.Sprintf("%d <nil>", bigChunks*bigChunk); got != want {
		t.Errorf("long download across the switches: %s, want %s", got, want)
	}
	// Load after the last switch, before the clients stop.
	moreRequests(t, &ok, 50)
	stop.Store(true)
	wg.Wait()
	if code, body, _ := servertest.Get(t, idle, s.base+"/"); code != 200 || body != "ok" {
		t.Errorf("idle connection after the switches: %d %q", code, body)
	}

	t.Logf("%d loop moves, %d requests", moves, ok.Load())
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed across the switches: %v", n, n+ok.Load(), errs)
	}
	if ok.Load() < 100 {
		t.Errorf("only %d requests ran: the load did not overlap the switches", ok.Load())
	}
	for _, d := range []struct {
		name       string
		dials, max int64
	}{{"h2", h2Dials.Load(), h2Conns}, {"h1", h1Dials.Load(), h1Conns}, {"download", bigDials.Load(), 1}, {"idle", idleDials.Load(), 1}} {
		if d.dials > d.max {
			t.Errorf("%s clients dialed %d connections for %d: connections were lost", d.name, d.dials, d.max)
		}
	}
	if moves < len(plan) {
		t.Errorf("%d loop moves for %d switches", moves, len(plan))
	}
}

// moreRequests waits until n more requests than now have completed.
func moreRequests(t *testing.T, ok *atomic.Int64, n int64) {
	t.Helper()
	from := ok.Load()
	servertest.Eventually(t, 20*time.Second, fmt.Sprintf("%d more requests", n), func() bool { return ok.Load() >= from+n })
}
