package netpoll

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Handler receives readiness events for one registered descriptor, on the
// loop's goroutine.
type Handler interface {
	HandleEvent(ev Event)
}

// Flusher is something with output to write once per loop iteration (a
// connection gathering frames from several handlers into one write).
//
// A Handler or a Flusher that is also an Owner is abandoned when its
// HandleEvent or Flush panics (contain.go).
type Flusher interface {
	Flush()
}

// Desc is a descriptor registered with a Loop.
type Desc struct {
	loop   *Loop
	fd     int
	tok    Token
	h      Handler
	want   Interest // what the handler asked for
	kernel Interest // what the poller has registered
	closed bool
	reset  bool   // ResetOnClose was called
	moved  *moved // brought from a completion backend: read and sent first
}

// FD returns the descriptor number.
func (d *Desc) FD() int { return d.fd }

// Loop returns the loop the descriptor belongs to.
func (d *Desc) Loop() *Loop { return d.loop }

// Interest returns what the handler currently wants to hear about.
func (d *Desc) Interest() Interest { return d.want }

// SetInterest changes what the handler wants to hear about. On
// edge-triggered backends this only filters events (no system call); on poll
// it edits the pollfd entry. Readiness that arrived while a direction was
// not wanted is not replayed: a handler resuming reads calls Kick.
func (d *Desc) SetInterest(want Interest) error {
	if d.closed || want == d.want {
		return nil
	}
	d.want = want
	l := d.loop
	if l.caps&CapEdgeTriggered != 0 {
		return nil
	}
	kw := d.kernelWant()
	if kw == d.kernel {
		return nil
	}
	if err := l.poller.Modify(d.fd, kw, d.tok); err != nil {
		return fmt.Errorf("%s modify fd %d: %w", l.poller.Name(), d.fd, err)
	}
	d.kernel = kw
	l.mods.Add(1)
	return nil
}

// Kick delivers ev to the handler later in this loop iteration, as if the
// kernel had reported it: how a handler resumes I/O it stopped on purpose
// (backpressure, a read budget) without waiting for a new edge.
func (d *Desc) Kick(ev Event) {
	if d.closed {
		return
	}
	d.loop.kicks = append(d.loop.kicks, Ready{Token: d.tok, Events: ev})
}

// Close unregisters the descriptor and closes it. Events already collected
// for it in this iteration are dropped. What was written is still sent,
// as close(2) leaves it to the kernel, unless ResetOnClose was called.
func (d *Desc) Close() error {
	if d.closed {
		return nil
	}
	if io := d.loop.io; io != nil {
		d.forget()
		return io.close(d)
	}
	if m := d.moved; m != nil && !d.reset {
		// Bytes a completion backend had not sent when the loop left it:
		// what the socket takes now goes, as it would have from the
		// socket buffer. A handler closes after its writes went through,
		// which included these, so this is rare and small.
		RawWrite(d.fd, m.out)
	}
	err := d.Detach() // closes what a listener had accepted and not taken

	if cerr := unix.Close(d.fd); err == nil {
		err = cerr
	}
	return err
}

// Detach unregisters the descriptor without closing it.
func (d *Desc) Detach() error {
	if d.closed {
		return nil
	}
	if io := d.loop.io; io != nil {
		d.forget()
		return io.detach(d)
	}
	d.closeMovedFDs()
	d.forget()
	return d.loop.poller.Remove(d.fd)
}

// forget takes d out of the loop: no more events, its token stale.
func (d *Desc) forget() {
	d.closed = true
	l := d.loop
	l.dels.Add(1)
	l.release(d)
}

// closeMovedFDs closes connections a listener had accepted but not taken.
func (d *Desc) closeMovedFDs() {
	if m := d.moved; m != nil {
		for _, fd := range m.fds {
			unix.Close(fd)
		}
		m.fds = nil
	}
}

// Stats are a loop's counters, readable from any goroutine.
type Stats struct {
	Loop    int
	Backend string
	Waits   uint64 // poller waits
	// Calls are the system calls the poller made: one per wait on epoll,
	// kqueue and poll; on io_uring the io_uring_enter calls, which submit
	// and wait (none when completions were already there), besides any a
	// full submission queue forced.
	Calls       uint64
	Events      uint64 // readiness events delivered
	Wakeups     uint64 // waits ended by Wake
	Adds        uint64 // registrations
	Mods        uint64 // interest changes that reached the poller
	Dels        uint64 // removals
	Descriptors int64  // registered now
	Timers      int64  // pending now
	Switches    uint64 // backend switches (SwitchPoller) so far
	Panics      uint64 // panics contained (contain.go), those inside an Abandon included
	Yields      uint64 // passes through the Go scheduler (yield.go)
	// CPU is the loop thread's CPU time (see Loop.CPU); zero where
	// ThreadCPUSupported is false.
	CPU time.Duration
}

