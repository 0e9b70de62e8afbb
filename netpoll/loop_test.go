//go:build unix

package netpoll

import (
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

type handlerFunc func(Event)

func (f handlerFunc) HandleEvent(ev Event) { f(ev) }

func newTestLoop(t *testing.T, backend string) *Loop {
	t.Helper()
	// A test that turns the loop with RunOnce waits from its own
	// goroutine: io_uring binds a loop's ring to the thread that waits.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	l, err := NewLoop(0, backend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// runLoop runs l on its own goroutine until the test ends.
func runLoop(t *testing.T, l *Loop) {
	t.Helper()
	go l.Run()
	t.Cleanup(func() {
		l.Stop()
		<-l.Done()
	})
}

// onLoop runs f on the loop and waits for it.
func onLoop(l *Loop, f func()) {
	done := make(chan struct{})
	l.Post(func() { f(); close(done) })
	<-done
}

func TestTimersFireInOrder(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
		var mu sync.Mutex
		var order []int
		done := make(chan struct{})
		delays := []int{30, 10, 20, 10, 0}
		onLoop(l, func() {
			for i, ms := range delays {
				l.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
					mu.Lock()
					order = append(order, i)
					if len(order) == len(delays) {
						close(done)
					}
					mu.Unlock()
				})
			}
			// A cancelled timer never fires; Stop reports it was pending.
			cancelled := l.AfterFunc(time.Millisecond, func() { t.Error("stopped timer fired") })
			if !cancelled.Stop() || cancelled.Stop() {
				t.Error("Stop did not report pending exactly once")
			}
		})
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatal("timers did not fire")
		}
		mu.Lock()
		defer mu.Unlock()
		want := []int{4, 1, 3, 2, 0}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("timers fired in order %v, want %v first", order, want)
			}
		}
	})
}

func TestTimerReset(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
		fired := make(chan string, 2)
		onLoop(l, func() {
			late := l.AfterFunc(time.Hour, func() { fired <- "reset" })
			l.AfterFunc(40*time.Millisecond, func() { fired <- "plain" })
			late.Reset(5 * time.Millisecond)
		})
		if a, b := <-fired, <-fired; a != "reset" || b != "plain" {
			t.Fatalf("fired %s then %s", a, b)
		}
	})
}

func TestPostFromManyGoroutines(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
		var ran atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 500; i++ {
					l.Post(func() { ran.Add(1) })
				}
			}()
		}
		wg.Wait()
		onLoop(l, func() {})
		if n := ran.Load(); n != 4000 {
			t.Fatalf("%d tasks ran, want 4000", n)
		}
		if s := l.Stats(); s.Wakeups == 0 || s.Wakeups > 4001 {
			t.Fatalf("wakeups = %d", s.Wakeups)
		}
	})
}

// Two descriptors are readable in one batch; the handler of whichever comes
// first closes the other and registers a fresh descriptor that reuses its
// number. The stale event must reach neither the closed handler nor the
// newcomer.
func TestCloseWhileEventPendingAndNumberReused(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		a1, a2 := socketPair(t)
		bfds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		b1, b2 := bfds[0], bfds[1]
		defer unix.Close(b2)
		unix.SetNonblock(b1, true)

		var calls []string
		var da, db *Desc
		closeOther := func(self string, d *Desc) {
			var buf [8]byte
			d.Read(buf[:]) // level-triggered backends report unread bytes again
			calls = append(calls, self)
			if len(calls) > 1 {
				return
			}
			victim := db
			if self == "b" {
				victim = da
			}
			num := victim.FD()
			victim.Close()
			// The lowest free number is the one just closed.
			nfds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(nfds[1]) })
			if nfds[0] != num {
				t.Logf("descriptor %d not reused (got %d); stale-token check still applies", num, nfds[0])
			}
			unix.Write(nfds[1], []byte("n")) // readable, but under a new token
			var nd *Desc
			if nd, err = l.Register(nfds[0], handlerFunc(func(Event) {
				var buf [8]byte
				nd.Read(buf[:])
				calls = append(calls, "new")
			}), Read); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if da, err = l.Register(a1, handlerFunc(func(Event) { closeOther("a", da) }), Read); err != nil {
			t.Fatal(err)
		}
		if db, err = l.Register(b1, handlerFunc(func(Event) { closeOther("b", db) }), Read); err != nil {
			t.Fatal(err)
		}
		unix.Write(a2, []byte("1"))
		unix.Write(b2, []byte("2"))
		time.Sleep(10 * time.Millisecond)
		if err := l.RunOnce(time.Second); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 {
			t.Fatalf("handlers called %v in the batch: the closed descriptor's event was delivered", calls)
		}
		// The newcomer gets its own event in a later iteration.
		for i := 0; i < 10 && len(calls) < 2; i++ {
			l.RunOnce(100 * time.Millisecond)
		}
		if len(calls) != 2 || calls[1] != "new" {
			t.Fatalf("calls = %v, want the new descriptor's own event", calls)
		}
	})
}

