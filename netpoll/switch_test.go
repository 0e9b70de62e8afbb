//go:build unix

package netpoll

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/internal/eventually"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// reader is an edge-style handler: it reads until EAGAIN and hands what it
// read to the test.
type reader struct {
	d   *Desc
	got chan []byte
}

func (r *reader) HandleEvent(Event) {
	for {
		var buf [4096]byte
		n, err := r.d.Read(buf[:])
		if n > 0 {
			r.got <- append([]byte(nil), buf[:n]...)
			continue
		}
		if err == unix.EINTR {
			continue
		}
		return
	}
}

func (r *reader) expect(t *testing.T, want string) {
	t.Helper()
	var got []byte
	deadline := time.After(3 * time.Second)
	for len(got) < len(want) {
		select {
		case b := <-r.got:
			got = append(got, b...)
		case <-deadline:
			t.Fatalf("read %q, want %q: an event was lost", got, want)
		}
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// writer writes total bytes, asking for write readiness only while blocked
// (what the poll backend needs), and reports when it is done.
type writer struct {
	d     *Desc
	left  int
	done  chan struct{}
	chunk []byte
}

func (w *writer) HandleEvent(Event) { w.write() }

func (w *writer) write() {
	if w.d.Interest() == 0 && w.left == 0 {
		return // done; a hang-up at the end of the test still reaches it
	}
	for w.left > 0 {
		n, err := w.d.Write(w.chunk[:min(len(w.chunk), w.left)])
		if n > 0 {
			w.left -= n
			continue
		}
		if err == unix.EAGAIN {
			w.d.SetInterest(Write)
			return
		}
		if err != unix.EINTR {
			panic(err)
		}
	}
	w.d.SetInterest(0)
	close(w.done)
}

// TestSwitchKeepsDescriptors moves a running loop between every pair of
// backends with a reader, a writer blocked on a full send buffer, an idle
// descriptor, a pending timer and tasks posted during the move: data
// written while the loop moves is read after it, the blocked writer
// finishes once its peer drains, the idle descriptor hears nothing, the
// timer fires and no task is lost; then the loop moves back.
func TestSwitchKeepsDescriptors(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, from string) {
		polltest.ForEachBackend(t, Available(), func(t *testing.T, to string) {
			l := newTestLoop(t, from)
			runLoop(t, l)

			ra, rb := socketPair(t)
			rd := &reader{got: make(chan []byte, 64)}
			wa, wb := socketPair(t)
			const total = 4 << 20
			wr := &writer{left: total, done: make(chan struct{}), chunk: make([]byte, 64<<10)}
			ia, _ := socketPair(t)
			var idleEvents atomic.Int64
			var rdesc, idesc *Desc
			fired := make(chan time.Time, 1)
			onLoop(l, func() {
				var err error
				if rdesc, err = l.Register(ra, rd, Read); err != nil {
					t.Error(err)
				}
				rd.d = rdesc
				if wr.d, err = l.Register(wa, wr, 0); err != nil {
					t.Error(err)
				}
				wr.write() // fills the send buffer and blocks
				if idesc, err = l.Register(ia, handlerFunc(func(Event) { idleEvents.Add(1) }), Read); err != nil {
					t.Error(err)
				}
				l.AfterFunc(100*time.Millisecond, func() { fired <- time.Now() })
			})
			if t.Failed() {
				return
			}
			unix.Write(rb, []byte("before"))
			rd.expect(t, "before")
			before := l.Stats()

			// Tasks posted from other goroutines while the loop moves.
			var ran atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 250; i++ {
						l.Post(func() { ran.Add(1) })
					}
				}()
			}

			// Bytes that arrive right before the move raise their edge on
			// the old queue, which the move closes unread.
			// From a completion backend the move ends some iterations
			// later; its reply runs on the loop right after the probe.
			var ev SwitchEvent
			var err error
			var probed, idleProbed bool
			moved := make(chan struct{})
			onLoop(l, func() {
				unix.Write(rb, []byte("during"))
				l.switchPoller(to, func(e SwitchEvent, er error) {
					ev, err = e, er
					for _, k := range l.kicks {
						probed = probed || k.Token == rdesc.tok && k.Events&EventRead != 0
						idleProbed = idleProbed || k.Token == idesc.tok && k.Events&EventRead != 0
					}
					close(moved)
				})
			})
			select {
			case <-moved:
			case <-time.After(5 * time.Second):
				t.Fatal("the switch never finished")
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.From != from || ev.To != to || ev.Moved() != (from != to) {
				t.Fatalf("switch event %+v, want %s -> %s", ev, from, to)
			}
			if from != to && !probed {
				t.Error("the readable descriptor was given no readiness after the move")
			}
			if idleProbed {
				t.Error("the idle descriptor was given a read readiness it does not have")
			}
			if got := l.Backend(); got != to {
				t.Fatalf("backend %s after the switch, want %s", got, to)
			}
			rd.expect(t, "during")
			unix.Write(rb, []byte("after"))
			rd.expect(t, "after")

			// The blocked writer finishes once its peer drains.
			drained := 0
			buf := make([]byte, 256<<10)
			eventually.Within(5*time.Second, func() bool {
				for drained < total {
					n, _ := unix.Read(wb, buf)
					if n <= 0 {
						return false
					}
					drained += n
				}
				return true
			})
			select {
			case <-wr.done:
			case <-time.After(3 * time.Second):
				t.Fatalf("writer blocked before the switch never resumed (peer read %d of %d)", drained, total)
			}
			if drained != total {
				t.Fatalf("peer read %d of %d bytes", drained, total)
			}
			select {
			case <-fired:
			case <-time.After(3 * time.Second):
				t.Fatal("a timer armed before the switch never fired")
			}
			wg.Wait()
			onLoop(l, func() {})
			if n := ran.Load(); n != 1000 {
				t.Fatalf("%d of 1000 tasks posted during the switch ran", n)
			}

			after := l.Stats()
			wantSwitches := uint64(0)
			if from != to {
				wantSwitches = 1
			}
			if after.Switches != wantSwitches || after.Backend != to {
				t.Errorf("stats after: backend %s, switches %d; want %s, %d", after.Backend, after.Switches, to, wantSwitches)
			}
			if after.Waits < before.Waits || after.Events < before.Events || after.Wakeups < before.Wakeups {
				t.Errorf("counters went back: before %+v, after %+v", before, after)
			}
			if from != to && after.Adds != before.Adds+uint64(ev.Descriptors) {
				t.Errorf("adds %d after moving %d descriptors, had %d", after.Adds, ev.Descriptors, before.Adds)
			}

			// And back, through the public API, with the descriptors still
			// delivering and closing cleanly on the backend they end on.
			if back, err := l.SwitchPoller(from); err != nil || back.To != from {
				t.Fatalf("switch back: %+v, %v", back, err)
			}
			unix.Write(rb, []byte("back"))
			rd.expect(t, "back")
			if n := idleEvents.Load(); n != 0 {
				t.Errorf("the idle descriptor got %d events", n)
			}
			onLoop(l, func() {
				for _, d := range []*Desc{rdesc, idesc} {
					if err := d.Detach(); err != nil {
						t.Errorf("detach after switching: %v", err)
					}
				}
			})
			if s := l.Stats(); s.Descriptors != 1 {
				t.Errorf("%d descriptors registered, want the writer only", s.Descriptors)
			}
		})
	})
}

