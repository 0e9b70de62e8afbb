//go:build linux

package netpoll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// A socket's sends in completion mode: Write copies into send buffers,
// one send per socket is in flight at a time, and a send that could not
// go whole waits for room (POLLOUT) before the rest.
//
// A socket's send state is two small enums, changed only by the functions
// in this file:
//
//	send (where the bytes are)     event                        next
//	sendIdle                       bytes queued (submitSend)    sendFlying
//	sendFlying                     went whole, cancelled,       sendIdle
//	                               failed (err, tx dropped)
//	sendFlying                     went short, EAGAIN           sendWaiting (POLLOUT armed)
//	sendWaiting                    room (pollOutDone)           sendFlying
//
//	end (once tx drains)           event                        next
//	endNone                        Shutdown with bytes queued   endShut
//	endNone, endShut               Close (closeSends)           endClose
//	endNone, endShut, endClose     reset, the drain bound       endReset
//	endShut                        tx drained: shutdown(2)      endNone
//	endClose, endReset             tx drained: close(2)         (the socket is gone)
//
// A ring that a hand-over stopped starts no send (idle stays idle). A close
// after a Shutdown whose bytes are still queued closes once they went:
// close(2) sends the FIN that shutdown(2) would have.

// sendState is where a socket's bytes are.
type sendState uint8

const (
	sendIdle    sendState = iota // no send in flight
	sendFlying                   // one send in flight: flying bytes of tx[0]
	sendWaiting                  // a send went short: the rest waits for POLLOUT
)

// sendEnd is what happens once a socket's queued bytes are sent.
type sendEnd uint8

const (
	endNone  sendEnd = iota
	endShut          // shut the sending side (Desc.Shutdown)
	endClose         // close the descriptor (Desc.Close)
	endReset         // drop what is queued and close at once (ResetOnClose, the drain bound)
)

// uringSend is a socket's send side.
type uringSend struct {
	tx      [][]byte // send buffers; each one's length is how far it is filled
	txStart int      // tx[0][txStart:] is not sent yet
	send    sendState
	end     sendEnd
	flying  int    // bytes of the send in flight (send == sendFlying)
	seq     uint32 // counts the socket's sends, to name one (uringSendRef)
	err     unix.Errno
	refused bool // Write refused bytes: tell the handler when room frees
}

func (p *uringCompleter) write(d *Desc, b []byte) (int, error) {
	g := &p.regs[d.fd]
	s := g.sock
	if s.err != 0 {
		return 0, s.err
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
		s.refused = true
		return n, unix.EAGAIN
	}
	return n, nil
}

