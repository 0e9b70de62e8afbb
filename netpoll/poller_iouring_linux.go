//go:build linux

package netpoll

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ranks between epoll and poll: "auto" keeps epoll until
// measurements say otherwise, and takes io_uring only where epoll is
// switched off.
func init() {
	registerProbed(backend{name: "io_uring", pref: 200, open: openURing, forLoop: openURingForLoop, describe: describeURing}, probeURing)
}

// Ring sizes: the SQ holds the registrations of one loop iteration (a
// full one is submitted on the spot), the CQ the readiness of one wait; a
// burst beyond it waits in the kernel's overflow list (IORING_FEAT_NODROP)
// and reaches the next wait.
const (
	uringSQEntries = 512
	uringCQEntries = 8192
)

// user_data of the requests that are not a descriptor's poll: those have
// the top bit clear (a generation above the descriptor number).
const (
	uringWakeData   = 1 << 63
	uringRemoveData = 1<<63 | 1
)

// pollRDHUP is POLLRDHUP, the same on every Linux port Go supports; x/sys
// defines it for epoll only.
const pollRDHUP = 0x2000

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
// itself (completion mode, uring_completion_linux.go) where the kernel has
// what that needs.
type uringPoller struct {
	wake
	r      *ring
	regs   []uringReg // by descriptor number
	gen    uint32     // last generation handed out, below uringGenLimit
	stamp  uint64     // counts Waits, for coalescing (never wraps)
	rearms uint64     // multishot polls that ended and were armed again
	closed bool

	// Completion mode (cio): buffers lent to the kernel, requests in
	// flight, and the descriptors whose received bytes outlived an
	// iteration or that wait for buffers.
	cio      bool
	bufs     *bufRing
	chunks   chunkPool
	ops      int     // requests in flight: their last completion not reaped
	holding  []int32 // fds whose rx holds provided buffers
	starved  []int32 // fds whose receive ended for want of buffers
	stopping bool    // a hand-over is under way (stop): submit nothing new
	// stopped is stop's done until a Wait calls it, which it does when
	// the kernel has ended every request, or at stopBy.
	stopped func(error)
	stopBy  time.Time
	// noRecvBudget: the kernel refused uringRecvBudget (before 6.17).
	noRecvBudget bool
	evs          []Ready // the current reap's output (see report)
	nout         int
	// Sends queued since the last enter, and sends that enter took whose
	// success (no completion) is not accounted yet (see submitSend).
	unissued, issued []uringSendRef
}

// uringReg is one descriptor's registration.
type uringReg struct {
	tok    Token
	gen    uint32 // of the poll request armed now; 0: not registered
	events uint32 // poll mask asked for
	stamp  uint64 // the Wait that reported it last
	out    int32  // where in that Wait's output
	sock   *uringSock
}

// openURing opens a ring watching w, or a new waker when w is nil (a loop
// switching backends brings its own).
func openURing(w *waker) (Poller, error) {
	p, err := openURingSized(w, uringSQEntries, uringCQEntries)
	if err != nil {
		return nil, err // not a nil *uringPoller in a non-nil Poller
	}
	return p, nil
}

// openURingSized is openURing with the ring sizes given (tests overflow
// the CQ ring of a small one).
func openURingSized(w *waker, sqEntries, cqEntries uint32) (*uringPoller, error) {
	return openURingRing(w, sqEntries, cqEntries, false)
}

// openURingForLoop opens a Loop's ring: bound to the loop's thread,
// counting its io_uring_enter calls in calls and, where the kernel
// allows, in completion mode.
func openURingForLoop(w *waker, calls *atomic.Uint64) (Poller, error) {
	p, err := openURingRing(w, uringSQEntries, uringCQEntries, true)
	if err != nil {
		return nil, err
	}
	p.r.counter = calls
	return p, nil
}

