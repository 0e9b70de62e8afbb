package h2

import (
	"bytes"
	"cmp"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/internal/eventually"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// The window tests upload over TCP to a handler that consumes at once, as
// an origin faster than the client would. The client answers the server's
// measuring PINGs itself after moving the server's manual clock by a round
// trip, so the samples (bytes per round trip) are exact, and it keeps the
// credit the server advertised: the window sizes it sees once every byte
// was consumed.

const testRTT = 50 * time.Millisecond

// uploader is one connection and one POST stream whose body never ends.
type uploader struct {
	t      testing.TB
	conn   net.Conn
	fr     *http2.Framer
	ts     *testServer
	frames chan srvFrame
	id     uint32

	connAvail, streamAvail int64 // send credit
	streamSetting          int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	sent                   int64
	ourPings               int       // measuring PINGs seen
	pending                *[8]byte  // a measuring PING not yet answered
	syncAck                chan bool // our own PING came back
	chunk                  []byte
	rtt                    time.Duration // what round advances the server's clock by
	connUpdates            int           // connection WINDOW_UPDATEs seen
	// holdAcks keeps the SETTINGS acknowledgements back (counted in
	// acksOwed): a client whose first flight is still on its way.
	holdAcks bool
	acksOwed int
}

func newUploader(t testing.TB, cfg Config) *uploader {
	t.Helper()
	u := dialUploader(t, cfg, 0)
	u.request(-1, false)
	u.sync() // the server's SETTINGS are applied
	return u
}

// dialUploader connects to a server whose transport reports hsRTT as its
// handshake's round trip and sends the preface and an empty SETTINGS; it
// reads nothing yet.
func dialUploader(t testing.TB, cfg Config, hsRTT time.Duration) *uploader {
	t.Helper()
	consume := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &events{body: func(p []byte) { w.Consumed(len(p)) }}
	})
	conn, ts := startServerRTT(t, consume, cfg, true, 0, hsRTT)
	u := &uploader{t: t, conn: conn, ts: ts, frames: make(chan srvFrame, 64), id: 1,
		connAvail: initialWindow, streamAvail: initialWindow, streamSetting: initialWindow,
		chunk: make([]byte, 16384), rtt: testRTT}
	u.fr = http2.NewFramer(conn, conn)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, clientPreface); err != nil {
		t.Fatal(err)
	}
	u.fr.WriteSettings()
	go func() {
		defer close(u.frames)
		rd := http2.NewFramer(io.Discard, conn)
		for {
			f, err := rd.ReadFrame()
			if err != nil {
				return
			}
			u.frames <- copyFrame(f)
		}
	}()
	return u
}

// request opens the upload's stream: a POST with content-length cl (none
// when negative), ended at once when end is set.
func (u *uploader) request(cl int64, end bool) {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", "/up"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	if cl >= 0 {
		enc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(cl, 10)})
	}
	u.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: u.id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: end})
}

// srvFrame is what the uploader needs of a frame, copied out of the
// Framer (which owns its frames only until the next read).
type srvFrame struct {
	typ       http2.FrameType
	ack       bool
	streamID  uint32
	increment uint32
	initWin   uint32
	hasInit   bool
	data      [8]byte
	code      http2.ErrCode
	debug     string
}

func copyFrame(f http2.Frame) srvFrame {
	s := srvFrame{typ: f.Header().Type, streamID: f.Header().StreamID}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		s.ack = f.IsAck()
		s.initWin, s.hasInit = f.Value(http2.SettingInitialWindowSize)
	case *http2.WindowUpdateFrame:
		s.increment = f.Increment
	case *http2.PingFrame:
		s.ack, s.data = f.IsAck(), f.Data
	case *http2.GoAwayFrame:
		s.code, s.debug = f.ErrCode, string(f.DebugData())
	case *http2.RSTStreamFrame:
		s.code = f.ErrCode
	}
	return s
}

