package h2

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// recycledReq is one request seen by recycleHandler, with every event its
// Events received. All fields are touched under the harness's loop lock.
type recycledReq struct {
	path              string
	s                 *h2Stream // the ResponseWriter, as the struct it is
	bs                *bodySender
	late              bool // answer at the end of the request body
	bodies, ends      int
	aborts, releases  int
	eventAfterRelease bool
}

func (r *recycledReq) OnBody(p []byte) {
	r.bodies++
	r.eventAfterRelease = r.eventAfterRelease || r.releases > 0
	r.s.Consumed(len(p))
}

func (r *recycledReq) OnBodyEnd([]stream.Field) {
	r.ends++
	r.eventAfterRelease = r.eventAfterRelease || r.releases > 0
	if r.late {
		r.s.Write([]byte(r.path))
		r.s.Close(nil)
	}
}

func (r *recycledReq) OnWritable() {
	r.eventAfterRelease = r.eventAfterRelease || r.releases > 0
	if r.bs != nil {
		r.bs.pump()
	}
}

func (r *recycledReq) OnAbort(error) {
	r.aborts++
	r.eventAfterRelease = r.eventAfterRelease || r.releases > 0
}

func (r *recycledReq) OnRelease() { r.releases++ }

var _ stream.Releaser = (*recycledReq)(nil)

// recycleHandler answers /hold with a head and nothing more (the stream
// stays open until the client resets it), /late with its path once the
// request body ended, a path in bodies with that body, anything else with
// its own path as the body.
func recycleHandler(seen *[]*recycledReq, bodies map[string][]byte) stream.Handler {
	return handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		r := &recycledReq{path: req.Path, s: w.(*h2Stream)}
		*seen = append(*seen, r)
		w.WriteHeader(200, nil, false)
		switch body, ok := bodies[req.Path]; {
		case req.Path == "/hold":
		case req.Path == "/late":
			r.late = true
		case ok:
			r.bs = &bodySender{w: w, body: body}
			r.bs.pump()
		default:
			w.Write([]byte(req.Path))
			w.Close(nil)
		}
		return r
	})
}

// readBodies reads frames until every stream in want has ended, collecting
// DATA per stream; a DATA frame for a stream not in want fails the test.
func (rc *rawClient) readBodies(want ...uint32) map[uint32][]byte {
	rc.t.Helper()
	got := map[uint32][]byte{}
	open := map[uint32]bool{}
	for _, id := range want {
		open[id] = true
	}
	for len(open) > 0 {
		switch f := rc.read().(type) {
		case *http2.DataFrame:
			if _, ok := open[f.StreamID]; !ok {
				rc.t.Fatalf("DATA on stream %d, which is not expected to send", f.StreamID)
			}
			got[f.StreamID] = append(got[f.StreamID], f.Data()...)
			if f.StreamEnded() {
				delete(open, f.StreamID)
			}
		case *http2.RSTStreamFrame:
			if open[f.StreamID] {
				rc.t.Fatalf("RST_STREAM %v on %d", f.ErrCode, f.StreamID)
			}
		case *http2.GoAwayFrame:
			rc.t.Fatalf("GOAWAY %v (%s)", f.ErrCode, f.DebugData())
		}
	}
	return got
}

