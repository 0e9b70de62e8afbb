package auth

import (
	"runtime"
	"sync"
)

// Pool runs password comparisons on a fixed set of goroutines, off the
// loops, behind a bounded queue. A job posts its answer back to the loop
// that asked (netpoll.Loop.Post), never waits for one. Its methods are
// safe for concurrent use.
type Pool struct {
	jobs    chan func()
	workers int
	mu      sync.RWMutex // excludes Submit from closing jobs
	closed  bool
	wg      sync.WaitGroup
}

// NewPool starts workers goroutines behind a queue of at most queue jobs
// (at least one worker; no queue when queue <= 0: a job is taken only
// when a worker is idle).
func NewPool(workers, queue int) *Pool {
	workers = max(workers, 1)
	p := &Pool{jobs: make(chan func(), max(queue, 0)), workers: workers}
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	defer p.wg.Done()
	for job := range p.jobs {
		job()
	}
}

// Workers is how many jobs run at once.
func (p *Pool) Workers() int { return p.workers }

// Queued is how many jobs wait for a worker now.
func (p *Pool) Queued() int { return len(p.jobs) }

// Submit queues job and reports whether it was taken: false when every
// worker is busy and the queue is full, or after Close. A loop never
// waits for room: it answers the request 503 instead, so a flood of
// passwords costs the clients that send them a refusal, and the loops
// nothing but that answer.
func (p *Pool) Submit(job func()) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false
	}
	select {
	case p.jobs <- job:
		return true
	default:
		return false
	}
}

// Close stops taking jobs, lets the queued ones run, and returns when
// every worker has exited.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// sharedQueuePerWorker bounds the shared pool's queue: at Caddy's default
// cost a comparison takes about a second on one core, so a full queue is
// already a wait of several seconds.
const sharedQueuePerWorker = 8

var (
	sharedOnce sync.Once
	shared     *Pool
)

// Shared is the process's pool for basic_auth, started on first use and
// kept for the process's life: the checks of every site and every
// configuration (old ones finish during a reload) share it, so the cores
// given to passwords are bounded however many sites ask. Half the CPUs
// hash passwords at most, so a flood of them leaves the loops the other
// half.
func Shared() *Pool {
	sharedOnce.Do(func() {
		w := max(1, runtime.NumCPU()/2)
		shared = NewPool(w, w*sharedQueuePerWorker)
	})
	return shared
}
