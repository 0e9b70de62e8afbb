//go:build linux

package netpoll

import (
	"time"

	"golang.org/x/sys/unix"
)

// Closing and detaching a socket in completion mode: its requests are
// cancelled, and a close waits for the last sends, as close(2) leaves
// them to the kernel.

// uringDrainTimeout bounds how long a closed socket's last bytes may wait
// for a peer that does not read them: then it is reset. On epoll those
// bytes sit in the kernel's socket buffer of an orphaned socket, which no
// longer counts among the process's descriptors; here the descriptor
// stays open while they wait, so the bound is kept short. A peer that
// reads nothing for 10 s after the response was complete loses its last
// (at most 128 KiB) bytes.
const uringDrainTimeout = 10 * time.Second

// cancelWaits cancels fd's receive, accept and write-readiness wait.
func (p *uringCompleter) cancelWaits(fd int, g *uringReg) {
	s := g.sock
	p.stopRecv(fd, g)
	if s.acceptLive {
		p.cancel1(uringKindAccept, fd, g)
	}
	if s.pollOutLive && (s.send != sendWaiting || p.stopping) {
		p.cancel1(uringKindPollOut, fd, g)
	}
}

// stopAll cancels fd's receive, accept and write-readiness wait and gives
// back what it received and accepted.
func (p *uringCompleter) stopAll(fd int, g *uringReg) {
	s := g.sock
	p.cancelWaits(fd, g)
	p.dropRx(s)
	for _, afd := range s.accepted {
		unix.Close(afd)
	}
	s.accepted = nil
}

func (p *uringCompleter) close(d *Desc) error {
	fd := d.fd
	g := &p.regs[fd]
	s := g.sock
	p.stopAll(fd, g)
	s.want = 0
	if p.closeSends(fd, g, d.reset) {
		return p.finishClose(fd, g)
	}
	// The last bytes still go, as close(2) would leave them to the kernel.
	gen := g.gen
	s.drain = d.loop.AfterFunc(uringDrainTimeout, func() {
		if g := &p.regs[fd]; g.gen == gen && g.sock.end == endClose {
			unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			if p.closeSends(fd, g, true) {
				p.finishClose(fd, g)
			}
		}
	})
	return nil
}

// finishClose closes fd. Completions of its requests still on their way
// carry a generation nobody has any more and are dropped.
func (p *uringCompleter) finishClose(fd int, g *uringReg) error {
	s := g.sock
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
	g.gen = 0 // the socket's state starts again with its next addSock
	return unix.Close(fd)
}

func (p *uringCompleter) detach(d *Desc) error {
	g := &p.regs[d.fd]
	p.stopAll(d.fd, g)
	p.dropTx(g.sock)
	g.gen = 0
	return nil
}
