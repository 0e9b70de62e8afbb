//go:build linux

package netpoll

import (
	"fmt"
	"os"
	"time"
	"unsafe"

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

// uringDrainTimeout bounds how long a closed socket's last bytes may wait
// for a peer that does not read them: then it is reset. On epoll those
// bytes sit in the kernel's socket buffer of an orphaned socket, which no
// longer counts among the process's descriptors; here the descriptor
// stays open while they wait, so the bound is kept short. A peer that
// reads nothing for 10 s after the response was complete loses its last
// (at most 128 KiB) bytes.
const uringDrainTimeout = 10 * time.Second

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

	tx       [][]byte // send buffers; each one's length is how far it is filled
	txStart  int      // tx[0][txStart:] is not sent yet
	sending  int      // bytes of it in flight (0: no send in flight)
	txErr    unix.Errno
	wblocked bool   // Write refused bytes: tell the handler when room frees
	sendSeq  uint32 // counts the socket's sends, to name one (uringSendRef)
	outWait  bool   // the socket buffer is full: the next send waits for POLLOUT
	shut     bool   // shut the sending side when tx drains
	closing  bool   // closed by the handler: close the descriptor when tx drains
	reset    bool   // ...or at once, dropping tx
	drain    *Timer // bounds a closing socket's wait for its last sends
}

// uringPiece is received bytes in provided buffer bid: [off, end).
type uringPiece struct {
	bid      uint16
	off, end int32
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
	*s = uringSock{rx: s.rx[:0], tx: s.tx[:0]}
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
	if want&Write != 0 && s.sending == 0 {
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

func (p *uringPoller) armRecv(fd int, g *uringReg) {
	s := g.sock
	if s.recvLive || s.eof || s.rxErr != 0 || p.stopping {
		return
	}
	s.recvLive, s.recvStop = true, false
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

func (p *uringPoller) stopRecv(fd int, g *uringReg) {
	if s := g.sock; s.recvLive && !s.recvStop {
		s.recvStop = true
		p.cancel1(uringKindRecv, fd, g)
	}
}

// wantsRecv reports whether a receive should be armed: the handler reads
// and has read everything received so far.
func (s *uringSock) wantsRecv() bool {
	return s.want&(Read|accepting) == Read && len(s.rx) == 0 && len(s.rxHeap) == 0 && !s.eof && s.rxErr == 0
}

func (p *uringPoller) armAccept(fd int, g *uringReg) {
	s := g.sock
	if s.acceptLive || p.stopping {
		return
	}
	s.acceptLive, s.acceptErr = true, 0
	p.submit(uringSQE{opcode: uringOpAccept, fd: int32(fd), ioprio: uringAcceptMultishot,
		opFlags: unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, userData: uringOpData(uringKindAccept, fd, g.gen)})
}

func (p *uringPoller) submitSend(fd int, g *uringReg) {
	s := g.sock
	if p.stopping || s.sending > 0 || len(s.tx) == 0 || s.outWait {
		return
	}
	b := s.tx[0][s.txStart:]
	s.sending = len(b)
	s.sendSeq++
	sqe := uringSQE{opcode: uringOpSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&b[0]))), len: uint32(len(b)),
		opFlags: unix.MSG_NOSIGNAL | unix.MSG_WAITALL | unix.MSG_DONTWAIT, userData: uringOpData(uringKindSend, fd, g.gen)}
	if p.r.features&uringFeatCQESkip != 0 {
		sqe.flags = uringSQECQESkipSuccess
		p.unissued = append(p.unissued, uringSendRef{fd: int32(fd), gen: g.gen, seq: s.sendSeq})
	}
	p.submit(sqe)
}

