//go:build unix

package netpoll

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// AcceptFunc takes ownership of a newly accepted, non-blocking descriptor.
type AcceptFunc func(fd int, remote netip.AddrPort)

// Listener accepts connections on one loop. When the process runs out of
// descriptors it stops accepting for a back-off period instead of spinning
// on a listener that stays readable (the EMFILE trap), and the connections
// it already has keep being served.
type Listener struct {
	loop     *Loop
	desc     *Desc
	onAccept AcceptFunc
	backoff  time.Duration
	timer    *Timer
	paused   bool
	closed   bool

	// Accepted and Exhausted count accepted connections and descriptor
	// exhaustion episodes; readable from any goroutine.
	Accepted, Exhausted atomic.Uint64
}

// acceptBudget bounds accepts per event so one busy listener cannot starve
// the loop's established connections.
const acceptBudget = 64

// Listen registers a listening descriptor with the loop. The descriptor
// stays owned by the caller (it may be shared by several loops); Close only
// unregisters it.
func (l *Loop) Listen(fd int, onAccept AcceptFunc) (*Listener, error) {
	ln := &Listener{loop: l, onAccept: onAccept, backoff: 100 * time.Millisecond}
	d, err := l.Register(fd, ln, Read|accepting)
	if err != nil {
		return nil, err
	}
	ln.desc = d
	return ln, nil
}

// HandleEvent accepts pending connections.
func (ln *Listener) HandleEvent(Event) {
	for i := 0; i < acceptBudget; i++ {
		nfd, sa, err := ln.desc.Accept()
		switch err {
		case nil:
			ln.Accepted.Add(1)
			ln.onAccept(nfd, AddrPort(sa))
			continue
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED, unix.EPROTO:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			ln.pause(err)
			return
		default:
			ln.pause(err)
			return
		}
	}
	// Budget spent with connections still queued: continue next iteration
	// (an edge-triggered poller would not report them again).
	ln.desc.Kick(EventRead)
}

// Abandon implements Owner: a panic in the accept callback left the
// callback's connection to it, and the listener's own state whole. The
// connections still queued are taken next iteration, as after a spent
// budget.
func (ln *Listener) Abandon(any) (site, request string) {
	if !ln.closed && !ln.paused {
		ln.desc.Kick(EventRead)
	}
	return "", ""
}

func (ln *Listener) pause(err error) {
	if ln.paused {
		return
	}
	ln.paused = true
	ln.Exhausted.Add(1)
	// Logged off the loop: a log write takes a process-wide lock and may
	// block on stderr. There is at most one pause per backoff period.
	go slog.Warn("accept paused", "loop", ln.loop.ID(), "err", err, "retry_in", ln.backoff)
	ln.desc.SetInterest(0)
	ln.timer = ln.loop.AfterFunc(ln.backoff, ln.resume)
}

func (ln *Listener) resume() {
	if ln.closed {
		return
	}
	ln.paused = false
	ln.desc.SetInterest(Read | accepting)
	ln.desc.Kick(EventRead)
}

// Close stops accepting on this loop; the descriptor itself is left open.
func (ln *Listener) Close() {
	if ln.closed {
		return
	}
	ln.closed = true
	ln.timer.Stop()
	ln.desc.Detach()
}