// handle applies one frame from the server.
func (u *uploader) handle(f srvFrame) {
	switch f.typ {
	case http2.FrameSettings:
		if f.ack {
			return
		}
		if f.hasInit {
			u.streamAvail += int64(f.initWin) - u.streamSetting
			u.streamSetting = int64(f.initWin)
		}
		if u.holdAcks {
			u.acksOwed++
			return
		}
		u.fr.WriteSettingsAck()
	case http2.FrameWindowUpdate:
		if f.streamID == 0 {
			u.connUpdates++
			u.connAvail += int64(f.increment)
		} else {
			u.streamAvail += int64(f.increment)
		}
	case http2.FramePing:
		switch {
		case f.ack:
			u.syncAck <- true
		case bytes.Equal(f.data[:4], bdpPingTag[:]):
			if u.pending != nil {
				u.t.Fatal("a second measuring PING while one is unanswered")
			}
			d := f.data
			u.pending = &d
			u.ourPings++
		default:
			u.t.Fatalf("unexpected PING %x", f.data)
		}
	case http2.FrameGoAway:
		u.t.Fatalf("GOAWAY %v: %s", f.code, f.debug)
	case http2.FrameRSTStream:
		u.t.Fatalf("RST_STREAM %v", f.code)
	}
}

// holds reports whether the client's connection credit shows a window of
// size: the server returns consumed bytes once they reach a quarter of
// the window (inflow.release), so up to a quarter may still be held back.
func (u *uploader) holds(size int64) bool {
	return u.connAvail <= size && 4*u.connAvail > 3*size
}

// next handles one frame, waiting for it when block is set; it reports
// whether there was one.
func (u *uploader) next(block bool) bool {
	u.t.Helper()
	var f srvFrame
	var ok bool
	if block {
		select {
		case f, ok = <-u.frames:
		case <-time.After(10 * time.Second):
			u.t.Fatal("no frame from the server in 10 s")
		}
	} else {
		select {
		case f, ok = <-u.frames:
		default:
			return false
		}
	}
	if !ok {
		u.t.Fatal("connection closed")
	}
	u.handle(f)
	return true
}

// send uploads n bytes within the credit, waiting for more when it runs
// out; stop, when set, ends it early.
func (u *uploader) send(n int64, stop func() bool) {
	u.t.Helper()
	for n > 0 && (stop == nil || !stop()) {
		for u.next(false) {
		}
		k := min(n, int64(len(u.chunk)), u.connAvail, u.streamAvail)
		if k <= 0 {
			u.next(true)
			continue
		}
		if err := u.fr.WriteData(u.id, false, u.chunk[:k]); err != nil {
			u.t.Fatal(err)
		}
		u.connAvail -= k
		u.streamAvail -= k
		u.sent += k
		n -= k
	}
}

// sync waits until the server handled everything sent so far and the
// client everything the server sent before that.
func (u *uploader) sync() {
	u.t.Helper()
	u.syncAck = make(chan bool, 1)
	u.fr.WritePing(false, [8]byte{'s', 'y', 'n', 'c'})
	for {
		select {
		case <-u.syncAck:
			return
		default:
			u.next(true)
		}
	}
}

// round is one measurement: 1/sampleEvery of a stream window (which makes
// the server send its PING: at the first DATA frame while it knows no
// round trip, when the last of it arrives after), then sample bytes, one
// round trip on the server's clock and the acknowledgement. It returns
// false when the server sent no PING.
func (u *uploader) round(sample int64) bool {
	u.t.Helper()
	u.send(u.streamSetting/sampleEvery, nil)
	u.sync()
	if u.pending == nil {
		return false
	}
	u.send(sample, nil)
	u.sync() // all of it arrived within the round trip
	u.ts.advance(u.rtt)
	u.fr.WritePing(true, *u.pending)
	u.pending = nil
	u.sync()
	return true
}

func TestWindowGrowsToMax(t *testing.T) {
	budget := NewWindowBudget(1 << 30)
	const max = 8 << 20
	u := newUploader(t, Config{MaxConnWindow: max, WindowBudget: budget})
	if u.streamSetting != defaultStreamWindow || u.connAvail != defaultConnWindow {
		t.Fatalf("start: stream %d conn %d", u.streamSetting, u.connAvail)
	}
	for i := 0; i < 8 && u.round(u.streamSetting); i++ {
		if u.connAvail > max || u.streamSetting > max {
			t.Fatalf("round %d: windows conn %d stream %d, over the maximum %d", i, u.connAvail, u.streamSetting, max)
		}
	}
	t.Logf("after %d measuring PINGs: conn window %d, stream window %d", u.ourPings, u.connAvail, u.streamSetting)
	if !u.holds(max) || u.streamSetting != max {
		t.Fatalf("windows conn %d stream %d, want both grown to %d", u.connAvail, u.streamSetting, max)
	}
	if got := budget.Used(); got != max-defaultConnWindow {
		t.Errorf("budget used %d, want %d", got, max-defaultConnWindow)
	}
	// At the maximum the measuring stops: no more PINGs.
	pings := u.ourPings
	u.send(3*max, nil)
	u.sync()
	if u.ourPings != pings {
		t.Errorf("%d more PINGs at the maximum window", u.ourPings-pings)
	}
}

