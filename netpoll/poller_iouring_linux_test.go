package netpoll

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestURingMultishotEndsAndIsArmedAgain overflows the completion ring of
// a small ring: the kernel ends the multishot polls it cannot post a
// completion for (a completion without IORING_CQE_F_MORE), and the poller
// must arm them again, so that every descriptor still reports the bytes
// written afterwards.
func TestURingMultishotEndsAndIsArmedAgain(t *testing.T) {
	p := smallURing(t, 8, 16)
	const pairs = 64
	ends := make([][2]int, pairs)
	for i := range ends {
		a, b := socketPair(t)
		ends[i] = [2]int{a, b}
		if err := p.Add(a, Read, Token(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	evs := make([]Ready, 2*pairs)
	if _, err := p.Wait(evs, 0); err != nil { // submits the last registrations
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		for _, e := range ends {
			unix.Write(e[1], []byte("x"))
		}
		got := map[Token]bool{}
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < pairs && time.Now().Before(deadline) {
			n, err := p.Wait(evs, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range evs[:n] {
				if r.Events&EventRead == 0 || got[r.Token] {
					continue
				}
				got[r.Token] = true
				var buf [8]byte
				unix.Read(ends[r.Token-1][0], buf[:])
			}
		}
		if len(got) != pairs {
			t.Fatalf("round %d: %d of %d readable descriptors reported (%d polls armed again)", round, len(got), pairs, p.rearms)
		}
	}
	if p.rearms == 0 {
		t.Errorf("no multishot poll ended although the completion ring overflowed: the re-arming went untested")
	}
	t.Logf("%d multishot polls ended and were armed again", p.rearms)
}

// TestURingRefusedByEnvironment: POLLPROXY_NO_IO_URING takes io_uring out
// of the backends on offer, auto stays on epoll, and naming io_uring fails
// with the reason instead of falling back.
func TestURingRefusedByEnvironment(t *testing.T) {
	t.Setenv("POLLPROXY_NO_IO_URING", "1")
	for _, n := range Available() {
		if n == "io_uring" {
			t.Fatal("io_uring still available")
		}
	}
	var reason error
	for _, r := range Unavailable() {
		if r.Name == "io_uring" {
			reason = r.Reason
		}
	}
	if reason == nil || !strings.Contains(reason.Error(), "POLLPROXY_NO_IO_URING") {
		t.Fatalf("io_uring's refusal: %v", reason)
	}
	if err := ValidName("io_uring"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), reason.Error()) {
		t.Errorf("ValidName(io_uring) = %v", err)
	}
	if _, err := NewLoop(0, "io_uring"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), reason.Error()) {
		t.Errorf("NewLoop(io_uring) = %v", err)
	}
	p, err := Open(Auto)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Name() != "epoll" {
		t.Errorf("auto picked %s, want epoll", p.Name())
	}
}

// TestURingBacklog: what waits in the backlog (a full SQ the kernel would
// not take) reaches the kernel in order with the next wait, across the
// wrap of the SQ, and registrations queued behind it are not lost.
func TestURingBacklog(t *testing.T) {
	p := smallURing(t, 8, 64)
	// As if the kernel had refused a full SQ: 30 no-ops wait in the
	// backlog, and everything queued after them must wait behind them.
	for i := 0; i < 30; i++ {
		p.r.backlog = append(p.r.backlog, uringSQE{userData: uringRemoveData})
	}
	const pairs = 20
	ends := make([][2]int, pairs)
	for i := range ends {
		a, b := socketPair(t)
		ends[i] = [2]int{a, b}
		if err := p.Add(a, Read, Token(i+1)); err != nil {
			t.Fatal(err)
		}
		unix.Write(b, []byte("x"))
	}
	if n := len(p.r.backlog); n != 30+pairs {
		t.Fatalf("%d entries in the backlog, want %d", n, 30+pairs)
	}
	got := map[Token]bool{}
	evs := make([]Ready, 64)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < pairs && time.Now().Before(deadline) {
		n, err := p.Wait(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range evs[:n] {
			if r.Events&EventRead != 0 {
				got[r.Token] = true
			}
		}
	}
	if len(got) != pairs || len(p.r.backlog) != 0 {
		t.Fatalf("%d of %d readable descriptors reported, %d entries left in the backlog", len(got), pairs, len(p.r.backlog))
	}
}

// TestURingOneEnterPerIteration drives a loop on io_uring through rounds
// of reads on 100 registered descriptors: the registrations and every
// wait together cost at most one io_uring_enter per loop iteration.
func TestURingOneEnterPerIteration(t *testing.T) {
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	l := newTestLoop(t, "io_uring")
	const pairs = 100
	read := 0
	peers := make([]int, 0, pairs)
	for i := 0; i < pairs; i++ {
		a, b := socketPair(t)
		var d *Desc
		drain := handlerFunc(func(Event) {
			var buf [64]byte
			for {
				n, _ := d.Read(buf[:])
				if n <= 0 {
					return
				}
				read += n
			}
		})
		var err error
		if d, err = l.Register(a, drain, Read); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, b)
	}
	waits, enters := l.Stats().Waits, l.Stats().Calls
	for round := 1; round <= 20; round++ {
		for _, b := range peers {
			unix.Write(b, []byte("x"))
		}
		for i := 0; read < round*pairs && i < 1000; i++ {
			if err := l.RunOnce(100 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if read < round*pairs {
			t.Fatalf("round %d: read %d bytes, want %d", round, read, round*pairs)
		}
	}
	waits, enters = l.Stats().Waits-waits, l.Stats().Calls-enters
	if enters > waits {
		t.Errorf("%d io_uring_enter calls for %d loop iterations", enters, waits)
	}
	t.Logf("%d loop iterations, %d io_uring_enter calls", waits, enters)
}

// smallURing opens an io_uring poller with small rings for the test, or
// skips it where io_uring is unavailable; the test's end closes it.
func smallURing(t *testing.T, sqEntries, cqEntries uint32) *uringPoller {
	t.Helper()
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	p, err := openURingSized(nil, sqEntries, cqEntries)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestURingReadinessModeByEnvironment: POLLPROXY_IO_URING=readiness keeps
// a loop's ring a readiness backend, which still serves a handler's
// socket I/O through its Desc.
func TestURingReadinessModeByEnvironment(t *testing.T) {
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	t.Setenv("POLLPROXY_IO_URING", "readiness")
	l := newTestLoop(t, "io_uring")
	if c := l.Caps(); c != CapEdgeTriggered|CapCountsCalls || l.io != nil {
		t.Fatalf("caps %v, completion I/O %v: the environment did not keep readiness", c, l.io != nil)
	}
	runLoop(t, l)
	c := dialEcho(t, l, 10*time.Second)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	var buf [4]byte
	if _, err := io.ReadFull(c, buf[:]); err != nil || string(buf[:]) != "ping" {
		t.Fatalf("echo %q, %v", buf, err)
	}
}

// TestURingBuffersRunOut has more bytes arrive at once, on more sockets,
// than the loop has provided buffers for: every socket still reads all
// its bytes, in order, and every buffer comes back to the ring. (Whether
// a receive meets ENOBUFS on the way depends on how much completion work
// the kernel runs per enter; the result must not.)
func TestURingBuffersRunOut(t *testing.T) {
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	l := newTestLoop(t, "io_uring")
	if l.io == nil {
		t.Skip("io_uring runs in readiness mode here")
	}
	const socks = 2 * uringBufCount
	const each = 3 * uringBufSize / 2 // two buffers' worth each, at least
	got := make([]int, socks)
	peers := make([]int, socks)
	for i := range socks {
		a, b := socketPair(t)
		unix.SetsockoptInt(b, unix.SOL_SOCKET, unix.SO_SNDBUF, 4*each)
		var d *Desc
		var err error
		d, err = l.Register(a, handlerFunc(func(Event) {
			var buf [4096]byte
			for {
				n, err := d.Read(buf[:])
				for _, c := range buf[:n] {
					if c != byte(i) {
						t.Errorf("socket %d read byte %d", i, c)
					}
				}
				got[i] += n
				if n < len(buf) || err != nil {
					return
				}
			}
		}), Read)
		if err != nil {
			t.Fatal(err)
		}
		peers[i] = b
	}
	l.RunOnce(0) // arms every receive
	payload := make([]byte, each)
	for i, b := range peers {
		for j := range payload {
			payload[j] = byte(i)
		}
		if n, err := unix.Write(b, payload); n != each {
			t.Fatalf("peer %d wrote %d: %v", i, n, err)
		}
	}
	total := func() (n int) {
		for _, g := range got {
			n += g
		}
		return n
	}
	for i := 0; total() < socks*each && i < 2000; i++ {
		if err := l.RunOnce(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range got {
		if g != each {
			t.Fatalf("socket %d read %d bytes of %d", i, g, each)
		}
	}
	l.RunOnce(0) // gives back what the last reads took
	if p := l.poller.(*uringCompleter); p.bufs.lent != uringBufCount {
		t.Fatalf("%d of %d buffers back in the ring", p.bufs.lent, uringBufCount)
	}
}

// TestURingSwitchAwayDoesNotBlock: a switch away from completion mode
// returns to the loop as soon as it has asked the kernel to end the
// ring's requests; work queued behind it runs before the move, which a
// later iteration finishes, and every registration arrives on the next
// backend.
func TestURingSwitchAwayDoesNotBlock(t *testing.T) {
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	l := newTestLoop(t, "io_uring")
	if l.io == nil {
		t.Skip("io_uring runs in readiness mode here")
	}
	runLoop(t, l)
	a, b := socketPair(t)
	rd := &reader{got: make(chan []byte, 64)}
	onLoop(l, func() {
		d, err := l.Register(a, rd, Read)
		if err != nil {
			t.Error(err)
		}
		rd.d = d
	})
	type step struct {
		what    string
		backend string
	}
	steps := make(chan step, 4)
	onLoop(l, func() {
		l.switchPoller("poll", func(ev SwitchEvent, err error) {
			if err != nil {
				t.Error(err)
			}
			steps <- step{"moved", l.Backend()}
		})
		l.Post(func() { steps <- step{"task behind the switch", l.Backend()} })
	})
	for _, want := range []step{{"task behind the switch", "io_uring"}, {"moved", "poll"}} {
		select {
		case got := <-steps:
			if got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q", want.what)
		}
	}
	unix.Write(b, []byte("after"))
	rd.expect(t, "after")
}

// TestAutoChoiceSaysWhy: "auto" opens the backend AutoChoice names, and
// the reason names io_uring's rank below epoll, or epoll's absence when
// it is switched off and io_uring takes its place.
func TestAutoChoiceSaysWhy(t *testing.T) {
	if err := ValidName("io_uring"); err != nil {
		t.Skip(err)
	}
	check := func(want, reason string) {
		t.Helper()
		name, why := AutoChoice()
		if name != want || !strings.Contains(why, reason) {
			t.Fatalf("AutoChoice = %q, %q; want %q with %q", name, why, want, reason)
		}
		p, err := Open(Auto)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if p.Name() != name {
			t.Fatalf("auto opened %s, AutoChoice said %s", p.Name(), name)
		}
	}
	check("epoll", "io_uring available, ranked below epoll: per request it measured dearer")
	t.Setenv("POLLPROXY_NO_EPOLL", "1")
	check("io_uring", "epoll unavailable: disabled by POLLPROXY_NO_EPOLL")
}
