//go:build unix

package netpoll

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

func socketPair(t testing.TB) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	for _, fd := range fds {
		unix.SetNonblock(fd, true)
		unix.CloseOnExec(fd)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func openPoller(t testing.TB, name string) Poller {
	t.Helper()
	p, err := Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// waitFor waits until the poller reports want for tok, or fails.
func waitFor(t *testing.T, p Poller, tok Token, want Event) Event {
	t.Helper()
	evs := make([]Ready, 64)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, err := p.Wait(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
		for _, r := range evs[:n] {
			if r.Token == tok && r.Events&want == want {
				return r.Events
			}
		}
	}
	t.Fatalf("no %v event for token %d", want, tok)
	return 0
}

func TestOpenUnknownBackend(t *testing.T) {
	_, err := Open("select")
	if err == nil {
		t.Fatal("Open(select) succeeded")
	}
	for _, name := range Available() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list available backend %q", err, name)
		}
	}
	if err := ValidName("nope"); err == nil {
		t.Error("ValidName accepted an unknown backend")
	}
}

func TestBackendDisabledByEnvironment(t *testing.T) {
	names := Available()
	t.Setenv("POLLPROXY_NO_"+strings.ToUpper(names[0]), "1")
	if _, err := Open(names[0]); err == nil {
		t.Fatalf("Open(%s) succeeded although disabled", names[0])
	}
	for _, n := range Available() {
		if n == names[0] {
			t.Fatalf("%s still listed as available", n)
		}
	}
	if len(names) > 1 {
		p, err := Open(Auto)
		if err != nil {
			t.Fatalf("auto with %s disabled: %v", names[0], err)
		}
		defer p.Close()
		if p.Name() == names[0] {
			t.Fatalf("auto picked disabled backend %s", p.Name())
		}
	}
}

func TestReadableWritable(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		a, b := socketPair(t)
		if err := p.Add(a, Read|Write, 7); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, 7, EventWrite)
		unix.Write(b, []byte("x"))
		waitFor(t, p, 7, EventRead)
	})
}

func TestPeerCloseIsHangup(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		fds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		a, b := fds[0], fds[1]
		defer unix.Close(a)
		unix.SetNonblock(a, true)
		if err := p.Add(a, Read, 3); err != nil {
			t.Fatal(err)
		}
		unix.Close(b)
		ev := waitFor(t, p, 3, EventRead)
		if ev&EventHup == 0 {
			t.Errorf("peer close reported as %v, want hup", ev)
		}
		var buf [1]byte
		if n, err := unix.Read(a, buf[:]); n != 0 || err != nil {
			t.Errorf("read after hang-up = %d, %v; want EOF", n, err)
		}
	})
}

func TestModifyInterest(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		a, b := socketPair(t)
		if err := p.Add(a, Read, 1); err != nil {
			t.Fatal(err)
		}
		if err := p.Modify(a, Read|Write, 2); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, 2, EventWrite)
		unix.Write(b, []byte("y"))
		waitFor(t, p, 2, EventRead)
	})
}

func TestWakeFromAnotherGoroutine(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			n, err := p.Wait(make([]Ready, 8), 5*time.Second)
			if err != nil || n != 0 {
				t.Errorf("wait = %d, %v", n, err)
			}
			done <- time.Since(start)
		}()
		time.Sleep(20 * time.Millisecond)
		for i := 0; i < 10; i++ { // coalesced
			if err := p.Wake(); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case d := <-done:
			if d > 4*time.Second {
				t.Fatalf("wake took %v", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wake did not end the wait")
		}
		// The wake-up was consumed: the next wait times out.
		n, err := p.Wait(make([]Ready, 8), 10*time.Millisecond)
		if err != nil || n != 0 {
			t.Fatalf("second wait = %d, %v", n, err)
		}
		// Ten wakes with nobody waiting coalesce into one wake-up.
		counter := p.wakeup()
		before := counter.wakeups()
		for i := 0; i < 10; i++ {
			p.Wake()
		}
		start := time.Now()
		if n, err := p.Wait(make([]Ready, 8), 5*time.Second); err != nil || n != 0 || time.Since(start) > 4*time.Second {
			t.Fatalf("wait after pending wakes = %d, %v after %v", n, err, time.Since(start))
		}
		if w := counter.wakeups() - before; w != 1 {
			t.Errorf("ten wakes made %d wake-ups, want 1", w)
		}
	})
}

func TestManyDescriptors(t *testing.T) {
	const pairs = 5000
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		ends := make([][2]int, pairs)
		for i := range ends {
			a, b := socketPair(t)
			ends[i] = [2]int{a, b}
			if err := p.Add(a, Read, Token(i+1)); err != nil {
				t.Fatalf("add %d: %v", i, err)
			}
		}
		// Every 7th descriptor gets a byte; exactly those must be reported.
		want := map[Token]bool{}
		for i := 0; i < pairs; i += 7 {
			unix.Write(ends[i][1], []byte("z"))
			want[Token(i+1)] = true
		}
		got := map[Token]bool{}
		evs := make([]Ready, 1024)
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < len(want) && time.Now().Before(deadline) {
			n, err := p.Wait(evs, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range evs[:n] {
				if !want[r.Token] {
					t.Fatalf("event for idle descriptor %d", r.Token)
				}
				if r.Events&EventRead != 0 {
					got[r.Token] = true
					var buf [1]byte
					unix.Read(ends[r.Token-1][0], buf[:])
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d of %d readable descriptors reported", len(got), len(want))
		}
	})
}

// TestEdgeTriggeredReportsOnce: on an edge-triggered backend readiness
// left unconsumed is not reported again until something new arrives, which
// is why a handler there reads until EAGAIN (and why one registration for
// both directions costs nothing while a direction is not wanted).
func TestEdgeTriggeredReportsOnce(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		if p.Caps()&CapEdgeTriggered == 0 {
			t.Skipf("%s is level-triggered", name)
		}
		a, b := socketPair(t)
		if err := p.Add(a, Read, 4); err != nil {
			t.Fatal(err)
		}
		unix.Write(b, []byte("1"))
		waitFor(t, p, 4, EventRead)
		evs := make([]Ready, 8)
		n, err := p.Wait(evs, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range evs[:n] {
			if r.Token == 4 && r.Events&EventRead != 0 {
				t.Fatalf("unread byte reported again (%v) without a new edge", r.Events)
			}
		}
		unix.Write(b, []byte("2"))
		waitFor(t, p, 4, EventRead)
	})
}

func TestRemoveStopsEvents(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		p := openPoller(t, name)
		a, b := socketPair(t)
		p.Add(a, Read, 5)
		if err := p.Remove(a); err != nil {
			t.Fatal(err)
		}
		unix.Write(b, []byte("q"))
		n, err := p.Wait(make([]Ready, 8), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d events after Remove", n)
		}
	})
}