func openURingRing(w *waker, sqEntries, cqEntries uint32, bound bool) (*uringPoller, error) {
	r, err := newRing(sqEntries, cqEntries, bound)
	if err != nil {
		return nil, err
	}
	k, err := newWake(w)
	if err != nil {
		r.close()
		return nil, err
	}
	p := &uringPoller{wake: k, r: r}
	if bound {
		p.startCompletion()
	}
	// Arming the wake-up's poll on an eventfd that is already readable
	// completes at once: a switch loses no pending wake-up.
	p.armWake()
	return p, nil
}

func (p *uringPoller) Name() string { return "io_uring" }

// Caps: edge-triggered in readiness mode; in completion mode the ring
// does the sockets' I/O and hears every change of the handler's interest,
// which is when receives and write-readiness polls are armed. Either way
// the ring counts its io_uring_enter calls, which are not one per wait.
func (p *uringPoller) Caps() Caps {
	if p.cio {
		return CapCompletionIO | CapCountsCalls
	}
	return CapEdgeTriggered | CapCountsCalls
}

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

// pollAdd queues a multishot poll of fd for events.
func (p *uringPoller) pollAdd(fd int, events uint32, userData uint64) {
	p.r.push(uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: poll32(events), len: uringPollAddMulti, userData: userData})
}

// poll32 lays out a poll mask as sqe.poll32_events wants it: the kernel
// reads the two 16-bit halves swapped on big-endian machines, so that the
// old 16-bit poll_events field still lines up.
func poll32(events uint32) uint32 {
	if bigEndian {
		return events<<16 | events>>16
	}
	return events
}

var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

func (p *uringPoller) armWake() { p.pollAdd(p.waker.readFD(), unix.POLLIN, uringWakeData) }

// A request's user_data: the top bit set for the poller's own requests
// (above); otherwise the request's kind, the registration's generation
// and the descriptor number.
const (
	uringKindPoll    = 0 // multishot readiness poll
	uringKindRecv    = 1 // multishot receive into provided buffers
	uringKindSend    = 2
	uringKindAccept  = 3 // multishot accept
	uringKindPollOut = 4 // one-shot wait for writability (a connect)

	uringGenLimit = 1 << 28
)

func uringData(fd int, gen uint32) uint64 { return uringOpData(uringKindPoll, fd, gen) }

func uringOpData(kind uint64, fd int, gen uint32) uint64 {
	return kind<<60 | uint64(gen)<<32 | uint64(uint32(fd))
}

// uringSplit takes a user_data apart.
func uringSplit(ud uint64) (kind uint64, fd int, gen uint32) {
	return ud >> 60 & 7, int(uint32(ud)), uint32(ud>>32) & (uringGenLimit - 1)
}

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
	if p.gen++; p.gen >= uringGenLimit {
		p.gen = 1
	}
	g := &p.regs[fd]
	*g = uringReg{tok: tok, gen: p.gen, events: uringEvents(want)}
	p.arm(fd, g)
}

func (p *uringPoller) Add(fd int, want Interest, tok Token) error {
	if fd < 0 {
		return unix.EBADF
	}
	if fd >= len(p.regs) {
		p.regs = append(p.regs, make([]uringReg, fd+1-len(p.regs)+len(p.regs)/2)...)
	}
	if p.cio {
		return p.addSock(fd, want, tok)
	}
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
	if p.cio {
		return p.modifySock(fd, g, want, tok)
	}
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
	r := p.r
	if err := r.enable(); err != nil {
		return 0, err
	}
	if p.cio {
		p.settle()
		if timeout != 0 && p.urgentSends() {
			timeout = 0 // their success posts nothing to wake us
		}
		if p.stopped != nil && (timeout < 0 || timeout > uringStopCheck) {
			timeout = uringStopCheck // so that stopBy is noticed
		}
	}
	if !r.flush() {
		timeout = 0 // the kernel takes no more until completions are reaped
	}
	if r.pending() > 0 || r.ready() == 0 || r.overflowed() {
		var err error
		switch {
		case r.ready() > 0 || timeout == 0:
			err = r.enter(uringEnterGetEvents, 0, nil)
		case timeout < 0:
			err = r.enter(uringEnterGetEvents, 1, nil)
		default:
			err = r.enter(uringEnterGetEvents, 1, &timeout)
		}
		switch err {
		case nil, unix.EINTR, unix.ETIME:
		case unix.EBUSY, unix.EAGAIN:
			// The overflow list could not all move in, or the kernel
			// is short of memory for a submission: reap what is there,
			// the rest follows on the next wait.
		default:
			return 0, err
		}
		if p.cio {
			p.issue()
		}
	}
	n, err := p.reap(evs)
	if p.cio && err == nil {
		n = p.finishSends(evs, n)
		if p.stopped != nil {
			p.checkStopped()
		}
	}
	return n, err
}

