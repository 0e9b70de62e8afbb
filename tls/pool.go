package tls

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

var (
	// ErrPoolFull is returned by HandshakePool.Start when every worker is
	// busy and the queue is full. The loop should close the connection:
	// shedding load at accept time is cheaper than queueing without bound.
	ErrPoolFull = errors.New("tls: handshake pool full")

	// ErrPoolClosed is returned by HandshakePool.Start after Close, and is
	// the handshake error of sessions that Close interrupted or dropped
	// from the queue.
	ErrPoolClosed = errors.New("tls: handshake pool closed")

	errStarted = errors.New("tls: session handshake already started")
)

// DefaultHandshakeTimeout is the handshake timeout NewHandshakePool uses
// when given zero.
const DefaultHandshakeTimeout = 10 * time.Second

// HandshakePool runs TLS handshakes on a fixed set of worker goroutines,
// off the event loops, with a bounded queue in front of them. Its methods are
// safe for concurrent use.
type HandshakePool struct {
	timeout time.Duration
	jobs    chan *Session
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.RWMutex // excludes Start from closing jobs
	closed bool
}

// NewHandshakePool starts workers goroutines (GOMAXPROCS when workers <= 0)
// behind a queue of at most queue waiting sessions (none when queue <= 0: a
// Start succeeds only if a worker is idle). Each handshake must finish within
// timeout (DefaultHandshakeTimeout when timeout <= 0), counted from Start so
// that time spent queued counts too.
func NewHandshakePool(workers, queue int, timeout time.Duration) *HandshakePool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if queue < 0 {
		queue = 0
	}
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	p := &HandshakePool{timeout: timeout, jobs: make(chan *Session, queue)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *HandshakePool) work() {
	defer p.wg.Done()
	for s := range p.jobs {
		s.runHandshake(p.ctx)
	}
}

// Start queues the handshake of s, a session fresh from NewServerSession
// or NewClientSession.
// notify is called from a worker goroutine whenever the handshake has
// written ciphertext to Output, and once more, last, when the handshake is
// over (HandshakeDone then reports true); it must not block — post a task to
// the loop that owns s. Once Start succeeds the final notify is guaranteed,
// even if the session is closed or the pool shut down; it may come after the
// loop abandoned s with Close, so the task must tolerate that.
//
// Start fails with ErrPoolFull when the queue is full, ErrPoolClosed after
// Close, and net.ErrClosed for a closed session; s can then only be closed.
func (p *HandshakePool) Start(s *Session, notify func()) error {
	return p.StartWithin(s, notify, p.timeout)
}

// StartWithin is Start with a timeout of the handshake's own (the pool's
// when timeout <= 0): connections to origins each carry their transport's
// tls_timeout through one pool.
func (p *HandshakePool) StartWithin(s *Session, notify func(), timeout time.Duration) error {
	if timeout <= 0 {
		timeout = p.timeout
	}
	if notify == nil {
		notify = func() {}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	if s.started || s.loop.Load() {
		s.mu.Unlock()
		return errStarted
	}
	s.started = true
	s.notify = notify
	s.deadline = monotonic() + timeout
	s.mu.Unlock()

	err := p.enqueue(s)
	if err != nil {
		s.mu.Lock()
		s.started = false
		s.notify = nil
		s.mu.Unlock()
	}
	return err
}

func (p *HandshakePool) enqueue(s *Session) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrPoolClosed
	}
	select {
	case p.jobs <- s:
		return nil
	default:
		return ErrPoolFull
	}
}

// Close stops the pool: running handshakes are interrupted and queued ones
// are dropped, each finishing with ErrPoolClosed and its final notify. Close
// returns when every worker has exited. It may be called more than once.
func (p *HandshakePool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	close(p.jobs)
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}