func TestSwitchRefused(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		if _, err := l.SwitchPoller(name); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("switching a loop that does not run: %v", err)
		}
		runLoop(t, l)
		if _, err := l.SwitchPoller("select"); !errors.Is(err, ErrUnknownBackend) {
			t.Fatalf("unknown backend: %v", err)
		}
		a, b := socketPair(t)
		rd := &reader{got: make(chan []byte, 8)}
		onLoop(l, func() { rd.d, _ = l.Register(a, rd, Read) })
		unix.Write(b, []byte("still"))
		rd.expect(t, "still")
		if s := l.Stats(); s.Backend != name || s.Switches != 0 {
			t.Fatalf("after a refused switch: %+v", s)
		}
	})
}

// TestGroupSwitch moves a running group's loops with the alternation rule
// of the poller option, and back; the events say which loops moved.
func TestGroupSwitch(t *testing.T) {
	names := Available()
	g, err := NewGroup(2*len(names), names)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer func() {
		g.Stop()
		g.Close()
	}()
	// Rotate the list: every loop changes backend when there are two.
	rotated := append(append([]string(nil), names[1:]...), names[0])
	evs, err := g.Switch(rotated)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range g.Backends() {
		if want := rotated[i%len(rotated)]; b != want || evs[i].To != want {
			t.Errorf("loop %d on %s (event %+v), want %s", i, b, evs[i], want)
		}
	}
	moved := 0
	for _, ev := range evs {
		if ev.Moved() {
			moved++
		}
	}
	if len(names) > 1 && moved != len(g.Loops()) {
		t.Errorf("%d of %d loops moved", moved, len(g.Loops()))
	}
	// A single name puts every loop on it.
	if _, err := g.Switch(names[:1]); err != nil {
		t.Fatal(err)
	}
	for i, b := range g.Backends() {
		if b != names[0] {
			t.Errorf("loop %d on %s, want %s", i, b, names[0])
		}
	}
	if _, err := g.Switch([]string{"epoll", "nope"}); !errors.Is(err, ErrUnknownBackend) {
		t.Fatalf("unknown backend in a list: %v", err)
	}
	// Every loop still runs what is posted to it.
	var wg sync.WaitGroup
	for _, l := range g.Loops() {
		wg.Add(1)
		l.Post(wg.Done)
	}
	wg.Wait()
}
