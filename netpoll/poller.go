package netpoll

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Interest is what the loop wants to hear about for one descriptor.
type Interest uint8

// Interests.
const (
	Read  Interest = 1 << iota // readable, or the peer closed
	Write                      // writable
)

// Event is what the kernel reported for one descriptor.
type Event uint8

// Events. Hang-up and error are reported together with Read (and Write for
// errors) so that a handler that only reads still sees them.
const (
	EventRead  Event = 1 << iota // bytes (or EOF) can be read
	EventWrite                   // the send buffer has room
	EventHup                     // the peer closed or half-closed
	EventErr                     // the descriptor has a pending error
)

// String names the events, for logs and test failures ("read|hup").
func (e Event) String() string {
	var parts []string
	for _, p := range []struct {
		bit  Event
		name string
	}{{EventRead, "read"}, {EventWrite, "write"}, {EventHup, "hup"}, {EventErr, "err"}} {
		if e&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Token is the opaque cookie stored with a registration and returned with
// every event for it. The Loop packs a slot index and a generation into it,
// so an event for a descriptor that was closed (and whose number was reused)
// earlier in the same batch is recognised and dropped.
type Token uint64

// Ready is one readiness report from Wait.
type Ready struct {
	Token  Token
	Events Event
}

// Poller is one kernel readiness queue, owned by exactly one goroutine (its
// Loop). Only Wake may be called from other goroutines.
type Poller interface {
	// Name is the backend's name: "epoll", "kqueue", "io_uring" or "poll".
	Name() string
	// Caps declares what the backend can do; it does not change while the
	// poller is open.
	Caps() Caps
	// Add registers fd with its interest and token.
	Add(fd int, want Interest, tok Token) error
	// Modify changes the interest of a registered fd.
	Modify(fd int, want Interest, tok Token) error
	// Remove forgets fd. It must be called before fd is closed.
	Remove(fd int) error
	// Wait blocks up to timeout (negative: forever; zero: no blocking) and
	// fills evs with ready descriptors, returning how many. A wake-up is
	// consumed inside Wait and is not reported as an entry; an interrupted
	// wait returns (0, nil) so the caller can recompute its timers.
	Wait(evs []Ready, timeout time.Duration) (int, error)
	// Wake makes a concurrent or the next Wait return promptly. Safe from
	// any goroutine; calls are coalesced until the poller wakes.
	Wake() error
	// Close releases the kernel queue and the wake-up descriptors.
	Close() error

	// What a Loop needs of its poller besides, which only this package's
	// backends provide:

	// wakeup is the waker the poller watches. A loop's switch opens the
	// next poller around it, so other goroutines never see it change.
	wakeup() *waker
	// disownWaker makes Close leave the waker open: it moved on.
	disownWaker()
	// sockIO is the poller's side of the socket interface (sockio.go):
	// non-nil exactly when Caps has CapCompletionIO.
	sockIO() sockIO
}

// Caps is what a backend can do, declared by the backend as a value (as
// nginx's ngx_event_flags and libevent's event_method_feature are) and
// read by the loop when it opens or switches to a poller: nothing about a
// backend is found out by asking what its type is.
type Caps uint8

// Capabilities.
const (
	// CapEdgeTriggered: a registration for both directions reports each
	// change of readiness once (epoll's EPOLLET, kqueue's EV_CLEAR,
	// io_uring's multishot poll). The loop registers a descriptor once
	// for Read|Write and filters events by the handler's interest,
	// telling the poller nothing until Remove; a handler reads or writes
	// until EAGAIN. Without it (poll, io_uring's completion mode) the
	// loop tells the poller, through Modify, every change of the
	// interest: on poll that is what the kernel must watch or the loop
	// spins, in completion mode it is when receives and waits for room
	// are armed.
	CapEdgeTriggered Caps = 1 << iota
	// CapCompletionIO: the poller does its sockets' I/O itself (io_uring's
	// completion mode: receives, sends and accepts on the ring), and a
	// Desc reads, writes and accepts through the poller's sockIO rather
	// than with system calls of its own. Switching away from it hands
	// what the poller holds over to the descriptors first (sockIO's
	// handOver).
	CapCompletionIO
	// CapCountsCalls: the poller counts its own system calls in the
	// counter a loop opens it with (io_uring: a wait may make no enter,
	// a full submission queue one more); otherwise the loop counts one
	// per wait.
	CapCountsCalls
)

// String names the capabilities, for logs and test failures
// ("edge|counts-calls").
func (c Caps) String() string {
	var parts []string
	for _, p := range []struct {
		bit  Caps
		name string
	}{{CapEdgeTriggered, "edge"}, {CapCompletionIO, "completion-io"}, {CapCountsCalls, "counts-calls"}} {
		if c&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "level"
	}
	return strings.Join(parts, "|")
}

type backend struct {
	name string
	pref int
	open func(*waker) (Poller, error) // nil: a new waker of its own
	// forLoop opens the backend for a Loop, which waits on it from its
	// own locked thread only, with the loop's counter of system calls
	// (for a backend with CapCountsCalls); nil: open serves loops too.
	forLoop func(w *waker, calls *atomic.Uint64) (Poller, error)
	// refused runs the backend's probe once and returns why this process
	// cannot use it (nil: it can); nil for backends that need no probe.
	refused func() error
	// describe says how the backend will run here (io_uring: which
	// mode); nil for backends that run one way.
	describe func() string
	// behind says why "auto" ranks this backend below one that is
	// available too, for AutoChoice to log; "" when its rank needs no
	// word (poll is behind epoll by its nature).
	behind string
}

var backends []backend

// register adds a backend; each backend file calls it from init behind its
// build tags. A higher pref wins for "auto".
func register(name string, pref int, open func(*waker) (Poller, error)) {
	registerProbed(backend{name: name, pref: pref, open: open}, nil)
}

// registerProbed adds a backend that the kernel or its sandbox may refuse
// although it is built in (io_uring): probe says why, or nil. It runs
// once, the first time something needs to know whether this backend works:
// Available, Unavailable, or naming it (auto reaches it only when every
// backend it prefers failed to open).
func registerProbed(b backend, probe func() error) {
	if probe != nil {
		b.refused = sync.OnceValue(probe)
	}
	backends = append(backends, b)
	sort.SliceStable(backends, func(i, j int) bool { return backends[i].pref > backends[j].pref })
}

// Describe says how the named backend runs on this system, when it can
// run more than one way ("" otherwise): for io_uring, whether a loop's
// ring does the sockets' I/O (completion mode) or reports readiness.
func Describe(name string) string {
	for _, b := range backends {
		if b.name == name && b.describe != nil && b.unavailable() == nil {
			return b.describe()
		}
	}
	return ""
}

// openFor opens b around w (nil: a new waker), for a loop counting its
// system calls in calls, or for no loop when calls is nil.
func (b backend) openFor(w *waker, calls *atomic.Uint64) (Poller, error) {
	if calls != nil && b.forLoop != nil {
		return b.forLoop(w, calls)
	}
	return b.open(w)
}

// unavailable says why b cannot be used here, or nil.
func (b backend) unavailable() error {
	if disabled(b.name) {
		return fmt.Errorf("disabled by POLLPROXY_NO_%s", strings.ToUpper(b.name))
	}
	if b.refused != nil {
		return b.refused()
	}
	return nil
}

// AutoChoice names the backend "auto" opens here and says why: the
// backends ranked above it that cannot run, and those available below it
// that have a reason to be there (io_uring, dearer than epoll per request
// where connections wait between requests). A proxy logs it at start, so that an operator sees why a
// backend the kernel offers is not the one serving.
func AutoChoice() (name, why string) {
	var reasons []string
	for _, b := range backends {
		err := b.unavailable()
		switch {
		case err != nil:
			reasons = append(reasons, fmt.Sprintf("%s unavailable: %v", b.name, err))
		case name == "":
			name = b.name
		case b.behind != "":
			reasons = append(reasons, fmt.Sprintf("%s available, ranked below %s: %s", b.name, name, b.behind))
		}
	}
	return name, strings.Join(reasons, "; ")
}

// ErrUnknownBackend is returned by Open for a name that is not built into
// this binary for this OS.
var ErrUnknownBackend = errors.New("unknown poller backend")

// ErrUnavailable is returned by Open and ValidName for a backend built
// into this binary that cannot be used here: switched off through
// POLLPROXY_NO_<NAME>, or refused by the kernel or a sandbox (io_uring
// under a seccomp filter). The error says why.
var ErrUnavailable = errors.New("poller backend unavailable")

// Auto is the backend name that selects the best backend available.
const Auto = "auto"

// Available lists the backends built for this OS, best first, leaving out
// those disabled through POLLPROXY_NO_<NAME> in the environment and those
// the kernel refuses (Unavailable says why).
func Available() []string {
	var names []string
	for _, b := range backends {
		if b.unavailable() == nil {
			names = append(names, b.name)
		}
	}
	return names
}

// Built lists the backends built into this binary for this OS, best first,
// without asking whether they work here: for help texts, which must not
// run a probe (a seccomp filter may kill a process that calls
// io_uring_setup instead of failing the call).
func Built() []string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.name
	}
	return names
}

