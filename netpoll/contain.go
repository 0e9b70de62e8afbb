package netpoll

// Panic containment. A loop serves thousands of connections on one
// goroutine, so an unrecovered panic in any of them would take every
// other one, and the process, down with it. The loop recovers around
// each unit of its work (a descriptor's event, a timer, a posted task, a
// flush), lets the unit's owner discard itself, and goes on. What a
// recovered loop can still trust is written down in docs/design.md.

import (
	"log/slog"
	"runtime/debug"
)

// Owner is what a unit of a loop's work belongs to: a connection, or a
// backend connection serving one. A panic in that work leaves the owner's
// state half-updated, so the loop does not try to repair it: it calls
// Abandon, which discards the owner whole — closes its sockets, lets go of
// what it holds of the loop's shared books (pools, gauges) — and never
// calls back into the work that panicked.
//
// A Handler, a Flusher, the owner given to Timer.SetOwner or to PostFor:
// each is blamed for its own work when it is an Owner.
type Owner interface {
	// Abandon discards the owner after its work panicked with v. It is
	// called on the loop, once per panic; an owner already gone does
	// nothing. It returns what the log should name, when it knows: the
	// site the request addressed (its host) and the request line.
	Abandon(v any) (site, request string)
}

// Stages of a loop's work, as a Recovered names them.
const (
	StageEvent = "event" // a descriptor's HandleEvent
	StageTimer = "timer"
	StageTask  = "task" // a function given to Post or PostFor
	StageFlush = "flush"
)

// Recovered is a panic a loop contained.
type Recovered struct {
	Loop    int
	Backend string
	Stage   string
	Value   any
	Stack   []byte // the panicking goroutine's stack, from the panic down
	// Owned: an Owner took the blame and was abandoned. Otherwise the
	// work had no owner: a descriptor whose handler is no Owner was
	// closed; a timer, task or flush without one was simply dropped.
	Owned bool
	// Site and Request are what the owner said of the work.
	Site, Request string
	// InAbandon: the panic happened inside an Owner's Abandon, after a
	// first panic was already recovered and reported.
	InAbandon bool
}

// OnPanic sets what the loop does with each panic it contained, after the
// owner was abandoned: f runs on the loop and must not block. By default
// the panic is logged at error level through slog's default logger, off
// the loop (a log write may block).
func (l *Loop) OnPanic(f func(Recovered)) { l.onPanic = f }

// contain is deferred around one unit of the loop's work. owner is the
// work's Owner when it has one (an interface holding a non-Owner is
// treated as none), d the descriptor of an event.
func (l *Loop) contain(stage string, owner any, d *Desc) {
	v := recover()
	if v == nil {
		return
	}
	l.recovered(stage, owner, d, v, debug.Stack())
}

// recovered abandons the owner of work that panicked with v and reports
// the panic. A panic inside Abandon is reported once more and not
// retried: the owner stays as it is, and a descriptor of its is closed so
// that it cannot be reported again.
func (l *Loop) recovered(stage string, owner any, d *Desc, v any, stack []byte) {
	l.panics.Add(1)
	r := Recovered{Loop: l.id, Backend: l.Backend(), Stage: stage, Value: v, Stack: stack}
	o, ok := owner.(Owner)
	if !ok {
		if d != nil {
			// A level-triggered poller would report the descriptor again
			// at once, and its handler's state is unknown.
			d.Close()
		}
		l.report(r)
		return
	}
	r.Owned = true
	again := l.abandon(o, &r)
	l.report(r)
	if again != nil {
		l.panics.Add(1)
		if d != nil {
			d.Close()
		}
		l.report(*again)
	}
}

// abandon calls o.Abandon, recovering a panic inside it, which it returns
// for a report of its own.
func (l *Loop) abandon(o Owner, r *Recovered) (again *Recovered) {
	defer func() {
		if v := recover(); v != nil {
			again = &Recovered{Loop: r.Loop, Backend: r.Backend, Stage: r.Stage, Value: v,
				Stack: debug.Stack(), Owned: true, Site: r.Site, Request: r.Request, InAbandon: true}
		}
	}()
	r.Site, r.Request = o.Abandon(r.Value)
	return nil
}

// report hands a contained panic to OnPanic's function, or logs it. A
// panic in that function is dropped: reporting must not fail the loop.
func (l *Loop) report(r Recovered) {
	defer func() { _ = recover() }()
	if f := l.onPanic; f != nil {
		f(r)
		return
	}
	go LogPanic(slog.Default(), r)
}

// LogPanic writes r to lg at error level, with its stack: the default
// report of a contained panic.
func LogPanic(lg *slog.Logger, r Recovered) {
	msg := "panic contained: connection abandoned"
	switch {
	case r.InAbandon:
		msg = "panic while abandoning a connection after a panic"
	case !r.Owned:
		msg = "panic contained in work of no connection"
	}
	attrs := []any{"loop", r.Loop, "poller", r.Backend, "stage", r.Stage, "panic", r.Value}
	if r.Site != "" {
		attrs = append(attrs, "site", r.Site)
	}
	if r.Request != "" {
		attrs = append(attrs, "request", r.Request)
	}
	attrs = append(attrs, "stack", string(r.Stack))
	lg.Error(msg, attrs...)
}
