package h2

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Receive-window autotuning. A fixed window caps one upload at window/RTT
// (1 MiB at 50 ms: 20 MiB/s) whatever the link, so the windows grow with
// the measured bandwidth-delay product. PINGs carrying a payload that marks
// them as ours measure the round trip (the smallest one seen counts: a
// PING that waited behind queued DATA comes back late); the DATA is
// counted as it arrives, in intervals of at most that round trip, and an
// interval that holds 2/3 of the stream window says the client was held
// back by our credit, not by its link: the path takes at least a window
// per round trip. Then the windows grow at once to a multiple of the
// window: a WINDOW_UPDATE for the connection and a new
// SETTINGS_INITIAL_WINDOW_SIZE for the streams, which RFC 9113 §6.9.2
// applies to the open streams too. Judging the DATA as it arrives, rather
// than the bytes between a PING and its acknowledgement (gRPC's BDP
// estimator, which this tuner first followed), grows the windows a round
// trip sooner: as soon as the burst our SETTINGS allowed has arrived, two
// round trips after the client's first byte instead of three (see
// tuneData for the timeline). When the TLS handshake measured the round
// trip, the client's first flight is judged as well, a round trip sooner
// still (tuneFirstFlight).
//
// Growth is bounded twice: per connection by Config.MaxConnWindow, and
// process-wide by a WindowBudget that every connection's growth above its
// configured ConnWindow is charged to and that gets the bytes back when the
// connection ends. A window is credit, not a buffer: nothing is allocated
// when it grows. But credit becomes buffered bytes when the origin is
// slower than the client (the request body waits in the backend
// connection's output until the origin's socket takes it, and the client's
// window reopens only then: see Consumed), so the bound on what a
// connection can make pollproxy hold is its connection window, and the
// bound on what all connections together hold beyond their defaults is the
// budget.

// bdpPingTag starts the payload of our measuring PINGs; a sequence number
// follows, so a stale or forged acknowledgement is not taken for the one we
// wait for.
var bdpPingTag = [4]byte{'p', 'p', 'b', 'w'}

const (
	// windowGrowth is how many times the window (or the sample that
	// showed it limiting, the larger) the windows grow to. gRPC grows to
	// twice the sample, keeping the window under twice the path's BDP;
	// here the ceiling (Config.MaxConnWindow) and the budget bound the
	// overshoot, and a window-limited interval says only that the path
	// takes at least this much, so the first one takes the default 1 MiB
	// window straight to the 32 MiB ceiling, where the measuring stops.
	// Every round trip spent growing costs a long-path upload dearly: 100
	// MiB at 300 MiB/s lasts six 50 ms round trips, and the second sample
	// of an eightfold growth had its round trip stretched by the data
	// queued ahead of its acknowledgement (the upload speeds of each choice
	// are in docs/performance.md, "Windows that fit the path").
	windowGrowth = 32
	// sampleEvery: once a round trip is known, a PING goes out when
	// 1/sampleEvery of a stream window arrived since the last (64 KiB at
	// the default window), never two at once: at most one per round trip
	// in a large upload, and for small request bodies at most one per 64
	// KiB of them. They only look for a smaller round trip. The first goes
	// out at the connection's first DATA (see tuneData).
	sampleEvery = 16
	// ampleRate, bytes per second, is the most a window is grown to
	// carry (see ampleWindow): 1 GiB/s, more than a 10 Gbit/s link and
	// than one loop decrypts, so windows grow to 1 MiB per millisecond of
	// round trip (32 MiB, the ceiling, at 31 ms), and the default 1 MiB
	// stream window does not grow at round trips under a millisecond.
	ampleRate = 1 << 30
	// defaultMaxConnWindow bounds a connection's window (see
	// Config.MaxConnWindow for why 32 MiB).
	defaultMaxConnWindow = 32 << 20
	// DefaultWindowBudgetBytes is the size of DefaultWindowBudget.
	DefaultWindowBudgetBytes = 256 << 20
)

