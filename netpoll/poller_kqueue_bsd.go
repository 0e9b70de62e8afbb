//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package netpoll

import (
	"time"

	"golang.org/x/sys/unix"
)

func init() { register("kqueue", 300, openKqueue) }

// kqueuePoller registers EVFILT_READ and EVFILT_WRITE with EV_CLEAR (edge
// semantics) for the descriptor's whole life; close(2) removes the filters,
// so the steady state makes no kevent change. The token lives in a table
// indexed by descriptor because the type of kevent's udata differs across
// the BSDs.
type kqueuePoller struct {
	wake
	kq     int
	toks   []Token
	kevs   []unix.Kevent_t
	closed bool
}

// openKqueue opens a kqueue watching w, or a new waker when w is nil (a
// loop switching backends brings its own).
func openKqueue(w *waker) (Poller, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(kq)
	k, err := newWake(w)
	if err != nil {
		unix.Close(kq)
		return nil, err
	}
	p := &kqueuePoller{wake: k, kq: kq, kevs: make([]unix.Kevent_t, 256)}
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], k.waker.readFD(), unix.EVFILT_READ, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, ch[:], nil, nil); err != nil {
		k.abandon()
		unix.Close(kq)
		return nil, err
	}
	return p, nil
}

func (p *kqueuePoller) Name() string   { return "kqueue" }
func (p *kqueuePoller) Caps() Caps     { return CapEdgeTriggered }
func (p *kqueuePoller) sockIO() sockIO { return nil }

func (p *kqueuePoller) setToken(fd int, tok Token) {
	for fd >= len(p.toks) {
		p.toks = append(p.toks, 0)
	}
	p.toks[fd] = tok
}

func (p *kqueuePoller) apply(fd int, want Interest) error {
	var ch [2]unix.Kevent_t
	for i, f := range []struct {
		filter int
		bit    Interest
	}{{unix.EVFILT_READ, Read}, {unix.EVFILT_WRITE, Write}} {
		flags := unix.EV_ADD | unix.EV_CLEAR
		if want&f.bit == 0 {
			flags = unix.EV_DELETE
		}
		unix.SetKevent(&ch[i], fd, f.filter, flags)
	}
	_, err := unix.Kevent(p.kq, ch[:], nil, nil)
	if err == unix.ENOENT {
		err = nil // EV_DELETE of a filter that was never added
	}
	return err
}

func (p *kqueuePoller) Add(fd int, want Interest, tok Token) error {
	p.setToken(fd, tok)
	return p.apply(fd, want)
}

func (p *kqueuePoller) Modify(fd int, want Interest, tok Token) error {
	p.setToken(fd, tok)
	return p.apply(fd, want)
}

// Remove only forgets the token: the caller closes fd next, and close(2)
// drops its filters without a kevent call. Events still queued for it are
// skipped in Wait.
func (p *kqueuePoller) Remove(fd int) error {
	if fd < len(p.toks) {
		p.toks[fd] = 0
	}
	return nil
}

func (p *kqueuePoller) Wait(evs []Ready, timeout time.Duration) (int, error) {
	max := len(evs)
	if max > len(p.kevs) {
		p.kevs = make([]unix.Kevent_t, max)
	}
	var ts *unix.Timespec
	if timeout >= 0 {
		// Darwin rejects timeouts over 1e8 seconds; nothing needs that long.
		if timeout > 24*time.Hour {
			timeout = 24 * time.Hour
		}
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	n, err := unix.Kevent(p.kq, nil, p.kevs[:max], ts)
	if err != nil {
		if err == unix.EINTR {
			return 0, nil
		}
		return 0, err
	}
	// A descriptor reported by both filters gets one merged entry.
	out := 0
	for i := 0; i < n; i++ {
		kev := &p.kevs[i]
		fd := int(kev.Ident)
		if fd == p.waker.readFD() {
			p.waker.drain()
			continue
		}
		if fd >= len(p.toks) || p.toks[fd] == 0 {
			continue
		}
		var e Event
		switch kev.Filter {
		case unix.EVFILT_READ:
			e = EventRead
		case unix.EVFILT_WRITE:
			e = EventWrite
		}
		if kev.Flags&unix.EV_EOF != 0 {
			// Some kernels give the write side no event when the peer
			// closes, so a hang-up wakes both directions.
			e |= EventHup | EventRead | EventWrite
		}
		if kev.Flags&unix.EV_ERROR != 0 {
			e |= EventErr | EventRead | EventWrite
		}
		tok := p.toks[fd]
		if out > 0 && evs[out-1].Token == tok {
			evs[out-1].Events |= e
			continue
		}
		evs[out] = Ready{Token: tok, Events: e}
		out++
	}
	return out, nil
}

func (p *kqueuePoller) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.closeWaker()
	return unix.Close(p.kq)
}
