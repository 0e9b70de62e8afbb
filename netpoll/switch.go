package netpoll

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A live poller switch re-homes a loop between two iterations, as a task on
// the loop itself: nothing else runs on the loop meanwhile, so no handler
// sees a half-moved loop and no lock is needed.
//
//  1. open the new backend around the loop's own wake-up descriptor (the
//     eventfd or pipe stays: goroutines posting tasks never see it change);
//  2. register every live descriptor with its token (so kicks already
//     queued stay valid) and the interest the new backend needs: both
//     directions on an edge-triggered one, the handler's interest on poll;
//  3. close the old backend (its kernel queue goes, the wake-up stays);
//  4. give every descriptor the readiness it has now: edges reported to
//     the old queue after its last wait died with it. The readiness is
//     measured (one zero-timeout poll(2) over the live descriptors) and
//     queued as kicks, never invented, because a handler may read a read
//     event as news (an idle pooled upstream connection that turns
//     readable is closed by the origin).
//
// From a completion backend (io_uring's completion mode) a hand-over comes
// first, across iterations so that it never blocks the loop: the backend
// stops its requests on the sockets, the loop goes on serving while the
// kernel ends them, and then the move above runs as a task, after what the
// backend held went into the descriptors (sockIO's stop and handOver).
//
// Counters continue across a switch; the re-registrations count as adds.

func (l *Loop) setName(n string) { l.name.Store(&n) }

// SwitchEvent records one loop's move from one backend to another.
type SwitchEvent struct {
	Loop     int
	From, To string
	At       time.Time // when the loop finished the move
	// Took is the time from the switch's start on the loop to the move:
	// from a completion backend it includes the hand-over, during which
	// the loop went on serving.
	Took        time.Duration
	Descriptors int // live descriptors moved
}

// Moved reports whether the loop changed backend (a switch to the backend
// a loop already has does nothing).
func (e SwitchEvent) Moved() bool { return e.From != e.To }

// ErrNotRunning is returned by SwitchPoller for a loop whose Run has not
// started: nobody would run the switch.
var ErrNotRunning = errors.New("loop not running")

// SwitchPoller moves the running loop to the named backend ("auto": the
// best available) between two iterations and waits until it has. Call it
// from another goroutine, never from the loop. On error the loop keeps its
// backend and every registration.
func (l *Loop) SwitchPoller(backend string) (SwitchEvent, error) {
	if err := ValidName(backend); err != nil {
		return SwitchEvent{}, err
	}
	if !l.running.Load() {
		return SwitchEvent{}, ErrNotRunning
	}
	if backend == "" || backend == Auto {
		// Resolved here, off the loop: the first look at what is
		// available runs the backends' probes (io_uring's may wait a
		// second for a sandbox that swallows a completion).
		if a := Available(); len(a) > 0 {
			backend = a[0]
		}
	}
	type result struct {
		ev  SwitchEvent
		err error
	}
	ch := make(chan result, 1)
	l.Post(func() {
		l.switchPoller(backend, func(ev SwitchEvent, err error) { ch <- result{ev, err} })
	})
	select {
	case r := <-ch:
		return r.ev, r.err
	case <-l.done:
		select {
		case r := <-ch:
			return r.ev, r.err
		default:
			return SwitchEvent{}, ErrStopped
		}
	}
}

// SwitchCount is how many times the loop changed backend. Safe from any
// goroutine; something that caches the backend's name (a metrics label)
// compares it to notice a switch for the price of one atomic load.
func (l *Loop) SwitchCount() uint64 { return l.switches.Load() }

// switchPoller runs on the loop and calls reply, on the loop, once the
// move is done or failed. From a completion backend that is some
// iterations later: the backend holds requests on the sockets and bytes
// in its buffers, which come out first (sockIO's stop and handOver)
// before another backend watches the same sockets, and the loop goes on
// serving while the kernel ends those requests.
func (l *Loop) switchPoller(name string, reply func(SwitchEvent, error)) {
	start := time.Now()
	if name == "" || name == Auto {
		if a := Available(); len(a) > 0 {
			name = a[0]
		}
	}
	ev := SwitchEvent{Loop: l.id, From: l.poller.Name(), To: name, At: start}
	if name == ev.From {
		reply(ev, nil)
		return
	}
	io := l.io
	if io == nil {
		l.movePoller(ev, reply)
		return
	}
	err := io.stop(func(err error) {
		l.Post(func() {
			if err != nil {
				io.resume()
				ev.To = ev.From
				reply(ev, fmt.Errorf("%s hand-over: %w", ev.From, err))
				return
			}
			l.movePoller(ev, reply)
		})
	})
	if err != nil {
		ev.To = ev.From
		reply(ev, fmt.Errorf("%s: %w", ev.From, err))
	}
}

