package h2

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// DATA frames are read by hand (dataread.go); these tests send them over
// TCP with the server fed whole reads, and in pieces of at most 1 and 7
// bytes, so every field of a frame is also seen split across Feed calls.
var dataSplits = []int{0, 1, 7}

// bodyHandler collects each stream's body and consumes it at once.
type bodyHandler struct {
	bodies     map[uint32]*bytes.Buffer
	ended      map[uint32]int // OnBodyEnd calls
	pieces     int            // OnBody calls
	resetAfter int            // when > 0, reset stream 1 once it got that many bytes
	keep       uint32         // a stream whose body is not consumed
}

func (b *bodyHandler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	id := w.(*h2Stream).id
	buf := new(bytes.Buffer)
	b.bodies[id] = buf
	return &events{
		body: func(p []byte) {
			buf.Write(p)
			b.pieces++
			if id != b.keep {
				w.Consumed(len(p))
			}
			if id == 1 && b.resetAfter > 0 && buf.Len() >= b.resetAfter {
				w.Reset(uint32(http2.ErrCodeCancel))
			}
		},
		bodyEnd: func([]stream.Field) {
			b.ended[id]++
			w.WriteHeader(200, nil, true)
		},
	}
}

func newBodyHandler() *bodyHandler {
	return &bodyHandler{bodies: map[uint32]*bytes.Buffer{}, ended: map[uint32]int{}}
}

var postReq = []string{":method", "POST", ":scheme", "https", ":authority", "a.test", ":path", "/"}

// The body of padded and unpadded frames, empty ones included, arrives
// whole and in order, its end after the last byte, the padding nowhere.
func TestDataPaddedBody(t *testing.T) {
	for _, split := range dataSplits {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			bh := newBodyHandler()
			rc := newRawSplit(t, bh, Config{}, split)
			rc.headers(1, false, postReq...)
			var want bytes.Buffer
			pad := bytes.Repeat([]byte{0}, 255)
			for i, n := range []int{5, 0, 16384 - 256, 1, 300, 16384, 0, 7} {
				data := bytes.Repeat([]byte{byte('a' + i)}, n)
				want.Write(data)
				switch {
				case n == 16384:
					rc.fr.WriteData(1, false, data)
				case i == 6:
					rc.fr.WriteDataPadded(1, false, nil, nil) // pad length 0, no body
				default:
					rc.fr.WriteDataPadded(1, false, data, pad[:min(255, 16383-n)])
				}
			}
			rc.fr.WriteDataPadded(1, true, []byte("end"), pad[:9])
			want.WriteString("end")
			rc.expectStatus(1)
			rc.ts.lock(func() {
				if got := bh.bodies[1]; !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("body of %d bytes, want %d, or other bytes", got.Len(), want.Len())
				}
				if bh.ended[1] != 1 {
					t.Fatalf("OnBodyEnd called %d times", bh.ended[1])
				}
				t.Logf("%d bytes in %d OnBody calls", want.Len(), bh.pieces)
			})
		})
	}
}

