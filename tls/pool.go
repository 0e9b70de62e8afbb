package tls

import (
	"context"
	"errors"
	"net"
	"runtime"
	"time"

	"github.com/pollproxy/pollproxy/offload"
)

var errStarted = errors.New("tls: session handshake already started")

// DefaultHandshakeTimeout is the handshake timeout NewHandshakePool uses
// when given zero.
const DefaultHandshakeTimeout = 10 * time.Second

// HandshakePool runs TLS handshakes on an offload.Pool, off the event
// loops, with a bounded queue in front of its workers. Its methods are
// safe for concurrent use.
type HandshakePool struct {
	timeout time.Duration
	work    *offload.Pool
	ctx     context.Context // cancelled by Close, interrupting handshakes
	cancel  context.CancelFunc
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
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	p := &HandshakePool{timeout: timeout, work: offload.New(workers, queue)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
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
// Start fails with offload.ErrFull when every worker is busy and the queue
// is full, offload.ErrClosed after Close, and net.ErrClosed for a closed
// session; s can then only be closed.
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

	err := p.work.Submit(func() { s.runHandshake(p.ctx) })
	if err != nil {
		s.mu.Lock()
		s.started = false
		s.notify = nil
		s.mu.Unlock()
	}
	return err
}

// Close stops the pool: running handshakes are interrupted and queued ones
// run at once against the cancelled context, each finishing with
// offload.ErrClosed and its final notify; new ones are refused. Close
// returns when every worker has exited. It may be called more than once.
func (p *HandshakePool) Close() {
	p.cancel()
	p.work.Close()
}