// TestStreamRecycle: a stream struct whose handler released it serves a
// later stream, and nothing of the old request reaches it: no event after
// OnRelease, no DATA of a reset stream, and a stream still on the write
// queue when the client reset it is not reused until the queue let go.
func TestStreamRecycle(t *testing.T) {
	var seen []*recycledReq
	big := pattern(100 << 10)
	rc := newRaw(t, recycleHandler(&seen, map[string][]byte{"/big": big}), Config{},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	req := func(i int) (r *recycledReq) {
		rc.ts.lock(func() { r = seen[i] })
		return r
	}
	check := func(f func()) { rc.ts.lock(f) }

	// A complete exchange, then the next stream gets its struct.
	rc.get(1, true, "x-n", "1")
	rc.readBodies(1)
	rc.ping()
	rc.headers(3, true, ":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", "/three")
	if got := rc.readBodies(3); string(got[3]) != "/three" {
		t.Fatalf("stream 3 body %q", got[3])
	}
	check(func() {
		if seen[0].releases != 1 || seen[0].aborts != 0 {
			t.Fatalf("stream 1: %d releases, %d aborts", seen[0].releases, seen[0].aborts)
		}
		if seen[1].s != seen[0].s {
			t.Fatal("stream 3 did not reuse stream 1's struct: the test exercises nothing")
		}
	})

	// RST_STREAM while the handler still holds the response open; the
	// next stream reuses the struct and the old handler hears nothing
	// more.
	rc.headers(5, false, ":method", "POST", ":scheme", "https", ":authority", "a.test", ":path", "/hold")
	if st, _ := rc.expectStatus(5); st != "200" {
		t.Fatal(st)
	}
	old := req(2)
	rc.fr.WriteRSTStream(5, http2.ErrCodeCancel)
	rc.ping()
	rc.headers(7, false, ":method", "POST", ":scheme", "https", ":authority", "a.test", ":path", "/late")
	rc.fr.WriteData(7, false, []byte("upload"))
	rc.fr.WriteData(7, true, []byte("more"))
	if got := rc.readBodies(7); string(got[7]) != "/late" {
		t.Fatalf("stream 7 body %q", got[7])
	}
	rc.ping()
	check(func() {
		if old.aborts != 1 || old.releases != 1 || old.eventAfterRelease || old.bodies != 0 {
			t.Fatalf("reset stream 5: %d aborts, %d releases, %d bodies, event after release %v",
				old.aborts, old.releases, old.bodies, old.eventAfterRelease)
		}
		r7 := seen[3]
		if r7.s != old.s {
			t.Fatal("stream 7 did not reuse stream 5's struct")
		}
		if r7.bodies != 2 || r7.ends != 1 {
			t.Fatalf("stream 7 saw %d bodies, %d ends", r7.bodies, r7.ends)
		}
	})

	// The connection window runs dry: stream 9's body waits on the write
	// queue, and stream 11's behind it. The client resets 11; stream 13
	// must not get its struct while the queue still holds it, since the
	// scheduler stops at 9 without reaching 11.
	path := func(p string) []string {
		return []string{":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", p}
	}
	rc.headers(9, true, path("/big")...)
	var early []byte
	for {
		rc.syncData(&early)
		var dry bool
		check(func() { dry = rc.ts.sc.outWin <= 0 })
		if dry {
			break
		}
	}
	rc.headers(11, true, path("/big")...)
	rc.ping()
	r9, r11 := req(4), req(5)
	check(func() {
		c := rc.ts.sc
		if q := c.wq[c.wqHead:]; len(q) != 2 || q[0] != r9.s || q[1] != r11.s {
			t.Fatalf("write queue %d long, want streams 9 and 11: the test exercises nothing", len(q))
		}
	})
	rc.fr.WriteRSTStream(11, http2.ErrCodeCancel)
	rc.ping()
	rc.headers(13, true, path("/thirteen")...)
	rc.ping()
	check(func() {
		if !r11.s.queued {
			t.Fatal("reset stream 11 left the write queue before the window opened")
		}
		if seen[6].s == r11.s {
			t.Fatal("stream 13 reuses stream 11's struct while the write queue holds it")
		}
	})
	rc.fr.WriteWindowUpdate(0, 1<<20)
	got := rc.readBodies(9, 13)
	if string(got[13]) != "/thirteen" {
		t.Fatalf("stream 13 body %q", got[13])
	}
	if !bytes.Equal(append(early, got[9]...), big) {
		t.Fatalf("stream 9: %d bytes, body differs", len(early)+len(got[9]))
	}
	rc.ping()
	check(func() {
		if r11.aborts != 1 || r11.releases != 1 || r11.eventAfterRelease {
			t.Fatalf("reset stream 11: %d aborts, %d releases, event after release %v", r11.aborts, r11.releases, r11.eventAfterRelease)
		}
		c := rc.ts.sc
		if len(c.freeStreams) > int(c.cfg.MaxConcurrentStreams) || len(c.spent) != 0 {
			t.Fatalf("%d free, %d spent streams after the queue drained", len(c.freeStreams), len(c.spent))
		}
	})
	rc.headers(15, true, path("/fifteen")...)
	if got := rc.readBodies(15); string(got[15]) != "/fifteen" {
		t.Fatalf("stream 15 body %q", got[15])
	}
	check(func() {
		reused := false
		for _, r := range seen[:7] {
			reused = reused || r.s == seen[7].s
		}
		if !reused {
			t.Fatal("stream 15 got a new struct with released ones free")
		}
	})
	rc.ping()
	check(func() {
		c := rc.ts.sc
		if len(c.freeStreams) == 0 {
			t.Fatal("no free streams before ReleaseIdle")
		}
		if c.ReleaseIdle() == 0 || c.freeStreams != nil || c.spent != nil {
			t.Fatalf("ReleaseIdle kept %d free and %d spent streams", len(c.freeStreams), len(c.spent))
		}
	})
}

// TestStreamNotRecycledWithoutRelease: a handler that does not implement
// stream.Releaser may keep its ResponseWriter, so its stream struct is
// never reused.
func TestStreamNotRecycledWithoutRelease(t *testing.T) {
	var ws []stream.ResponseWriter
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		ws = append(ws, w)
		w.WriteHeader(200, nil, false)
		w.Write([]byte("ok"))
		w.Close(nil)
		return &events{}
	})
	rc := newRaw(t, h, Config{})
	for id := uint32(1); id <= 7; id += 2 {
		rc.get(id, true)
		rc.readBodies(id)
		rc.ping()
	}
	rc.ts.lock(func() {
		for i := 1; i < len(ws); i++ {
			if ws[i] == ws[0] {
				t.Fatalf("request %d reused request 0's stream", i)
			}
		}
		if n := len(rc.ts.sc.freeStreams); n != 0 {
			t.Fatalf("%d free streams", n)
		}
	})
}