// The checks the Framer made on a DATA frame, and the windows, still
// hold when the server reads DATA itself, wherever the frame is split.
func TestDataFrameErrors(t *testing.T) {
	open := func(rc *rawClient, extra ...string) {
		rc.headers(1, false, append(append([]string(nil), postReq...), extra...)...)
	}
	for _, split := range dataSplits {
		for _, tc := range []struct {
			name string
			cfg  Config
			send func(rc *rawClient)
			code http2.ErrCode
			rst  bool // a stream error on stream 1, else a connection error
		}{
			{"padded without a pad length", Config{}, func(rc *rawClient) {
				open(rc)
				rc.raw(http2.FrameData, http2.FlagDataPadded, 1, nil)
			}, http2.ErrCodeFrameSize, false},
			{"pad length beyond the payload", Config{}, func(rc *rawClient) {
				open(rc)
				rc.raw(http2.FrameData, http2.FlagDataPadded, 1, []byte{4, 1, 2, 3})
			}, http2.ErrCodeProtocol, false},
			{"stream 0", Config{}, func(rc *rawClient) {
				open(rc)
				rc.raw(http2.FrameData, 0, 0, []byte("x"))
			}, http2.ErrCodeProtocol, false},
			{"idle stream", Config{}, func(rc *rawClient) {
				open(rc)
				rc.fr.WriteData(3, false, []byte("x"))
			}, http2.ErrCodeProtocol, false},
			{"inside a header block", Config{}, func(rc *rawClient) {
				open(rc)
				rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: rc.block(postReq...)})
				rc.fr.WriteData(1, false, []byte("x"))
			}, http2.ErrCodeProtocol, false},
			{"beyond the stream window, padding counted", Config{StreamWindow: 65535}, func(rc *rawClient) {
				open(rc)
				// 64,000 bytes, then 1,400 with 256 of padding: within
				// the window but for the padding.
				chunk := make([]byte, 16000)
				for range 4 {
					rc.fr.WriteData(1, false, chunk)
				}
				rc.fr.WriteDataPadded(1, false, make([]byte, 1400), make([]byte, 255))
			}, http2.ErrCodeFlowControl, true},
			{"beyond the connection window", Config{StreamWindow: 1 << 20, ConnWindow: 65535, MaxConnWindow: 65535}, func(rc *rawClient) {
				open(rc)
				rc.headers(3, false, postReq...)
				chunk := make([]byte, 16384)
				for range 3 {
					rc.fr.WriteData(1, false, chunk)
				}
				// 3*16384 + 1+16183+200 = 65,536: one byte too many.
				rc.fr.WriteDataPadded(3, false, chunk[:16183], make([]byte, 200))
			}, http2.ErrCodeFlowControl, false},
			{"body longer than content-length", Config{}, func(rc *rawClient) {
				open(rc, "content-length", "10")
				rc.fr.WriteDataPadded(1, false, make([]byte, 11), make([]byte, 3))
			}, http2.ErrCodeProtocol, true},
			{"body shorter than content-length", Config{}, func(rc *rawClient) {
				open(rc, "content-length", "10")
				rc.fr.WriteDataPadded(1, true, make([]byte, 9), make([]byte, 3))
			}, http2.ErrCodeProtocol, true},
		} {
			t.Run(fmt.Sprintf("%s/split=%d", tc.name, split), func(t *testing.T) {
				rc := newRawSplit(t, holdHandler(nil), tc.cfg, split)
				tc.send(rc)
				if tc.rst {
					rc.expectRST(1, tc.code)
					rc.ping() // the connection lives on
				} else {
					rc.expectGoAway(tc.code)
				}
			})
		}
	}
}

// A handler that resets its stream in the middle of a DATA frame (after
// its first bytes, which with split=1 is the first byte) gets no more of
// it; the rest of the frame, and the frames in flight after the reset,
// go back to the connection window, so another stream, whose handler
// consumes nothing, can still send all of it.
func TestDataResetMidFrame(t *testing.T) {
	for _, split := range dataSplits {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			bh := newBodyHandler()
			bh.resetAfter, bh.keep = 1, 3
			cfg := Config{StreamWindow: 1 << 20, ConnWindow: 65535, MaxConnWindow: 65535}
			rc := newRawSplit(t, bh, cfg, split)
			rc.headers(1, false, postReq...)
			chunk := make([]byte, 16000)
			for range 4 {
				rc.fr.WriteDataPadded(1, false, chunk, make([]byte, 17))
			}
			rc.expectRST(1, http2.ErrCodeCancel)
			// 64,068 bytes charged to the connection window of 65,535; only
			// their return lets the next stream send a window's worth.
			rc.headers(3, false, postReq...)
			for range 4 {
				rc.fr.WriteData(3, false, chunk)
			}
			rc.fr.WriteData(3, true, make([]byte, 65535-4*16000))
			rc.expectStatus(3)
			rc.ts.lock(func() {
				if n := bh.bodies[3].Len(); n != 65535 {
					t.Fatalf("stream 3 got %d bytes, want 65535", n)
				}
				if n := bh.bodies[1].Len(); n > 16000 {
					t.Fatalf("stream 1 got %d bytes after its reset", n)
				}
			})
		})
	}
}
