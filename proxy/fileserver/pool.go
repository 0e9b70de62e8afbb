package fileserver

import (
	"runtime"
	"sync"
)

// Pool runs disk work off the loops on a fixed set of goroutines. New
// work (a request's open and stat) waits in a bounded queue and is
// refused when it is full, so a loop answers 503 at once instead of
// waiting; the next read of a response already under way is never
// refused and runs before new work, so a started response always
// finishes. There is at most one such read per response. Its methods are
// safe for concurrent use.
type Pool struct {
	mu      sync.Mutex
	wake    sync.Cond
	fresh   []func() // new work, at most queue beyond the idle workers
	cont    []func() // reads of responses under way
	idle    int
	workers int
	queue   int
}

// NewPool starts workers goroutines (at least one) that take new work
// while at most queue jobs wait beyond the idle workers. The workers
// live as long as the process: a Pool is never closed.
func NewPool(workers, queue int) *Pool {
	p := &Pool{workers: max(workers, 1), queue: max(queue, 0)}
	p.wake.L = &p.mu
	for range p.workers {
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	p.mu.Lock()
	for {
		p.idle++
		for len(p.fresh) == 0 && len(p.cont) == 0 {
			p.wake.Wait()
		}
		p.idle--
		var job func()
		if len(p.cont) > 0 {
			job, p.cont[0] = p.cont[0], nil
			p.cont = p.cont[1:]
		} else {
			job, p.fresh[0] = p.fresh[0], nil
			p.fresh = p.fresh[1:]
		}
		p.mu.Unlock()
		job()
		p.mu.Lock()
	}
}

// Workers is how many jobs run at once.
func (p *Pool) Workers() int { return p.workers }

// Queued is how many jobs wait for a worker now.
func (p *Pool) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fresh) + len(p.cont)
}

// Submit queues new work and reports whether it was taken: false when
// every worker is busy and queue jobs already wait.
func (p *Pool) Submit(job func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.fresh)+len(p.cont) >= p.idle+p.queue {
		return false
	}
	p.fresh = append(p.fresh, job)
	p.wake.Signal()
	return true
}

// Continue queues work for a response under way: it is always taken,
// and runs before any new work.
func (p *Pool) Continue(job func()) {
	p.mu.Lock()
	p.cont = append(p.cont, job)
	p.wake.Signal()
	p.mu.Unlock()
}

// sharedWorkers and sharedQueue size the process's pool: a cold read
// waits for the disk, not for a core, so there are more workers than
// cores (nginx's thread pool has 32); the queue bounds what a burst of
// new requests may pile up behind a slow disk before it is told 503.
const (
	sharedWorkers = 32
	sharedQueue   = 256
)

var (
	sharedOnce sync.Once
	shared     *Pool
)

// Shared is the process's pool for files, started on first use: every
// file_server and file matcher of every site and configuration shares
// it, so the threads waiting on the disk are bounded however many sites
// there are.
func Shared() *Pool {
	sharedOnce.Do(func() {
		shared = NewPool(max(sharedWorkers, runtime.NumCPU()), sharedQueue)
	})
	return shared
}
