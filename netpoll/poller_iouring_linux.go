//go:build linux

package netpoll

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring backend runs one of two modes, each its own type over the
// uringCore they share (the ring, its wake-up, the registrations, the
// enter that submits and waits, the report of a reap):
//
//   - uringPoller (uring_readiness_linux.go) reports readiness, as epoll
//     does, from one multishot poll per descriptor;
//   - uringCompleter (uring_completion_linux.go) does a loop's socket I/O
//     on the ring itself.
//
// Open gives the readiness mode; a Loop gets the completion mode where
// the kernel has what it needs (openURingForLoop).

// io_uring ranks between epoll and poll: "auto" keeps epoll until
// measurements say otherwise, and takes io_uring only where epoll is
// switched off. The measurements are in docs/performance.md ("Cell by
// cell"): per request io_uring is 4 to 17% cheaper than epoll where many
// streams share a connection and 3 to 5% dearer where a connection waits
// between requests, and the system calls it can save are about 7% of
// epoll's CPU, short of the 0.85 of epoll in every busy cell that would
// earn it the rank.
func init() {
	registerProbed(backend{name: "io_uring", pref: 200, open: openURing, forLoop: openURingForLoop, describe: describeURing,
		behind: uringBehind}, probeURing)
}

// uringBehind is why auto prefers epoll, as AutoChoice logs it.
const uringBehind = "per request it measured dearer than epoll where a connection waits between requests (docs/performance.md, \"Cell by cell\"); name it in the poller option to use it"

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

// uringCore is what both modes share.
type uringCore struct {
	wake
	r      *ring
	regs   []uringReg // by descriptor number
	gen    uint32     // last generation handed out, below uringGenLimit
	stamp  uint64     // counts reaps, for coalescing (never wraps)
	closed bool
	evs    []Ready // the current reap's output (see report)
	nout   int
}

// uringReg is one descriptor's registration.
type uringReg struct {
	tok    Token
	gen    uint32     // of the request armed now; 0: not registered
	events uint32     // poll mask asked for (readiness mode)
	stamp  uint64     // the reap that reported it last
	out    int32      // where in that reap's output
	sock   *uringSock // the socket's state (completion mode)
}

// openURing opens a ring in readiness mode watching w, or a new waker
// when w is nil (a loop switching backends brings its own).
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
	c, err := newURingCore(w, sqEntries, cqEntries, false)
	if err != nil {
		return nil, err
	}
	p := &uringPoller{uringCore: c}
	p.armWake()
	return p, nil
}

// openURingForLoop opens a Loop's ring: bound to the loop's thread,
// counting its io_uring_enter calls in calls and, where the kernel and
// the environment allow, in completion mode.
func openURingForLoop(w *waker, calls *atomic.Uint64) (Poller, error) {
	c, err := newURingCore(w, uringSQEntries, uringCQEntries, true)
	if err != nil {
		return nil, err
	}
	c.r.counter = calls
	if bufs, err := completionBuffers(c.r); err == nil {
		p := &uringCompleter{uringCore: c, bufs: bufs}
		p.armWake()
		return p, nil
	}
	p := &uringPoller{uringCore: c}
	p.armWake()
	return p, nil
}

// newURingCore sets up a ring and the wake-up it is to watch.
func newURingCore(w *waker, sqEntries, cqEntries uint32, bound bool) (uringCore, error) {
	r, err := newRing(sqEntries, cqEntries, bound)
	if err != nil {
		return uringCore{}, err
	}
	k, err := newWake(w)
	if err != nil {
		r.close()
		return uringCore{}, err
	}
	return uringCore{wake: k, r: r}, nil
}

func (c *uringCore) Name() string { return "io_uring" }

// armWake arms the wake-up's multishot poll. Arming it on an eventfd that
// is already readable completes at once: a switch loses no pending
// wake-up.
func (c *uringCore) armWake() { c.pollAdd(c.waker.readFD(), unix.POLLIN, uringWakeData) }

// pollAdd queues a multishot poll of fd for events.
func (c *uringCore) pollAdd(fd int, events uint32, userData uint64) {
	c.r.push(uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: poll32(events), len: uringPollAddMulti, userData: userData})
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

func uringOpData(kind uint64, fd int, gen uint32) uint64 {
	return kind<<60 | uint64(gen)<<32 | uint64(uint32(fd))
}

// uringSplit takes a user_data apart.
func uringSplit(ud uint64) (kind uint64, fd int, gen uint32) {
	return ud >> 60 & 7, int(uint32(ud)), uint32(ud>>32) & (uringGenLimit - 1)
}

// nextGen hands out the generation of a new registration.
func (c *uringCore) nextGen() uint32 {
	if c.gen++; c.gen >= uringGenLimit {
		c.gen = 1
	}
	return c.gen
}

// grow makes regs reach fd.
func (c *uringCore) grow(fd int) {
	if fd >= len(c.regs) {
		c.regs = append(c.regs, make([]uringReg, fd+1-len(c.regs)+len(c.regs)/2)...)
	}
}

// enter submits what was queued and waits up to timeout for completions
// (negative: forever), in one io_uring_enter, unless completions are
// already waiting and nothing is queued: then it makes none. It reports
// whether it entered.
func (c *uringCore) enter(timeout time.Duration) (bool, error) {
	r := c.r
	if !r.flush() {
		timeout = 0 // the kernel takes no more until completions are reaped
	}
	if r.pending() == 0 && r.ready() > 0 && !r.overflowed() {
		return false, nil
	}
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
		// The overflow list could not all move in, or the kernel is
		// short of memory for a submission: reap what is there, the
		// rest follows on the next wait.
	default:
		return true, err
	}
	return true, nil
}

// The reaps of both modes read the CQ ring the same way: load the head,
// then the tail (acquire: every CQE before it is fully written), read the
// CQEs between them, and store the head only after they were read
// (release: the kernel may reuse those slots only now).

// startReap begins a reap into evs (see report).
func (c *uringCore) startReap(evs []Ready) {
	c.stamp++
	c.evs, c.nout = evs, 0
}

// own handles a completion of the poller's own requests (top bit set):
// the wake-up, which it drains once per reap (*woke) and arms again when
// its multishot poll ended, or a removal's, which reports nothing.
func (c *uringCore) own(cqe uringCQE, woke *bool) {
	if cqe.userData != uringWakeData {
		return
	}
	if !*woke {
		c.waker.drain()
		*woke = true
	}
	if cqe.flags&uringCQEFMore == 0 {
		c.armWake()
	}
}

// report adds e for g to the current reap's output (c.evs up to c.nout),
// merging the completions of one descriptor in one batch into one entry.
func (c *uringCore) report(g *uringReg, e Event) {
	if g.stamp == c.stamp {
		c.evs[g.out].Events |= e
		return
	}
	g.stamp, g.out = c.stamp, int32(c.nout)
	c.evs[c.nout] = Ready{Token: g.tok, Events: e}
	c.nout++
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

// Close closes the ring, which ends every request still armed (and lets
// go of the files they hold).
func (c *uringCore) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.closeWaker()
	return c.r.close()
}
