//go:build linux

package netpoll

import (
	"fmt"
	"os"

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

// uringSock is a registration's completion state.
type uringSock struct {
	want Interest

	recvLive, recvStop bool // a receive is armed; its cancellation was asked for
	acceptLive         bool
	pollOutLive        bool

	rx     []uringPiece // received into provided buffers, not yet read
	rxHeap []byte       // received bytes that outlived an iteration, copied off the buffers
	eof    bool
	rxErr  unix.Errno

	accepted  []int
	acceptErr unix.Errno

	uringSend        // the send side (uring_send_linux.go)
	drain     *Timer // bounds a closing socket's wait for its last sends
}

// startCompletion turns p into a completion backend where the kernel
// and the environment allow; it stays a readiness backend otherwise.
func (p *uringPoller) startCompletion() {
	if b, err := completionBuffers(p.r); err == nil {
		p.bufs, p.cio = b, true
	}
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

func (p *uringPoller) sockIO() sockIO {
	if p.cio {
		return p
	}
	return nil
}

// sock returns d's completion state.
func (p *uringPoller) sock(d *Desc) *uringSock { return p.regs[d.fd].sock }

func (p *uringPoller) addSock(fd int, want Interest, tok Token) error {
	g := &p.regs[fd]
	if g.gen != 0 {
		return unix.EEXIST // a descriptor is closed through its Desc, which tells the ring
	}
	if p.gen++; p.gen >= uringGenLimit {
		p.gen = 1
	}
	s := g.sock
	if s == nil {
		s = new(uringSock)
	}
	*s = uringSock{rx: s.rx[:0], uringSend: uringSend{tx: s.tx[:0]}}
	*g = uringReg{tok: tok, gen: p.gen, sock: s}
	return p.modifySock(fd, g, want, tok)
}

// modifySock arms what the handler's interest needs: a receive for Read,
// an accept on a listener, a wait for writability for Write while
// nothing is being sent (a connect in progress). A receive is not
// stopped when Read is dropped: a handler pausing its reads leaves the
// bytes that arrive to settle, which stops it.
func (p *uringPoller) modifySock(fd int, g *uringReg, want Interest, tok Token) error {
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
func (p *uringPoller) submit(s uringSQE) {
	p.ops++
	p.r.push(s)
}

// cancel1 asks the kernel to end fd's request of kind; its last
// completion says when it did.
func (p *uringPoller) cancel1(kind uint64, fd int, g *uringReg) {
	c := uringSQE{opcode: uringOpAsyncCancel, fd: -1, addr: uringOpData(kind, fd, g.gen), userData: uringRemoveData}
	if p.r.features&uringFeatCQESkip != 0 {
		c.flags = uringSQECQESkipSuccess
	}
	p.r.push(c)
}

// complete handles the completion of a socket request.
func (p *uringPoller) complete(kind uint64, fd int, gen uint32, c uringCQE) {
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
