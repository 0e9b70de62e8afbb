//go:build linux

package netpoll

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// uringPoller is the readiness backend over io_uring: one multishot
// IORING_OP_POLL_ADD per descriptor for its whole life, edge-triggered as
// epoll's EPOLLET (the kernel's io_uring poll is edge-triggered unless
// IORING_POLL_ADD_LEVEL is asked for: a completion is posted on each
// wake-up of the descriptor's wait queue that finds it ready, and once
// when it is armed if it is ready then). Registrations are queued as SQEs
// and reach the kernel with the next Wait's io_uring_enter, which both
// submits them and waits: a steady-state loop iteration is one system
// call, as with epoll_wait.
//
// A multishot poll can end on its own (a completion without
// IORING_CQE_F_MORE: the CQ overflowed, the kernel ran short of memory, a
// cancellation it did by itself); Wait then arms it again, and arming
// reports the readiness the descriptor has at that moment, so no edge is
// lost in between.
//
// Opened by Open it asks for COOP_TASKRUN (see newRing) but not
// SINGLE_ISSUER or DEFER_TASKRUN: the Poller contract lets any one
// goroutine at a time call Wait (the tests do, from unlocked goroutines).
// A Loop's ring is bound to the loop's thread and does the sockets' I/O
// itself (uringCompleter) where the kernel has what that needs.
type uringPoller struct {
	uringCore
	rearms uint64 // multishot polls that ended and were armed again
}

// Caps: edge-triggered, and the ring counts its io_uring_enter calls,
// which are not one per wait.
func (p *uringPoller) Caps() Caps { return CapEdgeTriggered | CapCountsCalls }

// sockIO is nil: a handler's Desc makes the system calls.
func (p *uringPoller) sockIO() sockIO { return nil }

func uringEvents(want Interest) uint32 {
	ev := uint32(pollRDHUP)
	if want&Read != 0 {
		ev |= unix.POLLIN
	}
	if want&Write != 0 {
		ev |= unix.POLLOUT
	}
	return ev
}

func uringData(fd int, gen uint32) uint64 { return uringOpData(uringKindPoll, fd, gen) }

func (p *uringPoller) arm(fd int, g *uringReg) { p.pollAdd(fd, g.events, uringData(fd, g.gen)) }

// cancel queues the removal of fd's poll request. Its completions, and
// the removal's own, carry a generation that is no longer registered and
// are dropped.
func (p *uringPoller) cancel(fd int, g *uringReg) {
	s := uringSQE{opcode: uringOpPollRemove, fd: -1, addr: uringData(fd, g.gen), userData: uringRemoveData}
	if p.r.features&uringFeatCQESkip != 0 {
		s.flags = uringSQECQESkipSuccess
	}
	p.r.push(s)
}

func (p *uringPoller) register(fd int, want Interest, tok Token) {
	g := &p.regs[fd]
	*g = uringReg{tok: tok, gen: p.nextGen(), events: uringEvents(want)}
	p.arm(fd, g)
}

func (p *uringPoller) Add(fd int, want Interest, tok Token) error {
	if fd < 0 {
		return unix.EBADF
	}
	p.grow(fd)
	if g := &p.regs[fd]; g.gen != 0 {
		// A descriptor number closed without Remove and reused: take it over.
		p.cancel(fd, g)
	}
	p.register(fd, want, tok)
	return nil
}

func (p *uringPoller) Modify(fd int, want Interest, tok Token) error {
	if fd < 0 || fd >= len(p.regs) || p.regs[fd].gen == 0 {
		return unix.ENOENT
	}
	g := &p.regs[fd]
	if uringEvents(want) == g.events {
		g.tok = tok // read when a completion arrives: nothing to tell the kernel
		return nil
	}
	p.cancel(fd, g)
	p.register(fd, want, tok)
	return nil
}

func (p *uringPoller) Remove(fd int) error {
	if fd < 0 || fd >= len(p.regs) || p.regs[fd].gen == 0 {
		return nil
	}
	g := &p.regs[fd]
	p.cancel(fd, g)
	g.gen = 0
	return nil
}

// Wait makes one io_uring_enter that submits what Add, Modify and Remove
// queued and waits for completions, unless completions are already
// waiting and nothing is queued (then it makes none), and turns the
// completions into readiness.
func (p *uringPoller) Wait(evs []Ready, timeout time.Duration) (int, error) {
	if err := p.r.enable(); err != nil {
		return 0, err
	}
	if _, err := p.enter(timeout); err != nil {
		return 0, err
	}
	return p.reap(evs), nil
}

// reap turns the completions in the CQ ring into evs, merging those of
// one descriptor in one entry.
func (p *uringPoller) reap(evs []Ready) int {
	r := p.r
	p.startReap(evs)
	woke := false
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail && p.nout < len(evs); head++ {
		c := r.cqes[head&r.cqMask]
		if c.userData&(1<<63) != 0 {
			p.own(c, &woke)
			continue
		}
		kind, fd, gen := uringSplit(c.userData)
		if kind != uringKindPoll || fd >= len(p.regs) || p.regs[fd].gen != gen {
			continue // removed or replaced since: stale
		}
		p.pollDone(fd, &p.regs[fd], c)
	}
	atomic.StoreUint32(r.cqHead, head)
	return p.nout
}

// pollDone handles a completion of fd's multishot poll.
func (p *uringPoller) pollDone(fd int, g *uringReg, c uringCQE) {
	more := c.flags&uringCQEFMore != 0
	var e Event
	if c.res < 0 {
		if more {
			return
		}
		switch unix.Errno(-c.res) {
		case unix.ECANCELED, unix.ENOMEM, unix.EAGAIN, unix.EINTR, unix.EBUSY:
			p.rearms++
			p.arm(fd, g)
			return
		}
		// The kernel will not poll this descriptor (EBADF: closed
		// without Remove; EINVAL...): tell the handler, whose next read
		// or write meets the error, rather than go quiet.
		e = EventErr | EventRead | EventWrite
	} else {
		if !more {
			p.rearms++
			p.arm(fd, g)
		}
		if e = uringReadiness(uint32(c.res)); e == 0 {
			return
		}
	}
	p.report(g, e)
}