// Refusal is a backend built into this binary that cannot be used here,
// and why.
type Refusal struct {
	Name   string
	Reason error
}

// Unavailable lists the backends built for this OS that Available leaves
// out, best first, each with its reason: what `pollproxy pollers` prints.
func Unavailable() []Refusal {
	var out []Refusal
	for _, b := range backends {
		if err := b.unavailable(); err != nil {
			out = append(out, Refusal{b.name, err})
		}
	}
	return out
}

func disabled(name string) bool {
	return os.Getenv("POLLPROXY_NO_"+strings.ToUpper(name)) != ""
}

// Open returns the named backend, or the best available one for "" or
// "auto". A named backend never silently falls back to another one: an A/B
// run must measure what it says it measures.
func Open(name string) (Poller, error) { return openWith(name, nil, nil) }

// openForLoop opens a backend for a Loop, around the wake-up it already
// has (nil: a new one), with the loop's counter of system calls.
func openForLoop(name string, w *waker, calls *atomic.Uint64) (Poller, error) {
	return openWith(name, w, calls)
}

// openWith is Open with the wake-up a loop already has (nil: a new one),
// for a loop counting system calls in calls, or for none (calls nil).
func openWith(name string, w *waker, calls *atomic.Uint64) (Poller, error) {
	if name == "" || name == Auto {
		var errs []error
		for _, b := range backends {
			if b.unavailable() != nil {
				continue
			}
			p, err := b.openFor(w, calls)
			if err == nil {
				return p, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
		return nil, fmt.Errorf("no poller backend could be opened: %w", errors.Join(errs...))
	}
	for _, b := range backends {
		if b.name == name {
			if err := b.unavailable(); err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrUnavailable, name, err)
			}
			p, err := b.openFor(w, calls)
			if err != nil {
				return nil, fmt.Errorf("open poller %q: %w", name, err)
			}
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w %q: available on this system: %s", ErrUnknownBackend, name, strings.Join(Available(), ", "))
}

// ValidName reports whether name is "auto" or a backend available here, with
// an error that lists the choices otherwise.
func ValidName(name string) error {
	if name == "" || name == Auto {
		return nil
	}
	for _, b := range backends {
		if b.name == name {
			if err := b.unavailable(); err != nil {
				return fmt.Errorf("%w %q: %w", ErrUnavailable, name, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%w %q: available on this system: %s", ErrUnknownBackend, name, strings.Join(Available(), ", "))
}

// timeoutMillis converts a wait timeout to the milliseconds epoll_wait and
// poll take, rounding up so a timer due in 300µs does not become a busy
// zero-timeout spin.
func timeoutMillis(d time.Duration) int {
	if d < 0 {
		return -1
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<30 {
		ms = 1 << 30
	}
	return int(ms)
}
