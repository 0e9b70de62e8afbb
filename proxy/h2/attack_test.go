package h2

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// flood writes from a goroutine (the server stops reading at some point and
// net.Pipe is synchronous) while the test reads. It records the most memory
// the connection held between frames.
func (rc *rawClient) flood(n int, write func(i int)) (maxMem *int) {
	maxMem = new(int)
	go func() {
		for i := 0; i < n; i++ {
			rc.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			write(i)
			if i%64 == 0 {
				rc.ts.sampleMem(maxMem)
			}
		}
	}()
	return maxMem
}

func checkMem(t *testing.T, rc *rawClient, maxMem *int, limit int) {
	t.Helper()
	var m int
	rc.ts.lock(func() { m = *maxMem })
	if m > limit {
		t.Fatalf("connection held %d bytes, limit %d", m, limit)
	}
}

func TestRapidReset(t *testing.T) {
	aborted := 0
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &events{abort: func(error) { aborted++ }}
	})
	rc := newRaw(t, h, Config{})
	block := rc.block(getReq...)
	rc.flood(1000, func(i int) {
		id := uint32(2*i + 1)
		rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
		rc.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	})
	rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
	rc.ts.lock(func() {
		if aborted < 200 || aborted > 205 {
			t.Errorf("%d streams served before the cut", aborted)
		}
	})
}

func TestContinuationFlood(t *testing.T) {
	rc := newRaw(t, holdHandler(nil), Config{})
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq...)})
	value := string(bytes.Repeat([]byte("z"), 8000))
	maxMem := rc.flood(10000, func(i int) {
		rc.fr.WriteContinuation(1, false, rc.block("x-flood", value))
	})
	rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
	checkMem(t, rc, maxMem, 256<<10)
}

func TestEmptyContinuationFlood(t *testing.T) {
	rc := newRaw(t, holdHandler(nil), Config{})
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq...)})
	rc.flood(5000, func(i int) { rc.fr.WriteContinuation(1, false, nil) })
	rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
}

func TestHPACKBomb(t *testing.T) {
	served := 0
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		served++
		w.WriteHeader(200, nil, true)
		return nil
	})
	rc := newRaw(t, h, Config{})
	big := string(bytes.Repeat([]byte("b"), 4000))
	// The first request puts a 4 KB field in the dynamic table.
	rc.get(1, true, "x-bomb", big)
	if st, _ := rc.expectStatus(1); st != "200" {
		t.Fatal(st)
	}
	// The second references it 2000 times, one byte each: 8 MB decoded
	// from a 2 KB block.
	kv := append([]string(nil), getReq...)
	for i := 0; i < 2000; i++ {
		kv = append(kv, "x-bomb", big)
	}
	b := rc.block(kv...)
	if len(b) > 16384 {
		t.Fatalf("block of %d bytes", len(b))
	}
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b, EndStream: true, EndHeaders: true})
	if st, _ := rc.expectStatus(3); st != "431" {
		t.Fatalf("status %s, want 431", st)
	}
	rc.ping()
	if m := rc.ts.memory(); m > 128<<10 {
		t.Fatalf("connection holds %d bytes", m)
	}
	rc.ts.lock(func() {
		if served != 1 {
			t.Errorf("handler saw %d requests", served)
		}
	})
}

func TestHeaderListTooLarge(t *testing.T) {
	rc := newRaw(t, okHandler(), Config{MaxHeaderListSize: 1024})
	rc.get(1, true, "x-a", string(bytes.Repeat([]byte("a"), 2000)))
	if st, _ := rc.expectStatus(1); st != "431" {
		t.Fatalf("status %s, want 431", st)
	}
	rc.get(3, true)
	if st, _ := rc.expectStatus(3); st != "200" {
		t.Fatal(st)
	}
}

func TestFloods(t *testing.T) {
	cases := []struct {
		name  string
		setup func(rc *rawClient)
		frame func(rc *rawClient, i int)
	}{
		{"SETTINGS", nil, func(rc *rawClient, i int) { rc.fr.WriteSettings() }},
		{"PING", nil, func(rc *rawClient, i int) { rc.fr.WritePing(false, [8]byte{byte(i)}) }},
		{"empty DATA", func(rc *rawClient) { rc.get(1, false) }, func(rc *rawClient, i int) { rc.fr.WriteData(1, false, nil) }},
		{"WINDOW_UPDATE", nil, func(rc *rawClient, i int) { rc.fr.WriteWindowUpdate(0, 1) }},
		{"PRIORITY", nil, func(rc *rawClient, i int) {
			rc.fr.WritePriority(uint32(2*i+1), http2.PriorityParam{StreamDep: 0, Weight: 1})
		}},
		{"unknown frames", nil, func(rc *rawClient, i int) { rc.raw(0x77, 0, 0, nil) }},
		{"stream errors", nil, func(rc *rawClient, i int) {
			rc.get(uint32(2*i+1), true, "connection", "close")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRaw(t, holdHandler(nil), Config{})
			rc.allowRST = true
			if tc.setup != nil {
				tc.setup(rc)
			}
			maxMem := rc.flood(5000, func(i int) { tc.frame(rc, i) })
			rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
			checkMem(t, rc, maxMem, 256<<10)
		})
	}
}

// A client that never reads, flooding frames that need an answer, must not
// make us queue without bound even below the glitch threshold.
func TestUnreadOutputBounded(t *testing.T) {
	rc := newRaw(t, holdHandler(nil), Config{MaxGlitches: 1 << 30, HighWater: 16 << 10})
	maxMem := new(int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20000; i++ {
			rc.conn.SetWriteDeadline(time.Now().Add(time.Second))
			if rc.fr.WritePing(false, [8]byte{byte(i)}) != nil {
				return
			}
			if i%256 == 0 {
				rc.ts.sampleMem(maxMem)
			}
		}
	}()
	<-done // the server stops reading once its output passes the bound
	rc.expectGoAway(http2.ErrCodeEnhanceYourCalm)
	checkMem(t, rc, maxMem, 4*16<<10+32<<10)
}

// A client that never opens its window must not make us buffer the
// handler's body: Write takes at most the per-stream send buffer.
func TestZeroWindowStall(t *testing.T) {
	accepted, refused := 0, false
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, nil, false)
		chunk := make([]byte, 32<<10)
		for i := 0; i < 320; i++ { // 10 MiB offered
			n, err := w.Write(chunk)
			accepted += n
			if err != nil || n < len(chunk) {
				refused = true
				break
			}
		}
		return &events{}
	})
	rc := newRaw(t, h, Config{}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	rc.get(1, true)
	rc.expectStatus(1)
	rc.ping()
	rc.ts.lock(func() {
		if !refused || accepted > defaultStreamSendBuffer {
			t.Errorf("Write accepted %d bytes with a zero window", accepted)
		}
	})
	if m := rc.ts.memory(); m > 128<<10 {
		t.Fatalf("connection holds %d bytes", m)
	}
}
