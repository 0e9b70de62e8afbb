package h2

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// The re-entrancy rule (package stream): a ResponseWriter call never calls
// Events, and never produces output itself; output reaches the transport
// from the entry points (Feed, Flush, timers) only.

// ruleState tracks whether a ResponseWriter call is running.
type ruleState struct {
	t    *testing.T
	inRW bool
}

func (st *ruleState) enter() {
	if st.inRW {
		st.t.Fatal("ResponseWriter call inside a ResponseWriter call")
	}
	st.inRW = true
}

func (st *ruleState) leave() { st.inRW = false }

func (st *ruleState) event(what string) {
	if st.inRW {
		st.t.Fatalf("%s delivered from inside a ResponseWriter call", what)
	}
}

// rwCheck wraps a ResponseWriter, marking its calls.
type rwCheck struct {
	w  stream.ResponseWriter
	st *ruleState
}

func (r rwCheck) WriteHeader(status int, f []stream.Field, end bool) error {
	r.st.enter()
	defer r.st.leave()
	return r.w.WriteHeader(status, f, end)
}

func (r rwCheck) Write(p []byte) (int, error) {
	r.st.enter()
	defer r.st.leave()
	return r.w.Write(p)
}

func (r rwCheck) Close(tr []stream.Field) error {
	r.st.enter()
	defer r.st.leave()
	return r.w.Close(tr)
}

func (r rwCheck) Reset(code uint32) {
	r.st.enter()
	defer r.st.leave()
	r.w.Reset(code)
}

func (r rwCheck) Consumed(n int) {
	r.st.enter()
	defer r.st.leave()
	r.w.Consumed(n)
}

// clientFrames builds client input.
type clientFrames struct {
	b   bytes.Buffer
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

func newClientFrames() *clientFrames {
	cf := &clientFrames{}
	cf.fr = http2.NewFramer(&cf.b, nil)
	cf.enc = hpack.NewEncoder(&cf.hb)
	return cf
}

func (cf *clientFrames) get(id uint32, path string) {
	cf.hb.Reset()
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", path}} {
		cf.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	cf.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: cf.hb.Bytes(), EndStream: true, EndHeaders: true})
}

// take returns the frames built so far and starts anew.
func (cf *clientFrames) take() []byte {
	p := append([]byte(nil), cf.b.Bytes()...)
	cf.b.Reset()
	return p
}

// serverFrames parses everything the server wrote.
func serverFrames(t *testing.T, out []byte) (data map[uint32]int, ended map[uint32]bool, heads map[uint32]int, goAway *http2.GoAwayFrame) {
	t.Helper()
	data, ended, heads = map[uint32]int{}, map[uint32]bool{}, map[uint32]int{}
	fr := http2.NewFramer(nil, bytes.NewReader(out))
	fr.SetMaxReadFrameSize(1 << 24)
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("server output: %v", err)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			data[f.StreamID] += len(f.Data())
			if f.StreamEnded() {
				ended[f.StreamID] = true
			}
		case *http2.HeadersFrame:
			heads[f.StreamID]++
			if f.StreamEnded() {
				ended[f.StreamID] = true
			}
		case *http2.GoAwayFrame:
			g := *f
			goAway = &g
		}
	}
}

func newStepConn(t *testing.T, h func(st *ruleState) stream.Handler, cfg Config, settings ...http2.Setting) (*ServerConn, *streamtest.Transport, *clientFrames) {
	st := &ruleState{t: t}
	// The transport plays the loop step by step, in memory: the test
	// feeds, drains (the socket took everything) and fires timers; each
	// step ends with Flush when it was asked for.
	tr := streamtest.NewTransport()
	tr.Record = true
	tr.OnWrite = func([]byte) { st.event("Transport.Write") }
	sc := NewServerConn(tr, h(st), cfg)
	tr.Conn = sc
	tr.EndStep()
	cf := newClientFrames()
	cf.b.WriteString(clientPreface)
	cf.fr.WriteSettings(settings...)
	cf.fr.WriteSettingsAck()
	if err := tr.Feed(cf.take()); err != nil {
		t.Fatal(err)
	}
	tr.Drain()
	return sc, tr, cf
}

