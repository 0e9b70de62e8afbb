//go:build linux

package netpoll

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// io_uring's completion mode: the ring does a loop's socket I/O.
//
//   - A socket the handler reads has one multishot receive armed
//     (IORING_OP_RECV with IORING_RECV_MULTISHOT, 6.0) that takes a
//     provided buffer (uring_buffers_linux.go) for each batch of bytes,
//     so an idle connection holds no read buffer; Read copies out of it
//     and gives the buffer back.
//   - Write copies into a send buffer and queues an IORING_OP_SEND; one
//     send per socket is in flight at a time, so bytes leave in order.
//   - A listener has one multishot accept (5.19).
//   - Everything queued in an iteration reaches the kernel with the one
//     io_uring_enter that also waits: at most one system call per loop
//     iteration, however many sockets it served.
//
// The ring is bound to the loop's thread with SINGLE_ISSUER and
// DEFER_TASKRUN: the kernel does the receives and sends it was asked for
// while the loop is inside that enter, in a batch. Completion mode needs
// both (6.1) and provided-buffer rings; a kernel without them gets the
// readiness mode, as does POLLPROXY_IO_URING=readiness.

// uringCompleter is io_uring in completion mode: the sockets' I/O on the
// ring. Its Desc-side is sockIO (sockio.go); Modify hears every change of
// a handler's interest, which is when receives and waits for room are
// armed.
type uringCompleter struct {
	uringCore

	// Buffers lent to the kernel, requests in flight, and the
	// descriptors whose received bytes outlived an iteration or that
	// wait for buffers.
	bufs    *bufRing
	chunks  chunkPool
	ops     int     // requests in flight: their last completion not reaped
	holding []int32 // fds whose rx holds provided buffers
	starved []int32 // fds whose receive ended for want of buffers
	// noRecvBudget: the kernel refused uringRecvBudget (before 6.17).
	noRecvBudget bool
	// Sends queued since the last enter, and sends that enter took whose
	// success (no completion) is not accounted yet (see submitSend).
	unissued, issued []uringSendRef

	// A hand-over (uring_handover_linux.go): stopping while it is under
	// way (submit nothing new); stopped is stop's done until a Wait
	// calls it, which it does when the kernel has ended every request,
	// or at stopBy.
	stopping bool
	stopped  func(error)
	stopBy   time.Time
}

// Caps: the ring does the sockets' I/O and counts its io_uring_enter
// calls, which are not one per wait.
func (p *uringCompleter) Caps() Caps { return CapCompletionIO | CapCountsCalls }

func (p *uringCompleter) sockIO() sockIO { return p }

func (p *uringCompleter) Add(fd int, want Interest, tok Token) error {
	if fd < 0 {
		return unix.EBADF
	}
	p.grow(fd)
	return p.addSock(fd, want, tok)
}

func (p *uringCompleter) Modify(fd int, want Interest, tok Token) error {
	if fd < 0 || fd >= len(p.regs) || p.regs[fd].gen == 0 {
		return unix.ENOENT
	}
	return p.modifySock(fd, &p.regs[fd], want, tok)
}

// Remove forgets fd as Detach does; a loop closes and detaches through
// sockIO, so only a Poller's caller outside a loop gets here.
func (p *uringCompleter) Remove(fd int) error {
	if fd < 0 || fd >= len(p.regs) || p.regs[fd].gen == 0 {
		return nil
	}
	g := &p.regs[fd]
	p.stopAll(fd, g)
	p.dropTx(g.sock)
	g.gen = 0
	return nil
}

// Wait settles what the sockets hold, makes the one io_uring_enter that
// submits the iteration's receives, sends, accepts and cancellations and
// waits (none when completions are already waiting and nothing is
// queued), and turns the completions into events.
func (p *uringCompleter) Wait(evs []Ready, timeout time.Duration) (int, error) {
	if err := p.r.enable(); err != nil {
		return 0, err
	}
	p.settle()
	if timeout != 0 && p.urgentSends() {
		timeout = 0 // their success posts nothing to wake us
	}
	if p.stopped != nil && (timeout < 0 || timeout > uringStopCheck) {
		timeout = uringStopCheck // so that stopBy is noticed
	}
	entered, err := p.enter(timeout)
	if err != nil {
		return 0, err
	}
	if entered {
		p.issue()
	}
	n := p.finishSends(evs, p.reap(evs))
	if p.stopped != nil {
		p.checkStopped()
	}
	return n, nil
}

// reap turns the completions in the CQ ring into evs, merging those of
// one descriptor in one entry.
func (p *uringCompleter) reap(evs []Ready) int {
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
		p.complete(kind, fd, gen, c)
	}
	atomic.StoreUint32(r.cqHead, head)
	return p.nout
}

// Close closes the ring, which ends every request still armed, and lets
// go of the buffers unless the kernel may still use them. The sockets
// their owners closed while their last bytes were queued are finished
// first (finishClosing): the loop stopped before an iteration could send
// them, and nothing else would ever close those sockets.
func (p *uringCompleter) Close() error {
	if p.closed {
		return nil
	}
	p.finishClosing()
	p.freeBuffers()
	return p.uringCore.Close()
}