// WindowBudget is the receive-window credit that connections may hold
// beyond their configured Config.ConnWindow, shared by every connection
// given the same budget: so that 10,000 connections cannot each claim
// Config.MaxConnWindow. A connection takes from it as its window grows and
// returns everything it took when it ends; one that holds some while it
// has no stream goes away when others were refused (see windowHoldIdle).
// It is safe for concurrent use by connections on different loops.
type WindowBudget struct {
	limit int64
	used  atomic.Int64
	// shortfalls counts the grants that gave less than was asked: a
	// connection held back by the budget. goAways counts the idle
	// connections that went away to give theirs back.
	shortfalls, goAways atomic.Uint64
}

// NewWindowBudget returns a budget of limit bytes.
func NewWindowBudget(limit int64) *WindowBudget {
	return &WindowBudget{limit: max(limit, 0)}
}

var defaultWindowBudget = NewWindowBudget(DefaultWindowBudgetBytes)

// DefaultWindowBudget is the process-wide budget of the connections whose
// Config.WindowBudget is nil: DefaultWindowBudgetBytes (256 MiB), eight
// connections at the 32 MiB maximum, more fast uploads over long paths than
// a proxy usually carries at once, and a bounded worst case (on top of the
// default windows) when all their origins stall.
func DefaultWindowBudget() *WindowBudget { return defaultWindowBudget }

// Limit reports the budget's size in bytes.
func (b *WindowBudget) Limit() int64 { return b.limit }

// Used reports the bytes granted to connections now.
func (b *WindowBudget) Used() int64 { return b.used.Load() }

// Shortfalls reports how many grants gave a connection less than it asked
// for since the budget was made: windows the budget kept from growing.
func (b *WindowBudget) Shortfalls() uint64 { return b.shortfalls.Load() }

// GoAways reports how many connections holding a grant with no stream open
// went away to give it back, since the budget was made (see
// windowHoldIdle).
func (b *WindowBudget) GoAways() uint64 { return b.goAways.Load() }

// take grants up to want bytes and reports how many; a grant short of
// want is counted as a shortfall.
func (b *WindowBudget) take(want int64) int64 {
	for {
		used := b.used.Load()
		got := max(min(want, b.limit-used), 0)
		if got == 0 || b.used.CompareAndSwap(used, used+got) {
			if got < want {
				b.shortfalls.Add(1)
			}
			return got
		}
	}
}

func (b *WindowBudget) give(n int64) {
	if n > 0 {
		b.used.Add(-n)
	}
}

// windowTuner is a connection's autotuning state.
type windowTuner struct {
	streamWin int64 // the SETTINGS_INITIAL_WINDOW_SIZE advertised now
	connWin   int64 // the connection window's size now
	granted   int64 // taken from the budget

	run     int64 // DATA bytes since the last PING: the next goes out past a threshold
	sample  int64 // DATA bytes since the PING went out
	sentAt  time.Time
	seq     uint32
	pinging bool // a PING of ours is unacknowledged
	first   bool // the PING out is the first: no round trip was known when it left
	// earlyJudged: the first flight was judged (see tuneFirstFlight).
	earlyJudged bool

	minRTT  time.Duration // the smallest round trip measured; 0 until one is
	ivStart time.Time     // when the current interval's first DATA arrived
	ivBytes int64         // DATA bytes in the current interval
	// Before a round trip is known: when the last DATA arrived and the
	// longest pause between two, both counted from sentAt.
	lastData, maxGap time.Duration

	// The first flight (see tuneFirstFlight): the round trip the TLS
	// handshake measured (0: none) and the DATA bytes that arrived before
	// the client acknowledged our SETTINGS. (Its start is the first
	// PING's sentAt; the fields fit h2.ServerConn in its allocation class
	// still, 1,280 bytes, which idle connections pay for.)
	hsRTT time.Duration
	early int64

	// shortSeen is the budget's shortfall count when the connection last
	// looked, while it holds a grant and no stream (see holdIdle).
	shortSeen uint64
}