// Several streams write bodies far above the output budget and their send
// buffers, from Serve, from OnWritable and from timers; none ever hears
// an event, and the transport never gets a Write, while a ResponseWriter
// call runs. Every body arrives whole.
func TestResponseWriterNeverCallsBack(t *testing.T) {
	const bodyLen = 200 << 10
	const streams = 4
	pumps := map[uint32]*bodySender{}
	var tr *streamtest.Transport
	h := func(st *ruleState) stream.Handler {
		return handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
			rw := rwCheck{w, st}
			rw.WriteHeader(200, nil, false)
			bs := &bodySender{w: rw, body: pattern(bodyLen)}
			pumps[uint32(len(pumps))] = bs
			bs.pump()
			// Also write from a timer: calls from outside of Feed.
			var tick func()
			tick = func() {
				bs.pump()
				if !bs.done {
					tr.Time.AfterFunc(time.Millisecond, tick)
				}
			}
			tr.Time.AfterFunc(time.Millisecond, tick)
			return &events{
				writable: func() { st.event("OnWritable"); bs.pump() },
				abort:    func(error) { st.event("OnAbort") },
				body:     func([]byte) { st.event("OnBody") },
			}
		})
	}
	cfg := Config{HighWater: 16 << 10, StreamSendBuffer: 8 << 10}
	sc, tr0, cf := newStepConn(t, h, cfg, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	tr = tr0 // before the first request
	cf.fr.WriteWindowUpdate(0, 1<<30)
	for i := 0; i < streams; i++ {
		cf.get(uint32(2*i+1), "/")
	}
	if err := tr.Feed(cf.take()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000 && len(sc.streams) > 0; i++ {
		if i%3 == 0 {
			// The socket took everything; timers run before OnDrained,
			// so their Writes find room.
			tr.Pending = tr.Pending[:0]
			tr.Advance(time.Millisecond)
		}
		tr.Drain()
	}
	if len(sc.streams) != 0 {
		t.Fatalf("%d streams still open", len(sc.streams))
	}
	data, ended, _, _ := serverFrames(t, tr.Output)
	for i := 0; i < streams; i++ {
		id := uint32(2*i + 1)
		if data[id] != bodyLen || !ended[id] {
			t.Errorf("stream %d: %d bytes, ended %v", id, data[id], ended[id])
		}
	}
	// Nothing left to produce: OnDrained asks for nothing.
	tr.Pending = tr.Pending[:0]
	sc.OnDrained()
	if tr.FlushOwed {
		t.Fatal("OnDrained with nothing to do asked for a Flush")
	}
}

// A Write the output budget refuses does not hear OnWritable before it
// returns; it hears it from the flush after the socket drained.
func TestWritableAfterWriteReturns(t *testing.T) {
	var w stream.ResponseWriter
	writable := 0
	h := func(st *ruleState) stream.Handler {
		return handlerFunc(func(req *stream.Request, rw stream.ResponseWriter) stream.Events {
			w = rwCheck{rw, st}
			w.WriteHeader(200, nil, false)
			return &events{writable: func() { st.event("OnWritable"); writable++ }}
		})
	}
	_, tr, cf := newStepConn(t, h, Config{HighWater: 4 << 10, StreamSendBuffer: 4 << 10})
	cf.get(1, "/")
	if err := tr.Feed(cf.take()); err != nil {
		t.Fatal(err)
	}
	tr.Drain()
	// From outside of Feed: one DATA frame framed (the budget lets one
	// frame overshoot), 4 KiB queued, the rest refused.
	n, err := w.Write(pattern(64 << 10))
	if err != nil || n != maxDataFrame+4<<10 {
		t.Fatalf("Write took %d: %v", n, err)
	}
	if len(tr.Pending) != 0 || !tr.FlushOwed {
		t.Fatalf("Write produced %d bytes itself, asked for Flush: %v", len(tr.Pending), tr.FlushOwed)
	}
	tr.EndStep() // the end of the iteration: the batch goes out
	if writable != 0 {
		t.Fatal("OnWritable before the socket took anything")
	}
	tr.Drain()
	if writable != 1 {
		t.Fatalf("OnWritable %d times after the drain", writable)
	}
}

// A ResponseWriter call that completes a graceful shutdown only queues the
// last frames; a Feed in the same iteration writes them (and closes)
// before it reports the end.
func TestFeedWritesShutdownCompletedByWriter(t *testing.T) {
	var w stream.ResponseWriter
	h := func(st *ruleState) stream.Handler {
		return handlerFunc(func(req *stream.Request, rw stream.ResponseWriter) stream.Events {
			w = rw
			return &events{}
		})
	}
	sc, tr, cf := newStepConn(t, h, Config{})
	cf.get(1, "/")
	if err := tr.Feed(cf.take()); err != nil {
		t.Fatal(err)
	}
	sc.Shutdown()
	tr.EndStep()
	cf.fr.WritePing(true, shutdownPingData) // the final GOAWAY follows
	if err := tr.Feed(cf.take()); err != nil {
		t.Fatal(err)
	}
	tr.Drain()
	// From outside of Feed: the last stream ends, the connection is done.
	if err := w.WriteHeader(204, nil, true); err != nil {
		t.Fatal(err)
	}
	if tr.Closed {
		t.Fatal("closed from inside a ResponseWriter call")
	}
	// The client's bytes arrive before the end of the iteration.
	cf.fr.WritePing(false, [8]byte{1})
	if err := sc.Feed(cf.take()); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Feed: %v", err)
	}
	if !tr.Closed {
		t.Fatal("transport not closed")
	}
	_, ended, heads, g := serverFrames(t, tr.Output)
	if heads[1] != 1 || !ended[1] || g == nil || g.LastStreamID != 1 {
		t.Fatalf("stream 1 HEADERS %d ended %v, GOAWAY %+v", heads[1], ended[1], g)
	}
}

// The glitch window runs on the connection's clock.
func TestGlitchWindowOnClock(t *testing.T) {
	rc := newRaw(t, holdHandler(nil), Config{MaxGlitches: 10, GlitchWindow: time.Second})
	for i := 0; i < 10; i++ {
		rc.ping()
	}
	rc.ts.advance(time.Second) // a new window
	for i := 0; i < 10; i++ {
		rc.ping()
	}
	rc.fr.WritePing(false, [8]byte{9})
	rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
}

// The idle timeout counts from the end of the last stream, on the
// connection's clock.
func TestIdleTimeoutFromLastStream(t *testing.T) {
	var ws []stream.ResponseWriter
	rc := newRaw(t, holdHandler(&ws), Config{IdleTimeout: 50 * time.Millisecond})
	rc.get(1, true)
	rc.ping()
	rc.ts.advance(30 * time.Millisecond)
	rc.ts.lock(func() { ws[0].WriteHeader(204, nil, true) }) // idle from 30 ms
	rc.expectStatus(1)
	rc.ts.advance(49 * time.Millisecond) // 79 ms: the timer fired at 50 and waits on
	rc.ping()
	rc.ts.advance(time.Millisecond)
	rc.expectGoAway(http2.ErrCodeNo)
}
