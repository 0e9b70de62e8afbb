//go:build linux

package netpoll

import (
	"time"

	"golang.org/x/sys/unix"
)

func init() { register("epoll", 300, openEpoll) }

// wakeToken marks the waker's registration; the Loop never hands it out
// because its slot indexes start at zero and generations at one.
const wakeToken = ^Token(0)

// epollPoller registers every descriptor edge-triggered (EPOLLET) for the
// interest the loop asks for, which on this backend is both directions for
// the descriptor's whole life: the steady state makes no epoll_ctl call.
type epollPoller struct {
	wake
	epfd   int
	kevs   []unix.EpollEvent
	closed bool
}

// openEpoll opens an epoll instance watching w, or a new waker when w is
// nil (a loop switching backends brings its own).
func openEpoll(w *waker) (Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	k, err := newWake(w)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	p := &epollPoller{wake: k, epfd: epfd, kevs: make([]unix.EpollEvent, 256)}
	// Registering a wake-up that is already pending reports it on the
	// first wait: a switch loses none.
	ev := epollEvent(Read, wakeToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, k.waker.readFD(), &ev); err != nil {
		k.abandon()
		unix.Close(epfd)
		return nil, err
	}
	return p, nil
}

func epollEvent(want Interest, tok Token) unix.EpollEvent {
	ev := unix.EpollEvent{Events: unix.EPOLLET | unix.EPOLLRDHUP}
	if want&Read != 0 {
		ev.Events |= unix.EPOLLIN
	}
	if want&Write != 0 {
		ev.Events |= unix.EPOLLOUT
	}
	// The 64-bit epoll_data is laid out as Fd and Pad on every Linux port.
	ev.Fd = int32(uint32(tok))
	ev.Pad = int32(uint32(tok >> 32))
	return ev
}

func (p *epollPoller) Name() string   { return "epoll" }
func (p *epollPoller) Caps() Caps     { return CapEdgeTriggered }
func (p *epollPoller) sockIO() sockIO { return nil }

func (p *epollPoller) Add(fd int, want Interest, tok Token) error {
	ev := epollEvent(want, tok)
	err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	if err == unix.EEXIST {
		// A descriptor number closed without Remove and reused: take it over.
		err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	}
	return err
}

func (p *epollPoller) Modify(fd int, want Interest, tok Token) error {
	ev := epollEvent(want, tok)
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
}

func (p *epollPoller) Remove(fd int) error {
	err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	if err == unix.ENOENT || err == unix.EBADF {
		return nil // already gone with a close: nothing to forget
	}
	return err
}

func (p *epollPoller) Wait(evs []Ready, timeout time.Duration) (int, error) {
	max := len(evs)
	if max > len(p.kevs) {
		p.kevs = make([]unix.EpollEvent, max)
	}
	n, err := unix.EpollWait(p.epfd, p.kevs[:max], timeoutMillis(timeout))
	if err != nil {
		if err == unix.EINTR {
			return 0, nil
		}
		return 0, err
	}
	out := 0
	for i := 0; i < n; i++ {
		kev := &p.kevs[i]
		tok := Token(uint32(kev.Fd)) | Token(uint32(kev.Pad))<<32
		if tok == wakeToken {
			p.waker.drain()
			continue
		}
		var e Event
		if kev.Events&(unix.EPOLLIN|unix.EPOLLPRI) != 0 {
			e |= EventRead
		}
		if kev.Events&unix.EPOLLOUT != 0 {
			e |= EventWrite
		}
		if kev.Events&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
			e |= EventHup | EventRead
		}
		if kev.Events&unix.EPOLLERR != 0 {
			e |= EventErr | EventRead | EventWrite
		}
		evs[out] = Ready{Token: tok, Events: e}
		out++
	}
	return out, nil
}

func (p *epollPoller) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.closeWaker()
	return unix.Close(p.epfd)
}