// movePoller moves the loop to ev.To, its old poller stopped if it is a
// completion backend, and calls reply.
func (l *Loop) movePoller(ev SwitchEvent, reply func(SwitchEvent, error)) {
	old, oldIO := l.poller, l.io
	fail := func(err error) {
		if oldIO != nil {
			oldIO.resume()
		}
		ev.To = ev.From
		reply(ev, err)
	}
	np, err := openForLoop(ev.To, l.waker, &l.calls)
	if err != nil {
		fail(err)
		return
	}
	edge := np.Caps()&CapEdgeTriggered != 0
	kernel := func(d *Desc) Interest {
		if edge {
			return Read | Write
		}
		return d.kernelWant()
	}
	descs := make([]*Desc, 0, len(l.slots))
	for _, d := range l.slots {
		if d != nil {
			descs = append(descs, d)
		}
	}
	if oldIO != nil {
		oldIO.handOver(descs)
		l.io = nil
	}
	for _, d := range descs {
		if err := np.Add(d.fd, kernel(d), d.tok); err != nil {
			np.disownWaker()
			np.Close()
			if oldIO != nil {
				// The old ring handed its sockets over; take them back.
				oldIO.resume()
				for _, d := range descs {
					old.Add(d.fd, d.kernel, d.tok)
				}
				l.io = oldIO
			}
			name := ev.To
			ev.To = ev.From
			reply(ev, fmt.Errorf("%s add fd %d: %w", name, d.fd, err))
			return
		}
		ev.Descriptors++
	}
	for _, d := range descs {
		d.kernel = kernel(d)
	}
	l.adopt(np)
	old.disownWaker()
	old.Close()
	l.adds.Add(uint64(ev.Descriptors))
	l.probe()
	l.switches.Add(1)
	now := time.Now()
	ev.Took, ev.At = now.Sub(ev.At), now
	reply(ev, nil)
}

// probe queues, as kicks, the readiness every live descriptor has now.
func (l *Loop) probe() {
	fds := make([]unix.PollFd, 0, len(l.slots))
	toks := make([]Token, 0, len(l.slots))
	for _, d := range l.slots {
		if d != nil {
			fds = append(fds, unix.PollFd{Fd: int32(d.fd), Events: unix.POLLIN | unix.POLLOUT})
			toks = append(toks, d.tok)
		}
	}
	if len(fds) == 0 {
		return
	}
	var err error
	for {
		if _, err = unix.Poll(fds, 0); err != unix.EINTR {
			break
		}
	}
	for i := range fds {
		re := fds[i].Revents
		if err != nil {
			// No measurement: say everything, dispatch filters by interest.
			re = unix.POLLIN | unix.POLLOUT
		}
		if e := pollReadiness(re); e != 0 {
			l.kicks = append(l.kicks, Ready{Token: toks[i], Events: e})
		}
	}
}

// Switch moves every loop of the running group to its backend in
// backends, cycled across the loops as NewGroup and the poller option do
// ("epoll poll" alternates them; empty means "auto" for all). Loops that
// already have their backend stay as they are; the others move at once,
// each between two of its iterations. It returns one event per loop, in
// loop order (SwitchEvent.Moved says which moved): how an A/B history
// records when each switch happened. On error the loops that moved stay
// moved; the error names the others.
func (g *Group) Switch(backends []string) ([]SwitchEvent, error) {
	if len(backends) == 0 {
		backends = []string{Auto}
	}
	for _, b := range backends {
		if err := ValidName(b); err != nil {
			return nil, err
		}
	}
	g.switchMu.Lock()
	defer g.switchMu.Unlock()
	evs := make([]SwitchEvent, len(g.loops))
	errs := make([]error, len(g.loops))
	var wg sync.WaitGroup
	for i, l := range g.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := l.SwitchPoller(backends[i%len(backends)])
			if err != nil {
				ev = SwitchEvent{Loop: i, From: l.Backend(), To: l.Backend(), At: time.Now()}
				errs[i] = fmt.Errorf("loop %d: %w", i, err)
			}
			evs[i] = ev
		}()
	}
	wg.Wait()
	return evs, errors.Join(errs...)
}

// Backends returns each loop's backend now, in loop order.
func (g *Group) Backends() []string {
	out := make([]string, len(g.loops))
	for i, l := range g.loops {
		out[i] = l.Backend()
	}
	return out
}