// Sends are submitted with MSG_DONTWAIT, MSG_WAITALL and, where the kernel
// has it, IOSQE_CQE_SKIP_SUCCESS. MSG_DONTWAIT makes the kernel try a send
// once, inside the io_uring_enter that submits it, and never park it on
// the socket's wait queue; MSG_WAITALL makes a send that could not go
// whole a failure, which posts a completion with the bytes it sent (or
// EAGAIN); a send that went whole posts nothing. So the sends an enter
// submitted are finished when it returns: those without a completion went
// whole, and a socket whose buffer filled waits for POLLOUT before its
// next send. The gain: a wait is no longer ended by the loop's own sends
// completing inside it, so a round trip takes one wait instead of two.

// uringSendRef names one send: the socket's registration and its count.
type uringSendRef struct {
	fd       int32
	gen, seq uint32
}

// issue notes that the enter just made took the sends queued before it.
func (p *uringPoller) issue() {
	if len(p.r.backlog) > 0 || p.r.pending() > 0 {
		return // some are still queued: wait until all went in
	}
	p.issued = append(p.issued, p.unissued...)
	p.unissued = p.unissued[:0]
}

// urgentSends reports whether a queued send's success is news someone
// waits for: a writer that was refused, a shutdown or a close behind it.
// A wait must not sleep on those, as their success posts no completion.
func (p *uringPoller) urgentSends() bool {
	for _, ref := range p.unissued {
		if g := &p.regs[ref.fd]; g.gen == ref.gen && g.sock != nil {
			if s := g.sock; s.wblocked || s.shut || s.closing {
				return true
			}
		}
	}
	return false
}

// finishSends completes the issued sends that posted nothing: they went
// whole. Only once every completion the kernel posted was read (a send
// that failed posted one), and while evs has room for what they report.
func (p *uringPoller) finishSends(evs []Ready, n int) int {
	if len(p.issued) == 0 || p.r.ready() > 0 || len(evs)-n < len(p.issued) {
		return n
	}
	p.evs, p.nout = evs, n
	for _, ref := range p.issued {
		g := &p.regs[ref.fd]
		if g.gen != ref.gen || g.sock == nil || g.sock.sendSeq != ref.seq || g.sock.sending == 0 {
			continue // it failed, and its completion was handled
		}
		p.ops--
		p.sendDone(int(ref.fd), g, int32(g.sock.sending))
	}
	p.issued = p.issued[:0]
	return p.nout
}

func (p *uringPoller) armPollOut(fd int, g *uringReg) {
	if g.sock.pollOutLive || p.stopping {
		// handOver: a send it finished short arms nothing it would then
		// wait for; the bytes left move on with the rest.
		return
	}
	g.sock.pollOutLive = true
	p.submit(uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: poll32(unix.POLLOUT | pollRDHUP),
		userData: uringOpData(uringKindPollOut, fd, g.gen)})
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
	if g != nil && g.sock.closing && (kind == uringKindRecv || kind == uringKindAccept) {
		g = nil // closed by its handler, only its last bytes still going
	}
	errno := unix.Errno(0)
	if c.res < 0 {
		errno = unix.Errno(-c.res)
	}
	switch kind {
	case uringKindRecv:
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
			s.recvLive, s.recvStop = false, false
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
	case uringKindSend:
		if g == nil {
			return // cannot be: a socket stays registered until its sends end
		}
		p.sendDone(fd, g, c.res)
	case uringKindAccept:
		if g == nil {
			if c.res >= 0 {
				unix.Close(int(c.res))
			}
			return
		}
		s := g.sock
		if !more {
			s.acceptLive = false
		}
		switch {
		case c.res >= 0:
			s.accepted = append(s.accepted, int(c.res))
		case errno == unix.ECANCELED:
			return
		default:
			s.acceptErr = errno
		}
		p.report(g, EventRead)
		if !more && s.acceptErr == 0 && s.want&accepting != 0 {
			p.armAccept(fd, g)
		}
	case uringKindPollOut:
		if g == nil {
			return
		}
		s := g.sock
		s.pollOutLive = false
		if s.outWait && errno != unix.ECANCELED {
			s.outWait = false
			p.submitSend(fd, g) // its error, if any, is the send's to meet
		}
		if s.closing {
			return
		}
		switch {
		case errno == unix.ECANCELED:
		case c.res < 0:
			p.report(g, EventWrite|EventErr)
		default:
			if e := uringReadiness(uint32(c.res)); e != 0 {
				p.report(g, e)
			}
		}
	}
}

