package h2

import (
	"bytes"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/internal/eventually"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestServerConnSize: a ServerConn stays in the 1,280-byte allocation
// class, which every idle h2 connection pays for (scripts/idle). The
// runtime puts an 8-byte header before every object over 512 bytes that
// holds pointers, so the struct itself must stay within 1,272 bytes: at
// 1,280 it took the 1,408-byte class. The test counts what the heap hands
// out for a thousand of them, header and class included.
func TestServerConnSize(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what an allocation takes")
	}
	const n, class = 1000, 1280
	conns := make([]*ServerConn, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range conns {
		conns[i] = new(ServerConn)
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(conns)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > class {
		t.Fatalf("a ServerConn (%d bytes) takes %d bytes of heap, past the %d-byte allocation class", unsafe.Sizeof(ServerConn{}), per, class)
	}
}

// TestReleaseIdle: after ReleaseIdle let go of the HPACK encoder, the next
// response head starts with a dynamic table size update to 0 (the client's
// decoder forgets the old encoder's entries), then the size back, and a
// client decoder that kept its table all along reads every head right.
// Nothing is released in the middle of a header block. The closed-stream
// record is gone too: a late DATA on a stream that ended before the release
// is a stream error, not a connection error.
func TestReleaseIdle(t *testing.T) {
	fields := []stream.Field{{Name: "x-served-by", Value: "release-idle-test"}, {Name: "cache-control", Value: "no-store"}}
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, fields, false)
		w.Write([]byte("ok"))
		w.Close(nil)
		return nil
	})
	rc := newRaw(t, h, Config{})
	// The test decodes the heads itself, with one decoder for the whole
	// connection as a client keeps, to see each block's bytes.
	rc.fr.ReadMetaHeaders = nil
	dec := hpack.NewDecoder(4096, nil)
	exchange := func(id uint32) []byte {
		t.Helper()
		rc.get(id, true)
		var block []byte
		for block == nil {
			switch f := rc.read().(type) {
			case *http2.HeadersFrame:
				if f.StreamID != id || !f.HeadersEnded() {
					t.Fatalf("HEADERS on %d (end headers %v), want one block on %d", f.StreamID, f.HeadersEnded(), id)
				}
				block = append([]byte(nil), f.HeaderBlockFragment()...)
			case *http2.RSTStreamFrame, *http2.GoAwayFrame:
				t.Fatalf("%v, want a response on %d", f, id)
			}
		}
		got, err := dec.DecodeFull(block)
		if err != nil {
			t.Fatalf("stream %d: decoding the head % x: %v", id, block, err)
		}
		if len(got) == 0 || got[0].Name != ":status" || got[0].Value != "200" {
			t.Fatalf("stream %d: head %v, want :status 200 first", id, got)
		}
		for _, f := range fields {
			if !hasField(got, f.Name, f.Value) {
				t.Fatalf("stream %d: fields %v, want %v among them", id, got, fields)
			}
		}
		rc.ping() // the body and END_STREAM are through: the stream is closed
		return block
	}

	first := exchange(1)
	second := exchange(3)
	if len(second) >= len(first) {
		t.Fatalf("second head %d bytes, first %d: the encoder's table is not in use", len(second), len(first))
	}
	if first[0]&0xe0 == 0x20 || second[0]&0xe0 == 0x20 {
		t.Fatalf("a table size update before any release: % x, % x", first, second)
	}

	var released int
	rc.ts.lock(func() {
		released = rc.ts.sc.ReleaseIdle()
		if rc.ts.sc.henc != nil || rc.ts.sc.closed != nil {
			t.Errorf("after ReleaseIdle: encoder %v, closed-stream record %v, want both gone", rc.ts.sc.henc != nil, rc.ts.sc.closed != nil)
		}
	})
	if released <= 0 {
		t.Fatalf("ReleaseIdle released %d bytes", released)
	}

	third := exchange(5)
	// 0x20: size update to 0; 0x3f 0xe1 0x1f: size update to 4096 (RFC 7541 §6.3, §5.1)
	if want := []byte{0x20, 0x3f, 0xe1, 0x1f}; !bytes.HasPrefix(third, want) {
		t.Fatalf("head after the release starts % x, want % x", third[:min(len(third), 8)], want)
	}
	if fourth := exchange(7); fourth[0]&0xe0 == 0x20 || len(fourth) != len(second) {
		t.Fatalf("head after the new encoder's first: % x, want % x", fourth, second)
	}

	// Half a header block: nothing is released (the Framer checks that
	// CONTINUATION follows), and the block completes as usual.
	block := rc.block(getReq...)
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 9, BlockFragment: block[:3], EndStream: true})
	eventually.Holds(t, 5*time.Second, "the server taking the HEADERS frame", func() bool {
		active := false
		rc.ts.lock(func() {
			if active = rc.ts.sc.hdr.active; active {
				if n := rc.ts.sc.ReleaseIdle(); n != 0 {
					t.Errorf("ReleaseIdle in the middle of a header block released %d bytes", n)
				}
			}
		})
		return active
	})
	rc.fr.WriteContinuation(9, true, block[3:])
	for {
		if f, ok := rc.read().(*http2.HeadersFrame); ok && f.StreamID == 9 {
			if _, err := dec.DecodeFull(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	rc.ping()

	// Stream 1 ended on both sides before the release; its record is gone.
	rc.raw(http2.FrameData, 0, 1, []byte("late"))
	rc.expectRST(1, http2.ErrCodeStreamClosed)
	rc.ping()
}

func hasField(fs []hpack.HeaderField, name, value string) bool {
	for _, f := range fs {
		if f.Name == name && f.Value == value {
			return true
		}
	}
	return false
}