// A run that does not fill the window (the client is not held back by our
// credit) does not grow it.
func TestWindowStaysWhenNotLimiting(t *testing.T) {
	budget := NewWindowBudget(1 << 30)
	u := newUploader(t, Config{WindowBudget: budget})
	for i := 0; i < 3; i++ {
		// Under 2/3 of the window per round trip.
		if !u.round(defaultStreamWindow / 2) {
			t.Fatalf("round %d: no measuring PING", i)
		}
	}
	if u.streamSetting != defaultStreamWindow || budget.Used() != 0 {
		t.Fatalf("windows grew: stream %d, budget used %d", u.streamSetting, budget.Used())
	}
}

// PING acknowledgements that are not the tuner's (unsolicited, stale, or
// the payload of another) change nothing.
func TestWindowIgnoresOtherPingAcks(t *testing.T) {
	u := newUploader(t, Config{WindowBudget: NewWindowBudget(1 << 30)})
	u.send(u.streamSetting/sampleEvery, nil)
	u.sync()
	if u.pending == nil {
		t.Fatal("no measuring PING")
	}
	u.send(u.streamSetting, nil)
	u.ts.advance(testRTT)
	wrong := *u.pending
	wrong[7]++
	u.fr.WritePing(true, wrong)
	u.fr.WritePing(true, [8]byte{})
	u.sync()
	if u.streamSetting != defaultStreamWindow {
		t.Fatalf("stream window %d after foreign acknowledgements", u.streamSetting)
	}
}

// spendBudget makes a budget of share bytes and an uploader whose windows
// grew until it holds all of it.
func spendBudget(t *testing.T, share int64) (*WindowBudget, Config, *uploader) {
	t.Helper()
	budget := NewWindowBudget(share)
	cfg := Config{WindowBudget: budget}
	a := newUploader(t, cfg)
	for i := 0; i < 4 && a.round(a.streamSetting); i++ {
	}
	if !a.holds(defaultConnWindow+share) || budget.Used() != share {
		t.Fatalf("first connection: window %d, budget used %d; want %d and %d",
			a.connAvail, budget.Used(), defaultConnWindow+share, share)
	}
	return budget, cfg, a
}

func TestWindowBudgetCapsAndReturns(t *testing.T) {
	const share = 1 << 20
	budget, cfg, a := spendBudget(t, share)

	// The budget is spent: a second connection keeps its configured
	// connection window (its streams may still grow up to it).
	b := newUploader(t, cfg)
	for i := 0; i < 3 && b.round(b.streamSetting); i++ {
	}
	if !b.holds(defaultConnWindow) || budget.Used() != share {
		t.Fatalf("second connection: window %d, budget used %d; want %d and %d",
			b.connAvail, budget.Used(), defaultConnWindow, share)
	}
	if b.streamSetting > defaultConnWindow {
		t.Fatalf("second connection: stream window %d beyond its connection window", b.streamSetting)
	}

	// The first connection ends: its share comes back, and the second grows.
	a.conn.Close()
	if !eventually.Within(5*time.Second, func() bool { return budget.Used() == 0 }) {
		t.Fatalf("budget used %d after the connection closed", budget.Used())
	}
	if !b.round(b.streamSetting) {
		t.Fatal("no measuring PING on the second connection")
	}
	if !b.holds(defaultConnWindow+share) || budget.Used() != share {
		t.Fatalf("second connection after the first closed: window %d, budget used %d", b.connAvail, budget.Used())
	}
}

