//go:build linux

package netpoll

import (
	"errors"
	"fmt"
	"time"
)

// Handing a completion-mode ring's sockets over to the loop's next
// backend (a live switch away from io_uring), in two steps that never
// block the loop:
//
//  1. stop: nothing new is submitted and every request on the ring is
//     cancelled. The loop goes on serving meanwhile: handlers read what
//     the ring already received and write into its send buffers, which
//     hold what they write. The kernel ends the cancelled requests
//     inside the next io_uring_enter (a cancelled send reports how much
//     it sent), and the Wait that reaps the last one calls stop's done.
//  2. handOver: what the sockets hold (bytes received and not read,
//     written and not sent, connections accepted and not taken) moves
//     into their descriptors, which Read, Write and Accept serve before
//     the socket on the next backend. Only then may another backend
//     watch the sockets, and the buffers be unmapped.
//
// A ring whose requests do not all end within uringStopBound resumes
// (resume), and the switch fails.

// uringStopBound bounds how long a hand-over waits for the kernel to end
// the ring's requests; uringStopCheck is how often a waiting ring
// looks, however long its loop would sleep.
const (
	uringStopBound = 2 * time.Second
	uringStopCheck = 50 * time.Millisecond
)

var errHandOverUnderWay = errors.New("a hand-over to another backend is under way")

// stop begins a hand-over (step 1 above).
func (p *uringCompleter) stop(done func(error)) error {
	if p.stopping {
		return errHandOverUnderWay
	}
	p.stopping = true
	p.stopped, p.stopBy = done, time.Now().Add(uringStopBound)
	for fd := range p.regs {
		g := &p.regs[fd]
		if g.gen == 0 || g.sock == nil {
			continue
		}
		p.cancelWaits(fd, g)
		if g.sock.send == sendFlying {
			p.cancel1(uringKindSend, fd, g)
		}
	}
	return nil
}

// checkStopped calls stop's done once every request ended, or with an
// error once stopBy passed; Wait calls it after reaping.
func (p *uringCompleter) checkStopped() {
	var err error
	switch {
	case p.ops == 0:
	case !time.Now().Before(p.stopBy):
		err = fmt.Errorf("%d io_uring requests did not end", p.ops)
	default:
		return
	}
	done := p.stopped
	p.stopped = nil
	done(err)
}

// handOver moves what the sockets hold into descs (step 2 above), after
// stop's done(nil).
func (p *uringCompleter) handOver(descs []*Desc) {
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
	p.finishClosing()
}

// finishClosing closes the sockets closed by their handlers whose last
// bytes were still going, when the ring will not send them (a hand-over,
// or the loop's end): what the socket takes now goes, as from a socket
// buffer.
func (p *uringCompleter) finishClosing() {
	for fd := range p.regs {
		if g := &p.regs[fd]; g.gen != 0 && g.sock != nil && g.sock.end >= endClose {
			s := g.sock
			RawWrite(fd, s.unsent())
			p.dropTx(s)
			p.finishClose(fd, g)
		}
	}
}

// resume arms again what stop stopped, for a hand-over that could not
// finish; sockets already handed over are not the ring's any more.
func (p *uringCompleter) resume() {
	p.stopping, p.stopped = false, nil
	for fd := range p.regs {
		g := &p.regs[fd]
		if g.gen == 0 || g.sock == nil {
			continue
		}
		p.modifySock(fd, g, g.sock.want, g.tok)
		if g.sock.send == sendWaiting {
			p.armPollOut(fd, g) // stop cancelled the wait for room
		}
		p.submitSend(fd, g)
	}
}

// freeBuffers lets go of the buffers, unless the kernel may still use
// them: a ring closed with requests in flight ends them on its own time.
func (p *uringCompleter) freeBuffers() {
	if p.ops > 0 {
		return
	}
	p.bufs.unregister(p.r)
	p.bufs.unmap()
	p.chunks.unmap()
}