// submitSend starts the next send: idle -> flying.
func (p *uringCompleter) submitSend(fd int, g *uringReg) {
	s := g.sock
	if p.stopping || s.send != sendIdle || len(s.tx) == 0 {
		return
	}
	b := s.tx[0][s.txStart:]
	s.send, s.flying = sendFlying, len(b)
	s.seq++
	sqe := uringSQE{opcode: uringOpSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&b[0]))), len: uint32(len(b)),
		opFlags: unix.MSG_NOSIGNAL | unix.MSG_WAITALL | unix.MSG_DONTWAIT, userData: uringOpData(uringKindSend, fd, g.gen)}
	if p.r.features&uringFeatCQESkip != 0 {
		sqe.flags = uringSQECQESkipSuccess
		p.unissued = append(p.unissued, uringSendRef{fd: int32(fd), gen: g.gen, seq: s.seq})
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
func (p *uringCompleter) issue() {
	if len(p.r.backlog) > 0 || p.r.pending() > 0 {
		return // some are still queued: wait until all went in
	}
	p.issued = append(p.issued, p.unissued...)
	p.unissued = p.unissued[:0]
}

// urgentSends reports whether a send not yet finished is news someone
// waits for: more bytes queued behind it (one send per socket is in
// flight, so they go only once it is finished), a writer that was
// refused, a shutdown or a close. A wait must not sleep on those, as
// their success posts no completion.
func (p *uringCompleter) urgentSends() bool {
	if len(p.issued) > 0 {
		return true // finishSends had no room for them in the last wait
	}
	for _, ref := range p.unissued {
		if g := &p.regs[ref.fd]; g.gen == ref.gen && g.sock != nil {
			if s := g.sock; s.refused || s.end != endNone || s.queuedBehind() {
				return true
			}
		}
	}
	return false
}

// queuedBehind reports whether bytes were written after those the send
// in flight carries.
func (s *uringSock) queuedBehind() bool {
	return s.send == sendFlying && (len(s.tx) > 1 || len(s.tx[0])-s.txStart > s.flying)
}

// finishSends completes the issued sends that posted nothing: they went
// whole. Only once every completion the kernel posted was read (a send
// that failed posted one), and while evs has room for what they report.
func (p *uringCompleter) finishSends(evs []Ready, n int) int {
	if len(p.issued) == 0 || p.r.ready() > 0 || len(evs)-n < len(p.issued) {
		return n
	}
	p.evs, p.nout = evs, n
	for _, ref := range p.issued {
		g := &p.regs[ref.fd]
		if g.gen != ref.gen || g.sock == nil || g.sock.seq != ref.seq || g.sock.send != sendFlying {
			continue // it failed, and its completion was handled
		}
		p.ops--
		p.sendDone(int(ref.fd), g, int32(g.sock.flying))
	}
	p.issued = p.issued[:0]
	return p.nout
}

// sendDone handles the end of fd's send in flight: res bytes went out, or
// the error that stopped it. flying -> idle or waiting.
func (p *uringCompleter) sendDone(fd int, g *uringReg, res int32) {
	s := g.sock
	sent := s.flying
	s.send, s.flying = sendIdle, 0
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
		if int(res) < sent && s.end != endReset {
			// The socket buffer filled: go on when it drains.
			s.send = sendWaiting
			p.armPollOut(fd, g)
		}
	case errno == unix.EAGAIN && s.end != endReset:
		s.send = sendWaiting
		p.armPollOut(fd, g)
	case errno == unix.ECANCELED && s.end != endReset:
		// A hand-over stopped it; what is left moves on.
	default:
		if errno != unix.ECANCELED {
			s.err = errno
		}
		p.dropTx(s)
		p.report(g, EventWrite|EventErr)
	}
	if s.end == endReset {
		p.dropTx(s) // a reset sends nothing more, a short send's rest included
	}
	if len(s.tx) > 0 {
		p.submitSend(fd, g)
	} else {
		switch s.end {
		case endShut:
			s.end = endNone
			unix.Shutdown(fd, unix.SHUT_WR)
		case endClose, endReset:
			p.finishClose(fd, g)
			return
		}
	}
	if s.refused && s.room() > 0 {
		s.refused = false
		p.report(g, EventWrite)
	}
}

func (p *uringCompleter) armPollOut(fd int, g *uringReg) {
	if g.sock.pollOutLive || p.stopping {
		// A hand-over: a send it finished short arms nothing it would then
		// wait for; the bytes left move on with the rest.
		return
	}
	g.sock.pollOutLive = true
	p.submit(uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: poll32(unix.POLLOUT | pollRDHUP),
		userData: uringOpData(uringKindPollOut, fd, g.gen)})
}

// pollOutDone handles the end of a wait for room: a send waiting for it
// goes on, and a handler that asked for EventWrite hears it.
func (p *uringCompleter) pollOutDone(fd int, g *uringReg, c uringCQE, errno unix.Errno) {
	s := g.sock
	s.pollOutLive = false
	if s.send == sendWaiting && errno != unix.ECANCELED {
		s.send = sendIdle
		p.submitSend(fd, g) // waiting -> flying; its error, if any, is the send's to meet
	}
	if s.end >= endClose {
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
func (p *uringCompleter) dropTx(s *uringSock) {
	for i, b := range s.tx {
		if i == 0 && s.send == sendFlying {
			continue
		}
		p.chunks.put(b)
	}
	if s.send == sendFlying {
		s.tx = s.tx[:1]
		return
	}
	s.tx, s.txStart = s.tx[:0], 0
}

// shutdown shuts the sending side now, or once the queued bytes went.
func (p *uringCompleter) shutdown(d *Desc) error {
	s := p.sock(d)
	if len(s.tx) > 0 {
		if s.end == endNone {
			s.end = endShut // after the last send
		}
		return nil
	}
	return unix.Shutdown(d.fd, unix.SHUT_WR)
}

// closeSends makes the socket close once its queued bytes went, or at
// once dropping them when reset (then a send in flight is cancelled, and
// its end, sendDone, drops the rest and closes). It reports whether
// nothing is left to wait for: then the caller closes now.
func (p *uringCompleter) closeSends(fd int, g *uringReg, reset bool) bool {
	s := g.sock
	s.end = endClose
	if reset {
		s.end = endReset
		p.dropTx(s)
		if s.send == sendFlying {
			p.cancel1(uringKindSend, fd, g)
		}
	}
	return len(s.tx) == 0
}