// A connection that holds a grant and has no stream open gives it back
// by going away once another connection was refused some; while nobody
// is, it keeps it.
func TestWindowGrantOfAnIdleConnectionGoesBack(t *testing.T) {
	const share = 1 << 20
	budget, cfg, a := spendBudget(t, share)
	a.fr.WriteRSTStream(a.id, http2.ErrCodeCancel)
	a.sync()

	// Nobody is refused: the grant stays (a GOAWAY would fail handle).
	a.ts.advance(3 * windowHoldIdle)
	a.sync()
	if budget.Used() != share {
		t.Fatalf("idle, nobody refused: budget used %d, want %d", budget.Used(), share)
	}

	// A second connection is held back by the budget...
	b := newUploader(t, cfg)
	for i := 0; i < 3 && b.round(b.streamSetting); i++ {
	}
	if !b.holds(defaultConnWindow) || budget.Shortfalls() == 0 || budget.GoAways() != 0 {
		t.Fatalf("second connection: window %d, %d shortfalls, %d went away; want %d, some and none",
			b.connAvail, budget.Shortfalls(), budget.GoAways(), defaultConnWindow)
	}
	// ...and at its next look the idle one goes away, gracefully.
	a.ts.advance(windowHoldIdle)
	var goAway *srvFrame
	timeout := time.After(10 * time.Second)
	for goAway == nil {
		select {
		case f, ok := <-a.frames:
			if !ok {
				t.Fatal("connection closed without a GOAWAY")
			}
			if f.typ == http2.FrameGoAway {
				goAway = &f
			}
		case <-timeout:
			t.Fatal("no GOAWAY from the idle connection holding the grant")
		}
	}
	if goAway.code != http2.ErrCodeNo {
		t.Fatalf("GOAWAY %v, want NO_ERROR", goAway.code)
	}
	if budget.Used() != 0 || budget.GoAways() != 1 {
		t.Fatalf("budget used %d after the GOAWAY, %d connections went away; want 0 and 1", budget.Used(), budget.GoAways())
	}
	if !b.round(b.streamSetting) {
		t.Fatal("no measuring PING on the second connection")
	}
	if !b.holds(defaultConnWindow+share) || budget.Used() != share {
		t.Fatalf("second connection after the first went away: window %d, budget used %d", b.connAvail, budget.Used())
	}
}

// Autotuning off (MaxConnWindow at ConnWindow): no PING, no growth.
func TestWindowAutotuneOff(t *testing.T) {
	u := newUploader(t, Config{MaxConnWindow: defaultConnWindow})
	u.send(8<<20, nil)
	u.sync()
	if u.ourPings != 0 || u.streamSetting != defaultStreamWindow {
		t.Fatalf("%d PINGs, stream window %d", u.ourPings, u.streamSetting)
	}
}

// The first measuring PING goes out with the first DATA frame, so the
// round trip is known by the time the client's first window-sized burst
// arrives; and once it is known, a round trip's worth of DATA that fills
// 2/3 of the stream window grows the windows as it arrives, without
// waiting for the next PING's acknowledgement.
func TestWindowGrowsBeforeTheAck(t *testing.T) {
	u := newUploader(t, Config{WindowBudget: NewWindowBudget(1 << 30)})
	u.send(int64(len(u.chunk)), nil)
	u.sync()
	if u.pending == nil {
		t.Fatal("no measuring PING after the first DATA frame")
	}
	// Its sample is small (the client's first flight): a round trip,
	// nothing grown.
	u.ts.advance(testRTT)
	u.fr.WritePing(true, *u.pending)
	u.pending = nil
	u.sync()
	if u.streamSetting != defaultStreamWindow {
		t.Fatalf("stream window %d after a small first sample", u.streamSetting)
	}

	// Now a window's worth within the round trip: the next PING goes out
	// after 1/sampleEvery of it, and the windows grow before its answer.
	u.send(defaultStreamWindow, nil)
	u.sync()
	if u.pending == nil {
		t.Fatal("no second measuring PING")
	}
	if u.streamSetting != defaultMaxConnWindow || !u.holds(defaultMaxConnWindow) {
		t.Fatalf("before the second acknowledgement: stream window %d, connection credit %d; want both %d",
			u.streamSetting, u.connAvail, defaultMaxConnWindow)
	}
}

