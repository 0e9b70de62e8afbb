package streamtest

import (
	"net/netip"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Epoch is where a Transport's clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Transport is a stream.Transport in memory that plays the event loop for
// a front end's tests: what the front end writes waits in Pending until
// the test drains it, and each call into the front end is a step (Step,
// Feed, Drain, Advance) after which the transport delivers what the real
// loop owes before its next event: the Feed owed after PauseRead(false),
// with no new bytes, and the Flush asked for with FlushLater. Time is a
// manual Clock. Like the loop it stands in for it is not safe for
// concurrent use: one goroutine, or one mutex, owns it.
type Transport struct {
	// Conn is the front end the steps drive; set it once it is made.
	Conn stream.ServerConn

	// Pending is what was written and is not yet "on the socket";
	// Drain empties it.
	Pending []byte
	// InFlight counts bytes a test took out of Pending and is still
	// writing somewhere (a real connection): Buffered counts them too.
	InFlight int
	// Record keeps everything written in Output as well.
	Record bool
	Output []byte
	// Discard keeps nothing of what is written: only the counts
	// (benchmarks, where only the front end's cost is measured).
	Discard bool

	Written     int // bytes written
	Writes      int // Write calls
	MaxBuffered int // the most Buffered has been after a Write

	Closed          bool
	Paused          bool // reading is paused (PauseRead)
	Pauses, Resumes int  // PauseRead(true) and PauseRead(false) calls
	FlushOwed       bool // FlushLater was called: Flush ends the step
	FeedOwed        bool // PauseRead(false) was called: a Feed is owed
	Feeds           int  // owed Feeds delivered
	FeedErr         error
	// DrainedAfterFlush has a Flush that leaves nothing buffered followed
	// by OnDrained, as the real connection does once the socket took
	// everything: for a test whose "socket" takes bytes on its own.
	DrainedAfterFlush bool

	// Time is the clock the front end reads and its timers run on.
	Time *Clock
	// NoTimers gives the front end a clock whose timers never fire and
	// which allocates nothing, for allocation counts.
	NoTimers bool
	// Remote is RemoteAddr; RTT is what HandshakeRTT reports
	// (stream.PathRTT), 0 unless a test sets it.
	Remote netip.AddrPort
	RTT    time.Duration

	// OnWrite and OnClose, when set, are called after Write and Close:
	// for a test that logs events, or wakes a goroutine of its own.
	OnWrite func(p []byte)
	OnClose func()
}

// NewTransport returns a Transport whose clock starts at Epoch.
func NewTransport() *Transport {
	return &Transport{Time: NewClock(Epoch), Remote: netip.MustParseAddrPort("192.0.2.1:4242")}
}

var (
	_ stream.Transport = (*Transport)(nil)
	_ stream.PathRTT   = (*Transport)(nil)
)

// Write implements stream.Transport.
func (t *Transport) Write(p []byte) {
	t.Writes++
	t.Written += len(p)
	if !t.Discard {
		t.Pending = append(t.Pending, p...)
		if t.Record {
			t.Output = append(t.Output, p...)
		}
	}
	t.MaxBuffered = max(t.MaxBuffered, t.Buffered())
	if t.OnWrite != nil {
		t.OnWrite(p)
	}
}

// Buffered implements stream.Transport.
func (t *Transport) Buffered() int { return len(t.Pending) + t.InFlight }

// FlushLater implements stream.Transport.
func (t *Transport) FlushLater() { t.FlushOwed = true }

// PauseRead implements stream.Transport as the real one does: resuming
// never feeds inline, it owes a Feed that the end of the step delivers,
// paused or not before.
func (t *Transport) PauseRead(pause bool) {
	t.Paused = pause
	if pause {
		t.Pauses++
		return
	}
	t.Resumes++
	t.FeedOwed = true
}

// Close implements stream.Transport.
func (t *Transport) Close() {
	t.Closed = true
	if t.OnClose != nil {
		t.OnClose()
	}
}

// Clock implements stream.Transport.
func (t *Transport) Clock() stream.Clock {
	if t.NoTimers {
		return nopClock{}
	}
	return t.Time
}

// RemoteAddr implements stream.Transport.
func (t *Transport) RemoteAddr() netip.AddrPort { return t.Remote }

// HandshakeRTT implements stream.PathRTT.
func (t *Transport) HandshakeRTT() time.Duration { return t.RTT }

// maxOwed bounds how many Flushes and Feeds one step may owe in a row: a
// front end that keeps asking would spin a real loop.
const maxOwed = 1000

// Step runs f as one iteration of the loop, then delivers what the loop
// owes the front end before its next event — the Feeds owed after
// PauseRead(false) while reading is not paused again, and the Flush asked
// for — until nothing is owed or the transport is closed (the real
// connection drops its front end on Close). An owed Feed that fails
// closes the transport; the first such error is kept in FeedErr.
func (t *Transport) Step(f func()) {
	f()
	for i := 0; ; i++ {
		if i == maxOwed {
			panic("streamtest: the front end owed a Flush or Feed 1000 times in a row")
		}
		switch {
		case t.Closed:
			return
		case t.FeedOwed && !t.Paused:
			t.FeedOwed = false
			t.Feeds++
			if err := t.Conn.Feed(nil); err != nil {
				if t.FeedErr == nil {
					t.FeedErr = err
				}
				t.Closed = true
			}
		case t.FlushOwed:
			t.FlushOwed = false
			t.Conn.Flush()
			if t.DrainedAfterFlush && t.Buffered() == 0 && !t.Closed {
				t.Conn.OnDrained()
			}
		default:
			return
		}
	}
}

// EndStep delivers what the loop owes, as the end of a step the test ran
// by itself.
func (t *Transport) EndStep() { t.Step(func() {}) }

// Feed is one read event: the front end's Feed of p, as a step.
func (t *Transport) Feed(p []byte) error {
	var err error
	t.Step(func() { err = t.Conn.Feed(p) })
	return err
}

// Drain plays the socket taking everything pending, and the front end's
// OnDrained after it, as a step.
func (t *Transport) Drain() {
	t.Pending = t.Pending[:0]
	t.Step(t.Conn.OnDrained)
}

// Advance moves the clock on by d, running every timer that falls due on
// the way as a step of its own, at its own time.
func (t *Transport) Advance(d time.Duration) { t.Time.Advance(d, t.Step) }

// Fire moves the clock to the earliest pending deadline, if any, and runs
// what falls due there.
func (t *Transport) Fire() {
	if next, ok := t.Time.Next(); ok {
		t.Advance(next.Sub(t.Time.Now()))
	}
}

// nopClock stands still at Epoch and its timers never fire.
type nopClock struct{}

// nopTimer never fires.
type nopTimer struct{}

func (nopTimer) Stop() bool { return false }

func (nopClock) AfterFunc(time.Duration, func()) stream.Timer { return nopTimer{} }
func (nopClock) Now() time.Time                               { return Epoch }