// sendDone handles the end of fd's send in flight: res bytes went out, or
// the error that stopped it.
func (p *uringPoller) sendDone(fd int, g *uringReg, res int32) {
	s := g.sock
	sent := s.sending
	s.sending = 0
	errno := unix.Errno(0)
	if res < 0 {
		errno = unix.Errno(-res)
	}
	switch {
	case res >= 0:
		s.txStart += int(res)
		if s.txStart == len(s.tx[0]) {
			p.chunks.put(s.tx[0])
			s.tx = append(s.tx[:0], s.tx[1:]...)
			s.txStart = 0
		}
		if int(res) < sent && !s.reset {
			// The socket buffer filled: go on when it drains.
			s.outWait = true
			p.armPollOut(fd, g)
		}
	case errno == unix.EAGAIN && !s.reset:
		s.outWait = true
		p.armPollOut(fd, g)
	case errno == unix.ECANCELED && !s.reset:
		// handOver stopped it; what is left moves on.
	default:
		if errno != unix.ECANCELED {
			s.txErr = errno
		}
		p.dropTx(s)
		p.report(g, EventWrite|EventErr)
	}
	if s.reset {
		p.dropTx(s) // a reset sends nothing more, a short send's rest included
	}
	if len(s.tx) > 0 {
		p.submitSend(fd, g)
	} else {
		if s.shut {
			s.shut = false
			unix.Shutdown(fd, unix.SHUT_WR)
		}
		if s.closing {
			p.finishClose(fd, g)
			return
		}
	}
	if s.wblocked && s.room() > 0 {
		s.wblocked = false
		p.report(g, EventWrite)
	}
}

// room is how many more bytes Write takes now.
func (s *uringSock) room() int {
	n := (uringSendChunks - len(s.tx)) * uringChunkSize
	if k := len(s.tx); k > 0 {
		n += cap(s.tx[k-1]) - len(s.tx[k-1])
	}
	return n
}

// unsent copies the bytes written and not yet sent.
func (s *uringSock) unsent() []byte {
	var out []byte
	for i, b := range s.tx {
		if i == 0 {
			b = b[s.txStart:]
		}
		out = append(out, b...)
	}
	return out
}

// dropTx gives back every send buffer but one in flight.
func (p *uringPoller) dropTx(s *uringSock) {
	for i, b := range s.tx {
		if i == 0 && s.sending > 0 {
			continue
		}
		p.chunks.put(b)
	}
	if s.sending > 0 {
		s.tx = s.tx[:1]
		return
	}
	s.tx, s.txStart = s.tx[:0], 0
}