// The DATA is judged per smallest round trip: a PING answered late (it
// waited behind queued DATA) does not lengthen the interval, and half a
// window per round trip, however long it goes on, grows nothing.
func TestWindowJudgesPerSmallestRoundTrip(t *testing.T) {
	budget := NewWindowBudget(1 << 30)
	u := newUploader(t, Config{WindowBudget: budget})
	if !u.round(0) { // a round trip of testRTT
		t.Fatal("no measuring PING")
	}
	// The second PING comes back four round trips late.
	u.send(defaultStreamWindow/sampleEvery, nil)
	u.sync()
	if u.pending == nil {
		t.Fatal("no second measuring PING")
	}
	u.ts.advance(4 * testRTT)
	u.fr.WritePing(true, *u.pending)
	u.pending = nil
	u.sync()

	// Half a window per round trip for three round trips, the third PING
	// answered at the end: its sample is 3/2 of a window in two round
	// trips, and a four-round-trip interval would hold all of it.
	for i := 0; i < 3; i++ {
		if i > 0 {
			u.ts.advance(testRTT)
		}
		u.send(defaultStreamWindow/2, nil)
		u.sync()
	}
	if u.pending == nil {
		t.Fatal("no third measuring PING")
	}
	u.fr.WritePing(true, *u.pending)
	u.pending = nil
	u.sync()
	if u.streamSetting != defaultStreamWindow || budget.Used() != 0 {
		t.Fatalf("windows grew: stream %d, budget used %d", u.streamSetting, budget.Used())
	}
}

// The first PING's answer may land amid the burst the client sends once
// our SETTINGS reach it; the burst is judged whole: the interval begins
// where it began, after the pause that followed the client's first flight.
func TestWindowJudgesABurstSplitByTheFirstAck(t *testing.T) {
	u := newUploader(t, Config{WindowBudget: NewWindowBudget(1 << 30)})
	u.send(initialWindow, nil) // the first flight, before our SETTINGS
	u.sync()
	if u.pending == nil {
		t.Fatal("no measuring PING")
	}
	u.ts.advance(testRTT)
	u.send(defaultStreamWindow/2, nil) // a round trip later: the burst
	u.sync()
	u.fr.WritePing(true, *u.pending) // its answer, amid the burst
	u.pending = nil
	u.sync()
	if u.streamSetting != defaultStreamWindow {
		t.Fatalf("stream window %d after a sample of under 2/3 of the window", u.streamSetting)
	}
	u.send(defaultStreamWindow/4, nil) // the rest of the burst
	u.sync()
	if u.streamSetting != defaultMaxConnWindow || !u.holds(defaultMaxConnWindow) {
		t.Fatalf("after a burst of 3/4 of the window within the round trip: stream window %d, connection credit %d; want both %d",
			u.streamSetting, u.connAvail, defaultMaxConnWindow)
	}
}

// Windows grow to carry ampleRate at the round trip, no further: a path
// of 5 ms gets 5.4 MiB, not the 32 MiB ceiling, and one under a
// millisecond (loopback, a LAN, where the default window already carries
// a gigabyte a second) none at all, however fast the DATA comes.
func TestWindowGrowsToAmpleRate(t *testing.T) {
	for _, tc := range []struct {
		rtt  time.Duration
		want int64
	}{
		{5 * time.Millisecond, ampleRate / 200},
		{500 * time.Microsecond, defaultStreamWindow},
	} {
		t.Run(tc.rtt.String(), func(t *testing.T) {
			budget := NewWindowBudget(1 << 30)
			u := newUploader(t, Config{WindowBudget: budget})
			u.rtt = tc.rtt
			for i := 0; i < 4 && u.round(u.streamSetting); i++ {
			}
			if u.streamSetting != tc.want {
				t.Fatalf("stream window %d after window-sized samples at %v, want %d", u.streamSetting, tc.rtt, tc.want)
			}
			if conn := max(tc.want, defaultConnWindow); budget.Used() != conn-defaultConnWindow {
				t.Fatalf("budget used %d, want %d", budget.Used(), conn-defaultConnWindow)
			}
		})
	}
}

// Consumed bytes go back in WINDOW_UPDATEs of a quarter of the window or
// more, not one per DATA frame: 16 MiB through a 2 MiB connection window
// (autotuning off) takes about 32 of them, and the upload never waits for
// credit that was held back (send would block for good).
func TestWindowUpdatesBatched(t *testing.T) {
	u := newUploader(t, Config{MaxConnWindow: defaultConnWindow})
	const size = 16 << 20
	u.send(size, nil)
	u.sync()
	if most := size / (defaultConnWindow / 4); u.connUpdates > most+1 {
		t.Fatalf("%d connection WINDOW_UPDATEs for %d bytes, want at most %d", u.connUpdates, size, most+1)
	}
	t.Logf("%d connection WINDOW_UPDATEs for %d MiB", u.connUpdates, size>>20)
}