func (w *windowTuner) init(cfg *Config) {
	w.streamWin = int64(cfg.StreamWindow)
	w.connWin = int64(cfg.ConnWindow)
}

func (w *windowTuner) pingData() [8]byte {
	var d [8]byte
	copy(d[:4], bdpPingTag[:])
	binary.BigEndian.PutUint32(d[4:], w.seq)
	return d
}

// limited reports whether bytes that arrived within span (at most one
// round trip) say the client was held back by our credit: at least 2/3 of
// the stream window per smallest round trip. A client that sends that
// much in a round trip had the window (nearly) used up before any credit
// could come back, so the path's bandwidth-delay product is at least that.
// A window that already carries ampleRate at the smallest round trip is
// never limited (see ampleWindow).
func (w *windowTuner) limited(bytes int64, span time.Duration) bool {
	if w.streamWin >= ampleWindow(w.minRTT) {
		return false
	}
	return 3*float64(bytes)*float64(w.minRTT) >= 2*float64(w.streamWin)*float64(max(span, w.minRTT))
}

// ampleWindow is the window that carries ampleRate at the round trip rtt
// (the smallest measured, or the handshake's), the most the windows grow
// to. On loopback and in a LAN a burst of a window within a round trip
// says only that the loop read a socket's backlog at once (the origin's
// socket took a burst, the credit went back in one piece, the client
// answered with a burst), and the round trip a PING measures there is
// mostly the loops' own latency: growing 32-fold on it bought no speed,
// and let an origin slower than the client make pollproxy hold the 32 MiB
// (what that cost a loopback upload is in docs/performance.md).
func ampleWindow(rtt time.Duration) int64 {
	return int64(ampleRate * rtt.Seconds())
}

// tuneData counts n bytes of DATA (padding included) against the
// connection window, judges whether the client is held back by the
// window, and sends a measuring PING when it is time.
//
// Until a round trip is known, a PING goes out at the first DATA. A
// client's first DATA comes with its first flight (the default 64 KiB
// window), so the PING reaches it with our SETTINGS, and its answer comes
// back with the burst those allowed, a round trip after the first flight:
// before it, after it, or amid it. From then on, the DATA is counted in
// intervals of at most the smallest round trip measured; an interval that
// collects 2/3 of the stream window grows the windows at once, a round
// trip earlier than waiting for the next PING's acknowledgement would.
// The smallest round trip, since a PING that waits behind queued DATA
// (in the client's socket, in the path) comes back late, and a longer
// interval would take a queue for a long path. Before the first answer
// the interval restarts at the DATA that ends the longest pause since the
// PING left: the start of the burst, so that a burst the answer lands
// amid is judged whole. Later PINGs (one per 1/sampleEvery of a stream
// window of DATA, never two at once) only look for a smaller round trip.
//
// The timeline of an upload, in round trips from the client's first byte:
// the first flight arrives at 0.5, with the PING going out beside our
// SETTINGS; the client has them at 1 and sends the window they allowed,
// which arrives at 1.5 with (or near) the PING's answer, and the grown
// windows go out then and reach the client at 2. Judging the PING's sample
// at its answer instead, the first sample is the first flight, the second
// PING leaves at 1.5 and its answer at 2.5 grows the windows, which reach
// the client at 3. When the TLS handshake measured the round trip, the
// first flight itself is judged (tuneFirstFlight) and the grown windows
// reach the client at 1, with our SETTINGS' answer to its first flight;
// sooner would be credit before any measurement.
func (c *ServerConn) tuneData(n uint32) {
	w := &c.win
	if c.cfg.MaxConnWindow <= c.cfg.ConnWindow || // autotuning is off
		w.connWin >= int64(c.cfg.MaxConnWindow) && w.streamWin >= w.connWin {
		return
	}
	now := c.clock.Now()
	switch {
	case w.minRTT > 0:
		if w.ivBytes == 0 || now.Sub(w.ivStart) >= w.minRTT {
			w.ivStart, w.ivBytes = now, 0
		}
		w.ivBytes += int64(n)
		if w.limited(w.ivBytes, 0) {
			w.ivBytes = 0 // the next interval is judged against the new window
			// Grow from the window, not from the interval's bytes, which
			// miss what was in flight when the interval began.
			c.growWindows(windowGrowth*w.streamWin, w.minRTT)
		}
	case w.pinging:
		at := now.Sub(w.sentAt)
		if gap := at - w.lastData; gap > w.maxGap {
			w.maxGap = gap
			w.ivStart, w.ivBytes = now, 0
		}
		w.lastData = at
		w.ivBytes += int64(n)
	}
	if w.pinging {
		w.sample += int64(n)
		return
	}
	w.run += int64(n)
	if w.minRTT > 0 && w.run < w.streamWin/sampleEvery {
		return
	}
	w.run = 0
	w.seq++
	w.pinging = true
	w.first = w.minRTT == 0
	w.sample = 0
	w.sentAt = now
	if w.first {
		w.ivStart, w.ivBytes, w.lastData, w.maxGap = now, 0, 0, 0
	}
	c.framer().WritePing(false, w.pingData())
}

