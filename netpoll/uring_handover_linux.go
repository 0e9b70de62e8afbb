//go:build linux

package netpoll

import (
	"fmt"
	"time"
)

// Handing a completion-mode ring's sockets over to the loop's next
// backend (a live switch away from io_uring).

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
		p.cancelWaits(fd, g)
		if g.sock.send == sendFlying {
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
		if g := &p.regs[fd]; g.gen != 0 && g.sock != nil && g.sock.end >= endClose {
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