// settle runs before each wait. Bytes a handler left in provided buffers
// through a whole iteration (it paused its reads, or ran out of its read
// budget) are copied off them, and its receive is stopped: the buffers
// go back to the loop's other sockets, and the kernel's socket buffer,
// then TCP's window, hold what comes next, as they would on epoll. A
// receive that found no buffers is armed again once there are some.
func (p *uringPoller) settle() {
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
func (p *uringPoller) keepRx(s *uringSock) {
	for _, pc := range s.rx {
		s.rxHeap = append(s.rxHeap, p.bufs.buf(pc.bid)[pc.off:pc.end]...)
		p.bufs.give(pc.bid)
	}
	s.rx = s.rx[:0]
}

// dropRx forgets what s received and has not read, giving the buffers
// back.
func (p *uringPoller) dropRx(s *uringSock) {
	for _, pc := range s.rx {
		p.bufs.give(pc.bid)
	}
	s.rx, s.rxHeap = s.rx[:0], nil
}

func (p *uringPoller) read(d *Desc, b []byte) (int, error) {
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

func (p *uringPoller) peek(d *Desc, b []byte) (int, error) {
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

func (p *uringPoller) write(d *Desc, b []byte) (int, error) {
	g := &p.regs[d.fd]
	s := g.sock
	if s.txErr != 0 {
		return 0, s.txErr
	}
	n := 0
	for n < len(b) {
		k := len(s.tx)
		if k == 0 || len(s.tx[k-1]) == cap(s.tx[k-1]) {
			if k == uringSendChunks {
				break
			}
			c, err := p.chunks.get()
			if err != nil {
				if n == 0 && len(s.tx) == 0 {
					// Nothing in flight would ever say "try again".
					return 0, unix.ENOBUFS
				}
				break
			}
			s.tx = append(s.tx, c[:0])
			k++
		}
		last := s.tx[k-1]
		m := copy(last[len(last):cap(last)], b[n:])
		s.tx[k-1] = last[:len(last)+m]
		n += m
	}
	p.submitSend(d.fd, g)
	if n < len(b) {
		s.wblocked = true
		return n, unix.EAGAIN
	}
	return n, nil
}

func (p *uringPoller) accept(d *Desc) (int, unix.Sockaddr, error) {
	g := &p.regs[d.fd]
	s := g.sock
	for len(s.accepted) > 0 {
		fd := s.accepted[0]
		s.accepted = s.accepted[1:]
		// A multishot accept cannot write each peer's address: one
		// buffer would serve every completion.
		sa, err := unix.Getpeername(fd)
		if err != nil {
			unix.Close(fd)
			continue // reset before it was taken
		}
		return fd, sa, nil
	}
	if e := s.acceptErr; e != 0 {
		s.acceptErr = 0
		return -1, nil, e
	}
	if s.want&accepting != 0 {
		p.armAccept(d.fd, g)
	}
	return -1, nil, unix.EAGAIN
}

func (p *uringPoller) shutdown(d *Desc) error {
	s := p.sock(d)
	if len(s.tx) > 0 {
		s.shut = true // after the last send
		return nil
	}
	return unix.Shutdown(d.fd, unix.SHUT_WR)
}

// cancelWaits cancels fd's receive, accept and write-readiness wait.
func (p *uringPoller) cancelWaits(fd int, g *uringReg) {
	s := g.sock
	p.stopRecv(fd, g)
	if s.acceptLive {
		p.cancel1(uringKindAccept, fd, g)
	}
	if s.pollOutLive && (!s.outWait || p.stopping) {
		p.cancel1(uringKindPollOut, fd, g)
	}
}

// stopAll cancels fd's receive, accept and write-readiness wait and gives
// back what it received and accepted.
func (p *uringPoller) stopAll(fd int, g *uringReg) {
	s := g.sock
	p.cancelWaits(fd, g)
	p.dropRx(s)
	for _, afd := range s.accepted {
		unix.Close(afd)
	}
	s.accepted = nil
}

func (p *uringPoller) close(d *Desc) error {
	fd := d.fd
	g := &p.regs[fd]
	s := g.sock
	p.stopAll(fd, g)
	s.want = 0
	if d.reset {
		p.resetTx(fd, g)
	}
	if len(s.tx) == 0 {
		return p.finishClose(fd, g)
	}
	// The last bytes still go, as close(2) would leave them to the kernel.
	s.closing = true
	gen := g.gen
	s.drain = d.loop.AfterFunc(uringDrainTimeout, func() {
		if g := &p.regs[fd]; g.gen == gen && g.sock.closing && !g.sock.reset {
			unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			if p.resetTx(fd, g); len(g.sock.tx) == 0 {
				p.finishClose(fd, g)
			}
		}
	})
	return nil
}

// resetTx drops what fd was to send: all of it but a send in flight,
// which is cancelled, and whose end (sendDone) drops the rest.
func (p *uringPoller) resetTx(fd int, g *uringReg) {
	s := g.sock
	s.reset = true
	p.dropTx(s)
	if s.sending > 0 {
		p.cancel1(uringKindSend, fd, g)
	}
}

// finishClose closes fd. Completions of its requests still on their way
// carry a generation nobody has any more and are dropped.
func (p *uringPoller) finishClose(fd int, g *uringReg) error {
	s := g.sock
	s.closing = false
	if s.drain != nil {
		s.drain.Stop()
		s.drain = nil
	}
	p.dropRx(s)
	if s.pollOutLive {
		// A request holds the socket open in the kernel after close(2):
		// the wait for room, kept while sends needed it, goes too.
		p.cancel1(uringKindPollOut, fd, g)
	}
	s.outWait = false
	g.gen = 0
	return unix.Close(fd)
}

func (p *uringPoller) detach(d *Desc) error {
	g := &p.regs[d.fd]
	p.stopAll(d.fd, g)
	p.dropTx(g.sock)
	g.gen = 0
	return nil
}

// handOver stops every request on the ring and moves what the sockets
// hold into their descriptors (see sockIO). It waits, a bounded
// time, until the kernel has ended each request: only then may another
// backend watch the same sockets, and the buffers be unmapped.
func (p *uringPoller) handOver(descs []*Desc) error {
	p.stopping = true
	for fd := range p.regs {
		g := &p.regs[fd]
		if g.gen == 0 || g.sock == nil {
			continue
		}
		s := g.sock
		p.cancelWaits(fd, g)
		if s.sending > 0 {
			p.cancel1(uringKindSend, fd, g)
		}
	}
	evs := make([]Ready, 1024)
	deadline := time.Now().Add(2 * time.Second)
	for p.ops > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			p.stopping = false
			p.resume(descs)
			return fmt.Errorf("%d io_uring requests did not end", p.ops)
		}
		if _, err := p.Wait(evs, min(wait, 50*time.Millisecond)); err != nil {
			p.stopping = false
			p.resume(descs)
			return err
		}
	}
	for _, d := range descs {
		g := &p.regs[d.fd]
		if g.gen == 0 || g.sock == nil {
			continue
		}
		s := g.sock
		var m moved
		if d.moved != nil {
			m = *d.moved // older than anything the ring received
		}
		p.keepRx(s)
		m.in = append(m.in, s.rxHeap...)
		// What the ring was to send went before what the handler could
		// not hand it yet.
		m.out = append(s.unsent(), m.out...)
		m.fds = append(m.fds, s.accepted...)
		s.accepted = nil
		p.dropTx(s)
		p.stopAll(d.fd, g)
		d.moved = &m
		d.tidyMoved()
		g.gen = 0
	}
	// Sockets closed by their handlers, whose last bytes were still
	// going: what the socket takes now goes, as from a socket buffer.
	for fd := range p.regs {
		if g := &p.regs[fd]; g.gen != 0 && g.sock != nil && g.sock.closing {
			s := g.sock
			RawWrite(fd, s.unsent())
			p.dropTx(s)
			p.finishClose(fd, g)
		}
	}
	return nil
}

// resume arms again what handOver stopped, when it could not finish.
func (p *uringPoller) resume(descs []*Desc) {
	for _, d := range descs {
		g := &p.regs[d.fd]
		if g.gen == 0 || g.sock == nil {
			continue
		}
		p.modifySock(d.fd, g, g.sock.want, g.tok)
		p.submitSend(d.fd, g)
	}
}

// freeBuffers lets go of the buffers, unless the kernel may still use
// them: a ring closed with requests in flight ends them on its own time.
func (p *uringPoller) freeBuffers() {
	if !p.cio || p.ops > 0 {
		return
	}
	p.bufs.unregister(p.r)
	p.bufs.unmap()
	p.chunks.unmap()
}