// tunePingAck takes a PING acknowledgement; when it answers our measuring
// PING it is a round trip measured. Any other is ignored.
func (c *ServerConn) tunePingAck(data [8]byte) {
	w := &c.win
	if !w.pinging || data != w.pingData() {
		return
	}
	w.pinging = false
	rtt := c.clock.Now().Sub(w.sentAt)
	if rtt <= 0 {
		return // no clock progress: nothing measured
	}
	if w.minRTT == 0 || rtt < w.minRTT {
		w.minRTT = rtt
	}
	// The first PING's sample is judged here, since no round trip was
	// known to count its DATA in intervals by; later samples were. If it
	// does not grow the windows, its last interval (which began after the
	// PING left, so within the round trip) goes on.
	if w.first && w.limited(w.sample, rtt) {
		w.ivBytes = 0
		c.growWindows(windowGrowth*max(w.sample, w.streamWin), w.minRTT)
	}
}

// tuneFirstFlight judges the DATA that arrives before the client has
// acknowledged our SETTINGS (the first flight, sent with the client's
// Finished): the client sent it under the protocol's default windows
// (65,535 bytes), not knowing ours yet. When all of that arrives within
// the round trip the TLS handshake measured (see stream.PathRTT), the
// default window held the client back, and the windows grow at once, as
// tuneData grows them on a limited interval, to the multiple of our
// stream window that windowGrowth gives and at most to ampleWindow of
// that round trip. The grown windows go out right behind our SETTINGS
// (which leave when the handshake ends, as the first flight arrives), so
// they reach the client one round trip after its first byte, with the
// SETTINGS: the round trip of sending and measuring the burst those
// SETTINGS allow (tuneData's timeline) is saved. No PING is waited
// for: the handshake has measured the round trip already, and it is not
// shorter than the path's (it includes the client's work on our
// certificate), so it errs towards more credit, within the same bounds
// as any growth (Config.MaxConnWindow, the WindowBudget).
//
// Only a body that the window our SETTINGS give cannot carry grows them:
// one whose stream is not ended and whose declared content-length (if
// any) has more than a stream window still to come, and no further than
// that length. A form's 50 KiB POST fills the default window as well; it
// does not need 32 MiB of credit, nor a 4 MiB upload more than 4, nor to
// hold more of the budget for the connection's life.
// A first flight spread over more than the round trip is the client's
// own pace, not a window's. It is judged while the first PING, which
// tuneData sent at the first DATA (unless autotuning is off), is
// unanswered; after that, the round trip it measured serves better.
func (c *ServerConn) tuneFirstFlight(s *h2Stream, n uint32, end bool) {
	w := &c.win
	if w.earlyJudged || w.hsRTT <= 0 || !w.first || !w.pinging {
		return
	}
	w.early += int64(n)
	switch {
	case c.clock.Now().Sub(w.sentAt) > w.hsRTT:
		w.earlyJudged = true
	case w.early >= initialWindow:
		w.earlyJudged = true
		if end || s.declared >= 0 && s.declared-s.recv <= w.streamWin {
			return
		}
		target := windowGrowth * w.streamWin
		if s.declared >= 0 {
			// No more than the whole body needs: a stream window of its
			// length carries the rest without waiting for credit.
			target = min(target, s.declared)
		}
		c.growWindows(target, w.hsRTT)
	}
}

