package h2

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// headerFrames reads the next header block of stream id frame by frame
// (HEADERS, then CONTINUATION until END_HEADERS) and checks how it is cut:
// no frame over max, every fragment but the last exactly max, END_HEADERS
// on the last frame only. It returns the block, the HEADERS frame's
// END_STREAM, and the number of frames. DATA frames before it go to body.
func headerFrames(t *testing.T, rc *rawClient, id uint32, max int, body *[]byte) (block []byte, end bool, frames int) {
	t.Helper()
	for {
		f := rc.read()
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == id {
			*body = append(*body, d.Data()...)
			continue
		}
		fh := f.Header()
		if fh.StreamID != id {
			continue
		}
		var frag []byte
		var last bool
		switch f := f.(type) {
		case *http2.HeadersFrame:
			if frames != 0 {
				t.Fatalf("HEADERS inside a header block")
			}
			frag, last, end = f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded()
		case *http2.ContinuationFrame:
			if frames == 0 {
				t.Fatalf("CONTINUATION without HEADERS")
			}
			frag, last = f.HeaderBlockFragment(), f.HeadersEnded()
		default:
			t.Fatalf("%v inside a header block", fh.Type)
		}
		frames++
		if len(frag) > max || !last && len(frag) != max {
			t.Fatalf("frame %d of the block: %d bytes (end headers %v), max %d", frames, len(frag), last, max)
		}
		block = append(block, frag...)
		if last {
			return block, end, frames
		}
	}
}

// TestHeaderBlockFrames checks the hand-written HEADERS and CONTINUATION
// frames against the client's SETTINGS_MAX_FRAME_SIZE, for blocks a few
// bytes either side of one frame and of two, as the final head (END_STREAM
// on HEADERS) and as trailers after a body, by decoding every block with
// the client's own HPACK decoder. The value is of a character whose
// Huffman code is longer than a byte, so the block's size follows it.
func TestHeaderBlockFrames(t *testing.T) {
	const max = 20000
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		var n int
		for _, f := range req.Header {
			if f.Name == "x-len" {
				n, _ = strconv.Atoi(f.Value)
			}
		}
		big := []stream.Field{{Name: "x-big", Value: strings.Repeat("{", n)}}
		if req.Path == "/trailers" {
			w.WriteHeader(200, nil, false)
			w.Write([]byte("body"))
			w.Close(big)
			return nil
		}
		w.WriteHeader(200, big, true)
		return nil
	})
	rc := newRaw(t, h, Config{}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: max})
	rc.fr.ReadMetaHeaders = nil // frames one by one
	dec := hpack.NewDecoder(4096, nil)
	dec.SetMaxStringLength(1 << 20)
	decode := func(block []byte) map[string]string {
		fields, err := dec.DecodeFull(block)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		m := map[string]string{}
		for _, f := range fields {
			m[f.Name] = f.Value
		}
		return m
	}
	id := uint32(1)
	sizes := map[int]bool{} // frames per block seen
	exact := false          // a block of exactly max bytes: one frame
	for _, base := range []int{max, 2 * max} {
		for n := base - 24; n <= base+2; n++ {
			rc.get(id, true, "x-len", strconv.Itoa(n))
			block, end, frames := headerFrames(t, rc, id, max, nil)
			if !end || decode(block)["x-big"] != strings.Repeat("{", n) {
				t.Fatalf("x-big of %d: end stream %v, %d frames", n, end, frames)
			}
			sizes[frames] = true
			exact = exact || len(block) == max
			id += 2

			rc.headers(id, true, ":method", "GET", ":scheme", "https", ":authority", "a.test",
				":path", "/trailers", "x-len", strconv.Itoa(n))
			var body []byte
			if _, end, _ := headerFrames(t, rc, id, max, &body); end {
				t.Fatal("the response head ended the stream before its body")
			}
			block, end, _ = headerFrames(t, rc, id, max, &body)
			if !end || string(body) != "body" || decode(block)["x-big"] != strings.Repeat("{", n) {
				t.Fatalf("trailer x-big of %d: end stream %v, body %q", n, end, body)
			}
			id += 2
		}
	}
	if !exact || !sizes[1] || !sizes[2] || !sizes[3] {
		t.Fatalf("blocks of exactly one frame seen: %v; frames per block seen: %v", exact, sizes)
	}
}