// Loop is one event loop: a poller, a timer heap, a task queue other
// goroutines post to, and the descriptors registered with it. Everything
// except Post, Stop and Stats runs on the loop's own goroutine.
type Loop struct {
	id     int
	poller Poller // replaced only on the loop, by a switch
	caps   Caps   // the poller's
	// io does the sockets' I/O when the poller is a completion backend;
	// nil on readiness backends (see sockio.go).
	io sockIO
	// The wake-up and the backend's name outlive a poller switch; other
	// goroutines reach the loop through them, never through poller.
	waker *waker
	name  atomic.Pointer[string]

	slots []*Desc
	gens  []uint32 // generation per slot, bumped on release
	free  []uint32
	ready []Ready
	kicks []Ready

	timers   timerHeap
	timerSeq uint64
	npending int // timers pending (the heap may hold stopped ones too)
	clock    time.Time
	epoch    time.Time // timer deadlines count from it
	// now reads the time: time.Now, or in a test a clock of its own
	// (netpoll/looptest), so that timers fire when the test moves time
	// on rather than after it sleeps. time.Now is not inlined anyway, so
	// calling it through the field costs the loop nothing it can measure.
	now func() time.Time

	taskMu       sync.Mutex
	tasks        []task
	spare        []task
	flushes      []Flusher
	spareFlushes []Flusher

	stopping atomic.Bool
	running  atomic.Bool
	done     chan struct{}

	waits, events, adds, mods, dels atomic.Uint64
	calls                           atomic.Uint64
	selfCounting                    bool // the poller has CapCountsCalls
	descs, ntimers                  atomic.Int64
	switches                        atomic.Uint64
	panics                          atomic.Uint64
	onPanic                         func(Recovered) // nil: log (contain.go)

	// The thread's CPU time in ns, read by maybeReadCPU (cpu.go); cpuAt is
	// the loop time of that read.
	cpu   atomic.Int64
	cpuAt time.Time

	// yieldedAt is the loop time of the last pass through the Go
	// scheduler, yields their count (yield.go).
	yieldedAt time.Time
	yields    atomic.Uint64
}

// NewLoop opens a loop over the named poller backend ("auto" for the best).
func NewLoop(id int, backend string) (*Loop, error) {
	now := time.Now()
	l := &Loop{
		id:    id,
		ready: make([]Ready, 512),
		now:   time.Now,
		clock: now,
		epoch: now,
		done:  make(chan struct{}),
	}
	p, err := openForLoop(backend, nil, &l.calls)
	if err != nil {
		return nil, err
	}
	l.waker = p.wakeup()
	l.adopt(p)
	return l, nil
}

// adopt makes p the loop's poller, doing what its Caps declare.
func (l *Loop) adopt(p Poller) {
	l.poller, l.caps, l.io = p, p.Caps(), p.sockIO()
	l.selfCounting = l.caps&CapCountsCalls != 0
	l.setName(p.Name())
}

// ID is the loop's index in its group.
func (l *Loop) ID() int { return l.id }

// Backend is the name of the loop's poller backend. Safe from any
// goroutine; it changes when the loop switches backends.
func (l *Loop) Backend() string { return *l.name.Load() }

// Caps is what the loop's poller can do. Call it from the loop: it
// changes when the loop switches backends.
func (l *Loop) Caps() Caps { return l.caps }

// Register adds fd to the loop. On edge-triggered backends the kernel
// registration covers both directions for the descriptor's life and want
// only filters what the handler sees.
func (l *Loop) Register(fd int, h Handler, want Interest) (*Desc, error) {
	var slot uint32
	if n := len(l.free); n > 0 {
		slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		slot = uint32(len(l.slots))
		l.slots = append(l.slots, nil)
		l.gens = append(l.gens, 1)
	}
	d := &Desc{loop: l, fd: fd, h: h, want: want, tok: Token(l.gens[slot])<<32 | Token(slot)}
	d.kernel = want
	if l.caps&CapEdgeTriggered != 0 {
		d.kernel = Read | Write
	}
	if err := l.poller.Add(fd, d.kernel, d.tok); err != nil {
		l.free = append(l.free, slot)
		return nil, fmt.Errorf("%s add fd %d: %w", l.poller.Name(), fd, err)
	}
	l.slots[slot] = d
	l.adds.Add(1)
	l.descs.Add(1)
	return d, nil
}

