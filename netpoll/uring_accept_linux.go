//go:build linux

package netpoll

import "golang.org/x/sys/unix"

// A listener's accepts in completion mode: one multishot accept, the
// connections it took held until the handler takes them.

func (p *uringCompleter) armAccept(fd int, g *uringReg) {
	s := g.sock
	if s.acceptLive || p.stopping {
		return
	}
	s.acceptLive, s.acceptErr = true, 0
	p.submit(uringSQE{opcode: uringOpAccept, fd: int32(fd), ioprio: uringAcceptMultishot,
		opFlags: unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, userData: uringOpData(uringKindAccept, fd, g.gen)})
}

// acceptDone handles an accept's completion; g is nil when the listener
// is gone, and then the connection is closed.
func (p *uringCompleter) acceptDone(fd int, g *uringReg, c uringCQE, more bool, errno unix.Errno) {
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
}

func (p *uringCompleter) accept(d *Desc) (int, unix.Sockaddr, error) {
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
