package netpoll

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Group is a set of loops, one per core by default, each on its own locked
// OS thread. Each loop may use a different backend, which is how an A/B
// split of pollers runs inside one process.
type Group struct {
	loops []*Loop
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  []error

	switchMu sync.Mutex // one Switch at a time (switch.go)
}

// NewGroup opens n loops (n <= 0: one per CPU). backends gives the backend
// for each loop and is cycled, so ["epoll","poll"] alternates them; empty
// means "auto" for all.
func NewGroup(n int, backends []string) (*Group, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if len(backends) == 0 {
		backends = []string{Auto}
	}
	// A loop spends its idle time blocked in the poller's wait, holding
	// its P. When no P is idle, the runtime's sysmon takes the blocked
	// loop's P away every 20µs and keeps polling at that rate, stealing
	// the loop's core; one spare P lets it leave a waiting loop alone
	// (the CPU it saves is in docs/performance.md). The other thing sysmon
	// takes a loop's P for, a goroutine that has not been through the
	// scheduler for 10 ms, the loop avoids itself (yield.go). The
	// setting is made even when it does not change, so that it is the
	// program's own: the runtime then never lowers a default GOMAXPROCS
	// under the loops when a container's CPU limit changes.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), n+1))
	g := &Group{}
	for i := 0; i < n; i++ {
		l, err := NewLoop(i, backends[i%len(backends)])
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("loop %d: %w", i, err)
		}
		g.loops = append(g.loops, l)
	}
	return g, nil
}

// Loops returns the group's loops, in index order.
func (g *Group) Loops() []*Loop { return g.loops }

// Start runs every loop on a goroutine of its own.
func (g *Group) Start() {
	for _, l := range g.loops {
		g.wg.Add(1)
		l.running.Store(true) // runs from now on, for SwitchPoller
		go func(l *Loop) {
			defer g.wg.Done()
			if err := l.Run(); err != nil && !errors.Is(err, ErrStopped) {
				g.mu.Lock()
				g.errs = append(g.errs, fmt.Errorf("loop %d: %w", l.ID(), err))
				g.mu.Unlock()
			}
		}(l)
	}
}

// Stop asks every loop to return and waits for them; it returns the errors
// of loops that failed on their own.
func (g *Group) Stop() error {
	for _, l := range g.loops {
		l.Stop()
	}
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}

// Close releases the loops' pollers; call it after Stop.
func (g *Group) Close() {
	for _, l := range g.loops {
		l.Close()
	}
}

// Stats returns every loop's counters.
func (g *Group) Stats() []Stats {
	out := make([]Stats, len(g.loops))
	for i, l := range g.loops {
		out[i] = l.Stats()
	}
	return out
}