func (l *Loop) release(d *Desc) {
	slot := uint32(d.tok)
	l.slots[slot] = nil
	// Generation 0 is never used, so no live token is ever zero.
	if l.gens[slot]++; l.gens[slot] == 0 {
		l.gens[slot] = 1
	}
	l.free = append(l.free, slot)
	l.descs.Add(-1)
}

// lookup returns the live descriptor a token names, or nil for a stale one.
func (l *Loop) lookup(tok Token) *Desc {
	slot := uint32(tok)
	if int(slot) >= len(l.slots) {
		return nil
	}
	d := l.slots[slot]
	if d == nil || d.tok != tok {
		return nil
	}
	return d
}

// AfterFunc schedules f to run on the loop after d. Call it from the loop.
func (l *Loop) AfterFunc(d time.Duration, f func()) *Timer {
	t := l.NewTimer(f)
	t.Reset(d)
	return t
}

// NewTimer returns a timer for f that is not scheduled yet: an owner that
// arms and stops one timer many times (a request's successive timeouts)
// allocates it once and calls Reset.
func (l *Loop) NewTimer(f func()) *Timer {
	t := new(Timer)
	l.InitTimer(t, f)
	return t
}

// InitTimer makes *t a timer for f that is not scheduled yet, for an owner
// that holds its Timer by value: the Timer then shares the owner's cache
// lines, which a request touches anyway, instead of being one more cold
// object per Reset and Stop. The loop keeps t's address until t fires or,
// after Stop, until its old deadline passes, so t must stay where it is
// and be reused only there (assigning an owner's struct over itself with
// the Timer's own value, as a free list does, is harmless).
func (l *Loop) InitTimer(t *Timer, f func()) {
	if t.loop != nil && t.index >= 0 {
		panic("netpoll: InitTimer of a timer the loop still holds")
	}
	*t = Timer{loop: l, index: -1, f: f}
}

// nowNs is now in a timer's units, nanoseconds since the loop's epoch
// (monotonic: both times carry the monotonic clock reading).
func (l *Loop) nowNs() int64 { return int64(l.clock.Sub(l.epoch)) }

// Now returns the loop's idea of the current time (the start of the current
// iteration): timers do not need more precision than one iteration, and
// this saves a clock read per timer.
func (l *Loop) Now() time.Time { return l.clock }

// Post queues f to run on the loop and wakes it. Safe from any goroutine;
// this is how other loops and the handshake workers talk to a loop.
func (l *Loop) Post(f func()) { l.PostFor(nil, f) }

// PostFor is Post for work that belongs to o (a connection whose
// handshake finished, say): a panic in f abandons o. A nil o is Post.
func (l *Loop) PostFor(o Owner, f func()) {
	l.taskMu.Lock()
	l.tasks = append(l.tasks, task{f, o})
	l.taskMu.Unlock()
	l.waker.wake()
}

// task is a posted function and the owner of its work, if any.
type task struct {
	f     func()
	owner Owner
}

// FlushLater asks for f.Flush at the end of this iteration. The caller keeps
// its own "already queued" flag so that it is queued once per iteration.
func (l *Loop) FlushLater(f Flusher) { l.flushes = append(l.flushes, f) }

// ErrStopped is returned by Run after Stop.
var ErrStopped = errors.New("loop stopped")

// Run runs the loop on the calling goroutine, locked to its OS thread, until
// Stop. It returns ErrStopped, or the poller's error if waiting failed.
func (l *Loop) Run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l.running.Store(true)
	defer close(l.done)
	for !l.stopping.Load() {
		if err := l.RunOnce(l.nextTimeout()); err != nil {
			return err
		}
	}
	return ErrStopped
}

func (l *Loop) nextTimeout() time.Duration {
	if len(l.kicks) > 0 || len(l.flushes) > 0 {
		return 0
	}
	l.taskMu.Lock()
	pending := len(l.tasks)
	l.taskMu.Unlock()
	if pending > 0 {
		return 0
	}
	when, ok := l.timers.next()
	if !ok {
		return -1
	}
	d := time.Duration(when - int64(l.now().Sub(l.epoch)))
	if d < 0 {
		d = 0
	}
	return d
}