func TestInterestAndKick(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		a, b := socketPair(t)
		var got []Event
		d, err := l.Register(a, handlerFunc(func(ev Event) { got = append(got, ev) }), Read)
		if err != nil {
			t.Fatal(err)
		}
		// Writable but write not wanted: no event.
		l.RunOnce(20 * time.Millisecond)
		if len(got) != 0 {
			t.Fatalf("unwanted events %v", got)
		}
		// Paused reading: data arrives, nothing is delivered.
		d.SetInterest(0)
		unix.Write(b, []byte("data"))
		l.RunOnce(20 * time.Millisecond)
		if len(got) != 0 {
			t.Fatalf("events while paused: %v", got)
		}
		// Resume and kick: the handler hears about the buffered bytes.
		d.SetInterest(Read)
		d.Kick(EventRead)
		l.RunOnce(20 * time.Millisecond)
		if len(got) == 0 || got[0]&EventRead == 0 {
			t.Fatalf("no read after resume: %v", got)
		}
		before := l.Stats()
		if l.Caps()&CapEdgeTriggered != 0 && before.Mods != 0 {
			t.Fatalf("edge-triggered backend made %d modify calls", before.Mods)
		}
	})
}

func TestListenerAcceptsAndConnect(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		fd, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), true, 128)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		addr, _ := LocalAddr(fd)
		accepted := make(chan netip.AddrPort, 4)
		if _, err := l.Listen(fd, func(nfd int, remote netip.AddrPort) {
			unix.Close(nfd)
			accepted <- remote
		}); err != nil {
			t.Fatal(err)
		}
		// A non-blocking connect from the loop itself.
		cfd, err := Connect(addr)
		if err != nil {
			t.Fatal(err)
		}
		connected := false
		if _, err := l.Register(cfd, handlerFunc(func(ev Event) {
			if ev&EventWrite != 0 && !connected {
				connected = SocketError(cfd) == nil
			}
		}), Write); err != nil {
			t.Fatal(err)
		}
		// And one from the standard library.
		go func() {
			c, err := net.Dial("tcp", addr.String())
			if err == nil {
				time.Sleep(50 * time.Millisecond)
				c.Close()
			}
		}()
		got := 0
		deadline := time.Now().Add(3 * time.Second)
		for (got < 2 || !connected) && time.Now().Before(deadline) {
			l.RunOnce(20 * time.Millisecond)
			for len(accepted) > 0 {
				if r := <-accepted; !r.Addr().IsLoopback() {
					t.Errorf("remote %v is not loopback", r)
				}
				got++
			}
		}
		if got != 2 || !connected {
			t.Fatalf("accepted %d, connected %v", got, connected)
		}
	})
}

func TestConnectRefused(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		// A port nobody listens on: bind, learn the port, close.
		fd, _ := Listen(netip.MustParseAddrPort("127.0.0.1:0"), false, 1)
		addr, _ := LocalAddr(fd)
		unix.Close(fd)
		cfd, err := Connect(addr)
		if err != nil {
			return // refused synchronously: also a correct report
		}
		var result error
		done := false
		d, _ := l.Register(cfd, handlerFunc(func(ev Event) {
			if !done {
				result, done = SocketError(cfd), true
			}
		}), Write)
		for i := 0; i < 50 && !done; i++ {
			l.RunOnce(20 * time.Millisecond)
		}
		d.Close()
		if result != unix.ECONNREFUSED {
			t.Fatalf("SocketError = %v, want ECONNREFUSED", result)
		}
	})
}

func TestGroupMixedBackends(t *testing.T) {
	names := Available()
	g, err := NewGroup(2*len(names), names)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	var ran atomic.Int64
	for _, l := range g.Loops() {
		onLoop(l, func() { ran.Add(1) })
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	g.Close()
	for i, s := range g.Stats() {
		if s.Backend != names[i%len(names)] {
			t.Errorf("loop %d runs %s, want %s", i, s.Backend, names[i%len(names)])
		}
	}
	if ran.Load() != int64(len(g.Loops())) {
		t.Fatalf("%d loops ran a task", ran.Load())
	}
}

// TestLoopCloseEndsClosingSockets: a socket its owner closed while bytes
// it wrote were still queued (io_uring closes once they went) is closed
// by the loop's Close when the loop stopped before it could send them:
// the peer gets what the socket takes of them and the end of the stream,
// not a socket held open for the life of the process. An instance
// closing its idle origin connections (a GOAWAY, a close_notify) just
// before its loops stop leaves exactly that.
func TestLoopCloseEndsClosingSockets(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name) // never run: no iteration sends anything queued
		a, b := socketPair(t)
		d, err := l.Register(a, handlerFunc(func(Event) {}), Read)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Write([]byte("bye")); err != nil {
			t.Fatal(err)
		}
		d.Close()
		l.Close()
		unix.SetNonblock(b, false)
		unix.SetsockoptTimeval(b, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
		var buf [16]byte
		var got []byte
		for until := time.Now().Add(5 * time.Second); ; {
			n, err := unix.Read(b, buf[:])
			if err == unix.EINTR && time.Now().Before(until) {
				continue
			}
			if err != nil {
				t.Fatalf("peer: %v after %q, want \"bye\" and the end of the stream", err, got)
			}
			if n == 0 {
				break
			}
			got = append(got, buf[:n]...)
		}
		if string(got) != "bye" {
			t.Fatalf("peer read %q, want \"bye\"", got)
		}
	})
}
