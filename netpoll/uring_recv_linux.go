//go:build linux

package netpoll

import "golang.org/x/sys/unix"

// A socket's receives in completion mode: one multishot receive into the
// loop's provided buffers, the bytes it took held until the handler reads
// them, and settled off the buffers when the handler leaves them unread.

// uringPiece is received bytes in provided buffer bid: [off, end).
type uringPiece struct {
	bid      uint16
	off, end int32
}

// recvState is where a socket's receive request is; only armRecv,
// stopRecv and recvDone change it.
type recvState uint8

const (
	recvOff        recvState = iota // none armed
	recvArmed                       // a multishot receive is armed
	recvCancelling                  // ...and its cancellation was asked for
)

func (p *uringCompleter) armRecv(fd int, g *uringReg) {
	s := g.sock
	if s.recv != recvOff || s.eof || s.rxErr != 0 || p.stopping {
		return
	}
	s.recv = recvArmed
	sqe := uringSQE{opcode: uringOpRecv, fd: int32(fd), ioprio: uringRecvMultishot, flags: uringSQEBufferSelect,
		bufIndex: uringBufGroup, userData: uringOpData(uringKindRecv, fd, g.gen)}
	if !p.noRecvBudget {
		sqe.spliceFDIn = uringRecvBudget // sqe.optlen
	}
	p.submit(sqe)
}

// uringRecvBudget is the most one armed receive takes before it ends
// (sqe.optlen of a multishot receive, Linux 6.17): the bound on what a
// socket whose handler stopped reading can pull off its socket buffer.
// Without it a multishot receive takes whatever arrives, up to 32
// buffers each time the socket wakes it, and a handler holding its reads
// for backpressure would hold those bytes on the heap (see settle). A
// kernel that refuses it with EINVAL gets receives without a budget.
const uringRecvBudget = 64 << 10

func (p *uringCompleter) stopRecv(fd int, g *uringReg) {
	if s := g.sock; s.recv == recvArmed {
		s.recv = recvCancelling
		p.cancel1(uringKindRecv, fd, g)
	}
}

// wantsRecv reports whether a receive should be armed: the handler reads
// and has read everything received so far.
func (s *uringSock) wantsRecv() bool {
	return s.want&(Read|accepting) == Read && len(s.rx) == 0 && len(s.rxHeap) == 0 && !s.eof && s.rxErr == 0
}

// recvDone handles a receive's completion; g is nil when the socket is
// gone or closing, and then only the buffer is given back.
func (p *uringCompleter) recvDone(fd int, g *uringReg, c uringCQE, more bool, errno unix.Errno) {
	if c.flags&uringCQEFBuffer != 0 {
		bid := uint16(c.flags >> 16)
		p.bufs.took()
		if g == nil || c.res <= 0 {
			p.bufs.give(bid)
		} else {
			s := g.sock
			if len(s.rx) == 0 {
				p.holding = append(p.holding, int32(fd))
			}
			s.rx = append(s.rx, uringPiece{bid: bid, end: c.res})
		}
	}
	if g == nil {
		return
	}
	s := g.sock
	if !more {
		s.recv = recvOff
	}
	switch {
	case c.res > 0:
		p.report(g, EventRead)
	case c.res == 0:
		s.eof = true
		p.report(g, EventRead|EventHup)
	case errno == unix.ENOBUFS:
		p.starved = append(p.starved, int32(fd))
		return
	case errno == unix.ECANCELED:
	case errno == unix.EINVAL && !p.noRecvBudget:
		p.noRecvBudget = true
	default:
		s.rxErr = errno
		p.report(g, EventRead|EventErr)
	}
	if !more && s.wantsRecv() {
		p.armRecv(fd, g)
	}
}

// settle runs before each wait. Bytes a handler left in provided buffers
// through a whole iteration (it paused its reads, or ran out of its read
// budget) are copied off them, and its receive is stopped: the buffers
// go back to the loop's other sockets, and the kernel's socket buffer,
// then TCP's window, hold what comes next, as they would on epoll. A
// receive that found no buffers is armed again once there are some.
func (p *uringCompleter) settle() {
	for _, fd := range p.holding {
		g := &p.regs[fd]
		s := g.sock
		if g.gen == 0 || s == nil || len(s.rx) == 0 {
			continue
		}
		p.keepRx(s)
		p.stopRecv(int(fd), g)
	}
	p.holding = p.holding[:0]
	if len(p.starved) > 0 && p.bufs.lent > 0 {
		for _, fd := range p.starved {
			if g := &p.regs[fd]; g.gen != 0 && g.sock != nil && g.sock.wantsRecv() {
				p.armRecv(int(fd), g)
			}
		}
		p.starved = p.starved[:0]
	}
	p.bufs.publish()
}

// keepRx copies the bytes s holds in provided buffers onto the heap,
// after those it kept before, and gives the buffers back.
func (p *uringCompleter) keepRx(s *uringSock) {
	for _, pc := range s.rx {
		s.rxHeap = append(s.rxHeap, p.bufs.buf(pc.bid)[pc.off:pc.end]...)
		p.bufs.give(pc.bid)
	}
	s.rx = s.rx[:0]
}

// dropRx forgets what s received and has not read, giving the buffers
// back.
func (p *uringCompleter) dropRx(s *uringSock) {
	for _, pc := range s.rx {
		p.bufs.give(pc.bid)
	}
	s.rx, s.rxHeap = s.rx[:0], nil
}

func (p *uringCompleter) read(d *Desc, b []byte) (int, error) {
	g := &p.regs[d.fd]
	s := g.sock
	n := copy(b, s.rxHeap)
	if n > 0 {
		if s.rxHeap = s.rxHeap[n:]; len(s.rxHeap) == 0 {
			s.rxHeap = nil
		}
	}
	for n < len(b) && len(s.rx) > 0 {
		pc := &s.rx[0]
		k := copy(b[n:], p.bufs.buf(pc.bid)[pc.off:pc.end])
		n += k
		if pc.off += int32(k); pc.off == pc.end {
			p.bufs.give(pc.bid)
			s.rx = s.rx[1:]
		}
	}
	if len(s.rx) == 0 {
		s.rx = s.rx[:0:cap(s.rx)]
		if s.wantsRecvAfterRead() {
			p.armRecv(d.fd, g)
		}
	}
	switch {
	case n > 0:
		return n, nil
	case s.rxErr != 0:
		return 0, s.rxErr
	case s.eof:
		return 0, nil
	}
	return 0, unix.EAGAIN
}

// wantsRecvAfterRead: a handler that read everything wants what comes
// next, whatever its interest says at this moment.
func (s *uringSock) wantsRecvAfterRead() bool {
	return s.want&accepting == 0 && len(s.rxHeap) == 0 && !s.eof && s.rxErr == 0
}

func (p *uringCompleter) peek(d *Desc, b []byte) (int, error) {
	g := &p.regs[d.fd]
	s := g.sock
	if len(s.rxHeap) > 0 {
		return copy(b, s.rxHeap), nil
	}
	if len(s.rx) > 0 {
		pc := s.rx[0]
		return copy(b, p.bufs.buf(pc.bid)[pc.off:pc.end]), nil
	}
	switch {
	case s.rxErr != 0:
		return 0, s.rxErr
	case s.eof:
		return 0, nil
	}
	p.armRecv(d.fd, g)
	return 0, unix.EAGAIN
}