// RunOnce runs one iteration: wait up to timeout, pass through the Go
// scheduler if the loop has not for a while (yield.go), dispatch readiness
// events, then kicked events, expired timers, posted tasks, and finally the
// flushes those asked for. Call it from one thread, locked
// (runtime.LockOSThread) as Run does: io_uring binds a loop's ring to the
// thread of its first wait.
func (l *Loop) RunOnce(timeout time.Duration) error {
	n, err := l.poller.Wait(l.ready, timeout)
	l.waits.Add(1)
	if !l.selfCounting {
		l.calls.Add(1)
	}
	if err != nil {
		return fmt.Errorf("%s wait: %w", l.poller.Name(), err)
	}
	l.clock = l.now()
	l.maybeYield()
	if abCostEnabled {
		l.abCost()
	}
	l.maybeReadCPU()
	delivered := 0
	for i := 0; i < n; i++ {
		delivered += l.dispatch(l.ready[i])
	}
	if n == len(l.ready) && len(l.ready) < 1<<14 {
		l.ready = make([]Ready, 2*len(l.ready)) // a full batch: take more next time
	}
	// Kicks queued while handling kicks run next iteration, so a handler
	// that keeps kicking itself cannot starve the poller.
	if k := len(l.kicks); k > 0 {
		batch := l.kicks[:k:k]
		l.kicks = l.kicks[k:]
		for _, r := range batch {
			delivered += l.dispatch(r)
		}
		if len(l.kicks) == 0 {
			l.kicks = batch[:0]
		}
	}
	l.events.Add(uint64(delivered))
	l.runTimers()
	l.runTasks()
	// Flushes asked for while flushing (a writer resumed by a drained
	// socket) wait for the next iteration, so one fast stream cannot keep
	// the loop from polling.
	if len(l.flushes) > 0 {
		fl := l.flushes
		l.flushes = l.spareFlushes[:0]
		for i, f := range fl {
			l.flush(f)
			fl[i] = nil
		}
		l.spareFlushes = fl[:0]
	}
	return nil
}

func (l *Loop) dispatch(r Ready) int {
	d := l.lookup(r.Token)
	if d == nil {
		return 0 // closed earlier in this batch, maybe already reused
	}
	mask := EventHup | EventErr
	if d.want&Read != 0 {
		mask |= EventRead
	}
	if d.want&Write != 0 {
		mask |= EventWrite
	}
	if m := d.moved; m != nil && len(m.out) > 0 && r.Events&(EventWrite|EventErr) != 0 {
		// A previous backend's unsent bytes go first; an error is met
		// again by the handler's next Write.
		d.writeMoved()
	}
	ev := r.Events & mask
	if ev == 0 {
		return 0
	}
	// One deferred call per event: open-coded, it costs the event a few
	// instructions unless the handler panics.
	defer l.contain(StageEvent, d.h, d)
	d.h.HandleEvent(ev)
	return 1
}

// fire runs a due timer's function.
func (l *Loop) fire(t *Timer) {
	defer l.contain(StageTimer, t.owner, nil)
	t.f()
}

// runTask runs a posted task.
func (l *Loop) runTask(t task) {
	defer l.contain(StageTask, t.owner, nil)
	t.f()
}

// flush runs a flush asked for with FlushLater.
func (l *Loop) flush(f Flusher) {
	defer l.contain(StageFlush, f, nil)
	f.Flush()
}

func (l *Loop) runTimers() {
	if _, ok := l.timers.next(); !ok {
		l.ntimers.Store(0)
		return
	}
	l.clock = l.now()
	l.timers.expire(l, l.nowNs())
	l.ntimers.Store(int64(l.npending))
}

func (l *Loop) runTasks() {
	l.taskMu.Lock()
	tasks := l.tasks
	l.tasks = l.spare[:0]
	l.taskMu.Unlock()
	for i, t := range tasks {
		l.runTask(t)
		tasks[i] = task{}
	}
	l.spare = tasks[:0]
}

// Stop asks the loop to return from Run. Safe from any goroutine.
func (l *Loop) Stop() {
	l.stopping.Store(true)
	l.waker.wake()
}

// Done is closed when Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Close releases the poller. Call it after Run has returned (or instead of
// Run); descriptors still registered are left to their owners.
func (l *Loop) Close() error { return l.poller.Close() }

// Stats returns a snapshot of the loop's counters. Safe from any goroutine.
func (l *Loop) Stats() Stats {
	s := Stats{
		Loop:        l.id,
		Backend:     l.Backend(),
		Waits:       l.waits.Load(),
		Calls:       l.calls.Load(),
		Events:      l.events.Load(),
		Adds:        l.adds.Load(),
		Mods:        l.mods.Load(),
		Dels:        l.dels.Load(),
		Descriptors: l.descs.Load(),
		Timers:      l.ntimers.Load(),
		Switches:    l.switches.Load(),
		Panics:      l.panics.Load(),
		Yields:      l.yields.Load(),
		Wakeups:     l.waker.wakeups(),
		CPU:         time.Duration(l.cpu.Load()),
	}
	return s
}
