//go:build unix

package netpoll

import (
	"time"

	"golang.org/x/sys/unix"
)

func init() { register("poll", 100, openPoll) }

// pollPoller is the portable, level-triggered backend over poll(2). The
// kernel keeps no registrations, so Add, Modify and Remove only edit the
// pollfd array (swap-with-last on removal) and cost no system call; the
// price is a wait that is O(registered descriptors).
type pollPoller struct {
	wake
	fds   []unix.PollFd // fds[0] is the waker
	toks  []Token       // parallel to fds
	index map[int]int   // fd -> position in fds
}

// openPoll opens a poll set watching w, or a new waker when w is nil (a
// loop switching backends brings its own).
func openPoll(w *waker) (Poller, error) {
	k, err := newWake(w)
	if err != nil {
		return nil, err
	}
	return &pollPoller{
		wake:  k,
		fds:   []unix.PollFd{{Fd: int32(k.waker.readFD()), Events: unix.POLLIN}},
		toks:  []Token{0},
		index: make(map[int]int),
	}, nil
}

func pollEvents(want Interest) int16 {
	var ev int16
	if want&Read != 0 {
		ev |= unix.POLLIN
	}
	if want&Write != 0 {
		ev |= unix.POLLOUT
	}
	return ev
}

func (p *pollPoller) Name() string { return "poll" }

// Caps is none: poll is level-triggered and makes its sockets' callers
// do their I/O.
func (p *pollPoller) Caps() Caps     { return 0 }
func (p *pollPoller) sockIO() sockIO { return nil }

func (p *pollPoller) Add(fd int, want Interest, tok Token) error {
	if i, ok := p.index[fd]; ok {
		p.fds[i].Events, p.toks[i] = pollEvents(want), tok
		return nil
	}
	p.index[fd] = len(p.fds)
	p.fds = append(p.fds, unix.PollFd{Fd: int32(fd), Events: pollEvents(want)})
	p.toks = append(p.toks, tok)
	return nil
}

func (p *pollPoller) Modify(fd int, want Interest, tok Token) error {
	i, ok := p.index[fd]
	if !ok {
		return unix.ENOENT
	}
	p.fds[i].Events, p.toks[i] = pollEvents(want), tok
	return nil
}

func (p *pollPoller) Remove(fd int) error {
	i, ok := p.index[fd]
	if !ok {
		return nil
	}
	last := len(p.fds) - 1
	if i != last {
		p.fds[i], p.toks[i] = p.fds[last], p.toks[last]
		p.index[int(p.fds[i].Fd)] = i
	}
	p.fds, p.toks = p.fds[:last], p.toks[:last]
	delete(p.index, fd)
	return nil
}

func (p *pollPoller) Wait(evs []Ready, timeout time.Duration) (int, error) {
	for i := range p.fds {
		p.fds[i].Revents = 0
	}
	n, err := unix.Poll(p.fds, timeoutMillis(timeout))
	if err != nil {
		if err == unix.EINTR {
			return 0, nil
		}
		return 0, err
	}
	out := 0
	// The scan stops once it has seen every ready entry poll counted.
	for i := 0; i < len(p.fds) && n > 0 && out < len(evs); i++ {
		re := p.fds[i].Revents
		if re == 0 {
			continue
		}
		n--
		if i == 0 {
			p.waker.drain()
			continue
		}
		evs[out] = Ready{Token: p.toks[i], Events: pollReadiness(re)}
		out++
	}
	return out, nil
}

// pollReadiness turns poll(2)'s revents into events.
func pollReadiness(re int16) Event {
	var e Event
	if re&unix.POLLIN != 0 {
		e |= EventRead
	}
	if re&unix.POLLOUT != 0 {
		e |= EventWrite
	}
	if re&unix.POLLHUP != 0 {
		e |= EventHup | EventRead
	}
	if re&(unix.POLLERR|unix.POLLNVAL) != 0 {
		e |= EventErr | EventRead | EventWrite
	}
	return e
}

// Close closes the waker, unless it moved on: poll keeps nothing in the
// kernel besides.
func (p *pollPoller) Close() error {
	p.closeWaker()
	return nil
}
