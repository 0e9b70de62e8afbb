package offload

import (
	"errors"
	"sync"
)

var (
	// ErrFull is Submit's answer when every worker is busy and the queue
	// is full: the caller refuses its client rather than wait.
	ErrFull = errors.New("offload: every worker busy, queue full")

	// ErrClosed is Submit's answer after Close.
	ErrClosed = errors.New("offload: pool closed")
)

// Pool runs jobs on a fixed set of worker goroutines. New work waits in a
// queue bounded beyond the idle workers and is refused when it is full;
// continued work is always taken and runs first. Its methods are safe for
// concurrent use.
type Pool struct {
	mu      sync.Mutex
	wake    sync.Cond // a job was queued, or the pool closed
	fresh   []func()  // new work, at most queue beyond the idle workers
	cont    []func()  // work continuing something under way
	idle    int       // workers waiting for a job
	workers int
	queue   int
	closed  bool
	exited  sync.WaitGroup
}

// New starts workers goroutines (at least one) that take new work while
// at most queue jobs wait beyond the idle workers (none when queue <= 0:
// a job is taken only when a worker is idle).
func New(workers, queue int) *Pool {
	p := &Pool{workers: max(workers, 1), queue: max(queue, 0)}
	p.idle = p.workers
	p.wake.L = &p.mu
	p.exited.Add(p.workers)
	for range p.workers {
		go p.work()
	}
	return p
}

// work runs jobs, continued ones first, until the pool is closed and
// nothing is left to run. A worker counts as idle from New on, so that a
// job submitted before it first waits is taken.
func (p *Pool) work() {
	defer p.exited.Done()
	p.mu.Lock()
	for {
		for len(p.fresh) == 0 && len(p.cont) == 0 && !p.closed {
			p.wake.Wait()
		}
		var job func()
		switch {
		case len(p.cont) > 0:
			job, p.cont[0] = p.cont[0], nil
			p.cont = p.cont[1:]
		case len(p.fresh) > 0:
			job, p.fresh[0] = p.fresh[0], nil
			p.fresh = p.fresh[1:]
		default: // closed, and nothing left
			p.mu.Unlock()
			return
		}
		p.idle--
		p.mu.Unlock()
		job()
		p.mu.Lock()
		p.idle++
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

// Submit queues new work. It fails at once, running nothing, with
// ErrFull when every worker is busy and queue jobs already wait, and with
// ErrClosed after Close. job runs on a worker: it must not touch a loop's
// state, but post its answer to the loop (see Do).
func (p *Pool) Submit(job func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return ErrClosed
	case len(p.fresh)+len(p.cont) >= p.idle+p.queue:
		return ErrFull
	}
	p.fresh = append(p.fresh, job)
	p.wake.Signal()
	return nil
}

// Continue queues work that continues something under way (the next read
// of a response already started): it is always taken, and runs before
// any new work, so that what was started finishes however full the pool
// is. There should be at most one such job per thing under way, which is
// what bounds them. Continue after Close panics, as a send on a closed
// channel does: a pool that is closed has nothing under way.
func (p *Pool) Continue(job func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		panic("offload: Continue after Close")
	}
	p.cont = append(p.cont, job)
	p.wake.Signal()
}

// Close stops taking new work, lets the queued jobs run, and returns when
// every worker has exited. It may be called more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.wake.Broadcast()
	p.mu.Unlock()
	p.exited.Wait()
}

// Poster runs a function on the loop that owns some work: netpoll.Loop's
// Post.
type Poster interface {
	Post(f func())
}

// Do submits work as new work and posts done with its answer to loop, so
// that done runs on the loop and work never touches the loop's state. It
// fails as Submit does, running neither.
func Do[T any](p *Pool, loop Poster, work func() T, done func(T)) error {
	return p.Submit(func() {
		v := work()
		loop.Post(func() { done(v) })
	})
}
