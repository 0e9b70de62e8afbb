package h2

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// BenchmarkUpload feeds one stream's request body as a client sends it: DATA
// frames of 16 KiB, the plaintext handed over in pieces of 16 KiB as TLS
// records hold them (so nearly every frame is split across two Feed
// calls). The handler copies the body out, as the proxy copies it into the
// backend connection's output, and consumes it at once. One op is 1 MiB
// of frames.
func BenchmarkUpload(b *testing.B) {
	var sink []byte
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &events{body: func(p []byte) {
			sink = append(sink[:0], p...)
			w.Consumed(len(p))
		}}
	})
	sc, tr, in, fr := benchConn(b, h)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "example.test"}, {":path", "/upload"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	if err := sc.Feed(in.Bytes()); err != nil {
		b.Fatal(err)
	}
	tr.EndStep()
	in.Reset()
	payload := bytes.Repeat([]byte("u"), 16384)
	for range 64 {
		fr.WriteData(1, false, payload)
	}
	frames := bytes.Clone(in.Bytes())
	b.SetBytes(int64(len(frames)))
	b.ReportAllocs()
	for b.Loop() {
		for p := frames; len(p) > 0; {
			k := min(len(p), 16384)
			if err := sc.Feed(p[:k]); err != nil {
				b.Fatal(err)
			}
			tr.EndStep()
			p = p[k:]
		}
	}
	if len(sink) == 0 {
		b.Fatal("no body reached the handler")
	}
}
