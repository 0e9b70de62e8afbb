package offload

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// block occupies n workers of p until the returned release is called; it
// returns once all n run.
func block(t *testing.T, p *Pool, n int) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}, n), make(chan struct{})
	for range n {
		if err := p.Submit(func() { started <- struct{}{}; <-gate }); err != nil {
			t.Fatalf("blocking job: %v", err)
		}
	}
	for range n {
		<-started
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// TestSubmitBounds: new work is taken while a worker is idle or the queue
// has room, refused with ErrFull at once beyond that, and every job taken
// runs.
func TestSubmitBounds(t *testing.T) {
	p := New(2, 3)
	t.Cleanup(p.Close)
	if p.Workers() != 2 {
		t.Fatalf("Workers = %d, want 2", p.Workers())
	}
	release := block(t, p, 2)
	var ran sync.WaitGroup
	for i := range 3 {
		ran.Add(1)
		if err := p.Submit(ran.Done); err != nil {
			t.Fatalf("job %d with room in the queue: %v", i, err)
		}
	}
	if err := p.Submit(func() { t.Error("a refused job ran") }); !errors.Is(err, ErrFull) {
		t.Fatalf("Submit to a full pool = %v, want ErrFull", err)
	}
	if q := p.Queued(); q != 3 {
		t.Fatalf("Queued = %d, want 3", q)
	}
	release()
	ran.Wait()
}

// TestNoQueue: with queue 0 a job is taken only by an idle worker, the
// workers counting as idle from New on.
func TestNoQueue(t *testing.T) {
	p := New(1, 0)
	t.Cleanup(p.Close)
	block(t, p, 1) // taken at once: the worker is idle from New on
	if err := p.Submit(func() {}); !errors.Is(err, ErrFull) {
		t.Fatalf("Submit with the worker busy = %v, want ErrFull", err)
	}
	one := New(0, 0)
	defer one.Close()
	if one.Workers() != 1 {
		t.Fatal("New(0, 0) has no worker")
	}
}

// TestOrder: one worker runs continued work before new work, each in the
// order it came, and continued work is taken however full the pool is.
func TestOrder(t *testing.T) {
	p := New(1, 2)
	t.Cleanup(p.Close)
	release := block(t, p, 1)
	var (
		mu  sync.Mutex
		got []string
		all sync.WaitGroup
	)
	job := func(name string) func() {
		all.Add(1)
		return func() {
			mu.Lock()
			got = append(got, name)
			mu.Unlock()
			all.Done()
		}
	}
	for _, name := range []string{"new1", "new2"} {
		if err := p.Submit(job(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(func() {}); !errors.Is(err, ErrFull) {
		t.Fatalf("Submit = %v, want ErrFull", err)
	}
	for _, name := range []string{"cont1", "cont2", "cont3"} {
		p.Continue(job(name))
	}
	if q := p.Queued(); q != 5 {
		t.Fatalf("Queued = %d, want 5", q)
	}
	release()
	all.Wait()
	want := []string{"cont1", "cont2", "cont3", "new1", "new2"}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
}

// TestClose: Close refuses new work with ErrClosed, runs what was queued
// before it, waits for the workers to exit, and may be called again;
// Continue after it panics.
func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	p := New(3, 2)
	release := block(t, p, 3)
	ran := 0
	var mu sync.Mutex
	for range 2 {
		if err := p.Submit(func() { mu.Lock(); ran++; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	// The pool is full until Close marks it closed.
	err := p.Submit(func() {})
	for errors.Is(err, ErrFull) {
		runtime.Gosched()
		err = p.Submit(func() {})
	}
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit during Close = %v, want ErrClosed", err)
	}
	release()
	<-closed
	mu.Lock()
	if ran != 2 {
		t.Errorf("%d queued jobs ran before Close returned, want 2", ran)
	}
	mu.Unlock()
	p.Close()
	if err := p.Submit(func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close = %v, want ErrClosed", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Continue after Close did not panic")
			}
		}()
		p.Continue(func() {})
	}()
	// Every worker has exited: nothing but the test's own goroutines is left.
	if now := runtime.NumGoroutine(); now > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, now, buf[:runtime.Stack(buf, true)])
	}
}

// TestDoPostsToTheLoop: Do runs the work on a worker and its answer on
// the loop, only when the loop runs its tasks, here on the test's own
// goroutine, so done may touch what the loop owns without a lock (the
// race detector would see otherwise). A refused Do runs neither.
func TestDoPostsToTheLoop(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		runtime.LockOSThread() // io_uring binds a ring to the thread of its first wait
		defer runtime.UnlockOSThread()
		l, err := netpoll.NewLoop(0, backend)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := New(1, 1)
		defer p.Close()

		worked := make(chan struct{})
		answer, answered := 0, false // the loop's
		err = Do(p, l, func() int { defer close(worked); return 42 }, func(v int) { answer, answered = v, true })
		if err != nil {
			t.Fatal(err)
		}
		<-worked
		if answered {
			t.Fatal("the answer ran before the loop ran its tasks")
		}
		for deadline := time.Now().Add(10 * time.Second); !answered && time.Now().Before(deadline); {
			if err := l.RunOnce(time.Second); err != nil {
				t.Fatal(err)
			}
		}
		if !answered || answer != 42 {
			t.Fatalf("answered %v with %d, want 42", answered, answer)
		}

		// The worker may still be returning from the job above: the
		// blocking job waits in the queue until it has.
		release := block(t, p, 1)
		if err := p.Submit(func() {}); err != nil {
			t.Fatal(err)
		}
		err = Do(p, l, func() int { t.Error("refused work ran"); return 0 }, func(int) { t.Error("refused answer ran") })
		if !errors.Is(err, ErrFull) {
			t.Fatalf("Do on a full pool = %v, want ErrFull", err)
		}
		release()
	})
}