// TestWindowUpdatesOfGrownWindows: a grown window's consumed bytes go back
// at most maxUpdateBatch at a time, not a quarter of the window, so the
// client keeps nearly the whole window as credit.
func TestWindowUpdatesOfGrownWindows(t *testing.T) {
	const max = 16 << 20
	u := newUploader(t, Config{MaxConnWindow: max, WindowBudget: NewWindowBudget(1 << 30)})
	for i := 0; i < 4 && u.streamSetting < max && u.round(u.streamSetting); i++ {
	}
	if u.streamSetting != max {
		t.Fatalf("stream window %d, want it grown to %d", u.streamSetting, max)
	}
	const size = 8 << 20
	u.connUpdates = 0
	u.send(size, nil)
	u.sync()
	if held := max - u.connAvail; held > maxUpdateBatch {
		t.Fatalf("the client holds %d of the %d window: %d held back, over %d", u.connAvail, max, held, maxUpdateBatch)
	}
	if least := size / maxUpdateBatch; u.connUpdates < least-1 {
		t.Fatalf("%d connection WINDOW_UPDATEs for %d bytes, want about %d", u.connUpdates, size, least)
	}
	t.Logf("%d connection WINDOW_UPDATEs for %d MiB", u.connUpdates, size>>20)
}

// TestWindowGrowsOnTheFirstFlight checks the first-flight rule
// (tuneFirstFlight): a client that sends the protocol's default window of
// DATA before it has acknowledged our SETTINGS, over a path whose
// handshake took a long round trip, gets the grown windows at once, before
// any PING was answered; and no other first flight does.
func TestWindowGrowsOnTheFirstFlight(t *testing.T) {
	const grown = 32 << 20 // windowGrowth times the default stream window
	cases := []struct {
		name  string
		hsRTT time.Duration
		cl    int64         // content-length, none when negative
		end   bool          // END_STREAM on the flight's last frame
		gap   time.Duration // between the flight's frames
		grow  bool
		to    int64 // the grown window when not the most (grown)
	}{
		{name: "long path, unknown length", hsRTT: testRTT, cl: -1, grow: true},
		{name: "long path, length beyond a window", hsRTT: testRTT, cl: 100 << 20, grow: true},
		{name: "long path, no more than the length", hsRTT: testRTT, cl: 4 << 20, grow: true, to: 4 << 20},
		{name: "length within a window", hsRTT: testRTT, cl: 512 << 10},
		{name: "body ends with the flight", hsRTT: testRTT, cl: -1, end: true},
		{name: "no handshake round trip", cl: -1},
		{name: "short path", hsRTT: 500 * time.Microsecond, cl: -1},
		{name: "flight at the client's own pace", hsRTT: testRTT, cl: -1, gap: 30 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			budget := NewWindowBudget(1 << 30)
			u := dialUploader(t, Config{WindowBudget: budget}, tc.hsRTT)
			u.holdAcks = true
			u.request(tc.cl, false)
			for left := int64(initialWindow); left > 0; {
				k := min(left, int64(len(u.chunk)))
				left -= k
				if err := u.fr.WriteData(u.id, tc.end && left == 0, u.chunk[:k]); err != nil {
					t.Fatal(err)
				}
				u.connAvail -= k
				u.streamAvail -= k
				u.sent += k
				if tc.gap > 0 && left > 0 {
					u.sync()
					u.ts.advance(tc.gap)
				}
			}
			u.sync() // every frame the flight earned is here, no ACK sent
			if u.ourPings > 1 {
				t.Fatalf("%d measuring PINGs: the growth waited for a measurement", u.ourPings)
			}
			to := cmp.Or(tc.to, grown)
			grew := u.streamSetting == to && u.connAvail+u.sent >= to-initialWindow
			if grew != tc.grow {
				t.Fatalf("after the first flight: stream window %d, connection credit %d (of which %d sent); grown to %d: %v, want %v",
					u.streamSetting, u.connAvail, u.sent, to, grew, tc.grow)
			}
			want := int64(0)
			if tc.grow {
				want = to - defaultConnWindow
			}
			if got := budget.Used(); got != want {
				t.Fatalf("budget used %d, want %d", got, want)
			}
		})
	}
}