// uringSock is a registration's completion state.
type uringSock struct {
	want Interest

	recv        recvState // the receive request (uring_recv_linux.go)
	acceptLive  bool      // a multishot accept is armed
	pollOutLive bool      // a wait for room (POLLOUT) is armed

	rx     []uringPiece // received into provided buffers, not yet read
	rxHeap []byte       // received bytes that outlived an iteration, copied off the buffers
	eof    bool
	rxErr  unix.Errno

	accepted  []int
	acceptErr unix.Errno

	uringSend        // the send side (uring_send_linux.go)
	drain     *Timer // bounds a closing socket's wait for its last sends
}

// completionBuffers sets up the provided buffers of a completion-mode
// ring, or says why r stays a readiness backend.
func completionBuffers(r *ring) (*bufRing, error) {
	if os.Getenv("POLLPROXY_IO_URING") == "readiness" {
		return nil, fmt.Errorf("POLLPROXY_IO_URING=readiness")
	}
	if !r.deferred() {
		return nil, fmt.Errorf("the kernel has no IORING_SETUP_DEFER_TASKRUN (Linux 6.1)")
	}
	return newBufRing(r)
}

// describeURing says which mode a loop's ring gets here, and why.
func describeURing() string {
	r, err := newRing(4, 8, true)
	if err != nil {
		return fmt.Sprintf("readiness mode: %v", err)
	}
	defer r.close()
	b, err := completionBuffers(r)
	if err != nil {
		return fmt.Sprintf("readiness mode (multishot poll): %v", err)
	}
	b.unregister(r)
	b.unmap()
	return "completion mode: multishot receive into provided buffers, sends and multishot accept on the ring; SINGLE_ISSUER, DEFER_TASKRUN"
}

// sock returns d's completion state.
func (p *uringCompleter) sock(d *Desc) *uringSock { return p.regs[d.fd].sock }

func (p *uringCompleter) addSock(fd int, want Interest, tok Token) error {
	g := &p.regs[fd]
	if g.gen != 0 {
		return unix.EEXIST // a descriptor is closed through its Desc, which tells the ring
	}
	s := g.sock
	if s == nil {
		s = new(uringSock)
	}
	*s = uringSock{rx: s.rx[:0], uringSend: uringSend{tx: s.tx[:0]}}
	*g = uringReg{tok: tok, gen: p.nextGen(), sock: s}
	return p.modifySock(fd, g, want, tok)
}

// modifySock arms what the handler's interest needs: a receive for Read,
// an accept on a listener, a wait for writability for Write while
// nothing is being sent (a connect in progress). A receive is not
// stopped when Read is dropped: a handler pausing its reads leaves the
// bytes that arrive to settle, which stops it.
func (p *uringCompleter) modifySock(fd int, g *uringReg, want Interest, tok Token) error {
	s := g.sock
	s.want, g.tok = want, tok
	switch {
	case want&accepting != 0:
		p.armAccept(fd, g)
	case s.acceptLive:
		p.cancel1(uringKindAccept, fd, g) // a paused listener
	case s.wantsRecv():
		// Not while bytes wait to be read: those went unread through an
		// iteration, and the socket buffer holds what follows them.
		p.armRecv(fd, g)
	}
	if want&Write != 0 && s.send != sendFlying {
		p.armPollOut(fd, g)
	}
	return nil
}

// submit queues a request and counts it in flight.
func (p *uringCompleter) submit(s uringSQE) {
	p.ops++
	p.r.push(s)
}

// cancel1 asks the kernel to end fd's request of kind; its last
// completion says when it did.
func (p *uringCompleter) cancel1(kind uint64, fd int, g *uringReg) {
	c := uringSQE{opcode: uringOpAsyncCancel, fd: -1, addr: uringOpData(kind, fd, g.gen), userData: uringRemoveData}
	if p.r.features&uringFeatCQESkip != 0 {
		c.flags = uringSQECQESkipSuccess
	}
	p.r.push(c)
}

// complete handles the completion of a socket request.
func (p *uringCompleter) complete(kind uint64, fd int, gen uint32, c uringCQE) {
	more := c.flags&uringCQEFMore != 0
	if !more {
		p.ops--
	}
	var g *uringReg
	if fd < len(p.regs) && p.regs[fd].gen == gen && p.regs[fd].sock != nil {
		g = &p.regs[fd]
	}
	if g != nil && g.sock.end >= endClose && (kind == uringKindRecv || kind == uringKindAccept) {
		g = nil // closed by its handler, only its last bytes still going
	}
	errno := unix.Errno(0)
	if c.res < 0 {
		errno = unix.Errno(-c.res)
	}
	switch kind {
	case uringKindRecv:
		p.recvDone(fd, g, c, more, errno)
	case uringKindSend:
		if g != nil { // it is: a socket stays registered until its sends end
			p.sendDone(fd, g, c.res)
		}
	case uringKindAccept:
		p.acceptDone(fd, g, c, more, errno)
	case uringKindPollOut:
		if g != nil {
			p.pollOutDone(fd, g, c, errno)
		}
	}
}