// reap turns the completions in the CQ ring into evs, merging those of
// one descriptor in one entry.
func (p *uringPoller) reap(evs []Ready) (int, error) {
	r := p.r
	p.stamp++
	p.evs, p.nout = evs, 0
	woke := false
	head := atomic.LoadUint32(r.cqHead)
	// Acquire: every CQE before the tail is fully written.
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail && p.nout < len(evs); head++ {
		c := r.cqes[head&r.cqMask]
		more := c.flags&uringCQEFMore != 0
		if c.userData&(1<<63) != 0 {
			if c.userData == uringWakeData {
				if !woke {
					p.waker.drain()
					woke = true
				}
				if !more {
					p.armWake()
				}
			}
			continue // a removal's completion: nothing to report
		}
		kind, fd, gen := uringSplit(c.userData)
		if kind != uringKindPoll {
			p.complete(kind, fd, gen, c)
			continue
		}
		if fd >= len(p.regs) || p.regs[fd].gen != gen {
			continue // removed or replaced since: stale
		}
		g := &p.regs[fd]
		var e Event
		if c.res < 0 {
			if more {
				continue
			}
			switch unix.Errno(-c.res) {
			case unix.ECANCELED, unix.ENOMEM, unix.EAGAIN, unix.EINTR, unix.EBUSY:
				p.rearms++
				p.arm(fd, g)
				continue
			}
			// The kernel will not poll this descriptor (EBADF: closed
			// without Remove; EINVAL...): tell the handler, whose next
			// read or write meets the error, rather than go quiet.
			e = EventErr | EventRead | EventWrite
		} else {
			if !more {
				p.rearms++
				p.arm(fd, g)
			}
			if e = uringReadiness(uint32(c.res)); e == 0 {
				continue
			}
		}
		p.report(g, e)
	}
	// Release: the kernel may reuse the slots read above only now.
	atomic.StoreUint32(r.cqHead, head)
	return p.nout, nil
}

// report adds e for g to the current reap's output (p.evs up to p.nout),
// merging the completions of one descriptor in one batch into one entry.
func (p *uringPoller) report(g *uringReg, e Event) {
	if g.stamp == p.stamp {
		p.evs[g.out].Events |= e
		return
	}
	g.stamp, g.out = p.stamp, int32(p.nout)
	p.evs[p.nout] = Ready{Token: g.tok, Events: e}
	p.nout++
}

// uringReadiness turns a poll completion's mask into events, as epoll's.
func uringReadiness(m uint32) Event {
	var e Event
	if m&(unix.POLLIN|unix.POLLPRI) != 0 {
		e |= EventRead
	}
	if m&unix.POLLOUT != 0 {
		e |= EventWrite
	}
	if m&(unix.POLLHUP|pollRDHUP) != 0 {
		e |= EventHup | EventRead
	}
	if m&unix.POLLERR != 0 {
		e |= EventErr | EventRead | EventWrite
	}
	return e
}

// Close closes the ring, which ends every poll request still armed (and
// lets go of the files they hold).
func (p *uringPoller) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.closeWaker()
	p.freeBuffers()
	return p.r.close()
}