// growWindows raises the connection window towards target, as far as
// Config.MaxConnWindow, ampleWindow at the round trip rtt and the budget
// allow, and the stream window to match it (a stream never needs more
// credit than its connection has).
func (c *ServerConn) growWindows(target int64, rtt time.Duration) {
	w := &c.win
	target = min(target, int64(c.cfg.MaxConnWindow), ampleWindow(rtt))
	if need := target - w.connWin; need > 0 {
		if got := c.cfg.WindowBudget.take(need); got > 0 {
			w.granted += got
			w.connWin += got
			c.inflow.grow(int32(got))
			c.framer().WriteWindowUpdate(0, uint32(got))
		}
	}
	st := min(target, w.connWin)
	if st <= w.streamWin {
		return
	}
	delta := st - w.streamWin
	w.streamWin = st
	// The client adds delta to every stream's send window when it applies
	// the setting; we may credit it now, since accepting more than the
	// client was told is safe.
	for _, s := range c.streams {
		if !s.remoteEnded {
			s.inflow.grow(int32(delta))
		}
	}
	c.framer().WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(st)})
}

// releaseWindow returns the connection's growth to the budget.
func (c *ServerConn) releaseWindow() {
	c.cfg.WindowBudget.give(c.win.granted)
	c.win.granted = 0
}

// windowHoldIdle is how long a connection may hold a grant from the
// WindowBudget with no stream open while other connections are refused
// some: then it goes away (a GOAWAY, as at its Config.IdleTimeout) and the
// grant comes back. Credit cannot be taken back in h2 (a WINDOW_UPDATE
// only adds, and a smaller SETTINGS_INITIAL_WINDOW_SIZE leaves the
// connection window alone), so until the client spends it, closing is
// the only way to free it; and a client that finished a large upload over
// a long path holds up to Config.MaxConnWindow of it for nothing until its
// idle timeout (2 min). Without the rule, eight such connections could
// keep every later upload at the default windows for two minutes; a 64
// KiB first flight (tuneFirstFlight) is enough to claim a share. When no
// connection is refused, the grant stays, and the client's next upload
// on the connection starts at the grown windows. Two seconds: a client's
// next request in a sequence (the next file of a batch, the page after a
// form) comes sooner, and a refused upload does not run at the default
// windows for much longer than that.
const windowHoldIdle = 2 * time.Second

// holdIdle is called when the connection's last stream closed: one that
// holds a grant looks at the budget's shortfalls windowHoldIdle from now,
// and every windowHoldIdle after, on its idle timer (budgetWanted).
func (c *ServerConn) holdIdle() {
	if c.win.granted == 0 || c.idleTimer == nil {
		return
	}
	c.win.shortSeen = c.cfg.WindowBudget.shortfalls.Load()
	if c.cfg.IdleTimeout <= windowHoldIdle {
		return // the idle timeout comes first
	}
	c.armIdle(windowHoldIdle)
}

// budgetWanted reports whether the connection, idle for idle and holding
// a grant, should go away for it: some other connection was refused a
// grant since the last look (holdIdle or the previous call).
func (c *ServerConn) budgetWanted(idle time.Duration) bool {
	if c.win.granted == 0 || idle < windowHoldIdle {
		return false
	}
	n := c.cfg.WindowBudget.shortfalls.Load()
	wanted := n != c.win.shortSeen
	c.win.shortSeen = n
	if wanted {
		c.cfg.WindowBudget.goAways.Add(1)
	}
	return wanted
}
