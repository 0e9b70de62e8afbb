package h2

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// BenchmarkGET feeds one HEADERS frame per request (plus the client's
// WINDOW_UPDATE for the previous body) and lets a handler answer with a
// 1 KiB body from Serve: decode, validate, serve, encode, frame.
func BenchmarkGET(b *testing.B) { benchGET(b, nil) }

// BenchmarkGETReleased is BenchmarkGET with a handler that implements
// stream.Releaser, as pollproxy's proxy does: the stream struct is reused.
func BenchmarkGETReleased(b *testing.B) { benchGET(b, &nopReleaser{}) }

// nopReleaser is Events that ignore everything, released or not.
type nopReleaser struct{ events }

func (*nopReleaser) OnRelease() {}

// benchConn starts a server connection on a memory transport and feeds it
// a client's preface and SETTINGS (and the ACK of the server's); in is
// empty then, and fr writes the client's next frames into it.
func benchConn(b *testing.B, h stream.Handler) (*ServerConn, *streamtest.Transport, *bytes.Buffer, *http2.Framer) {
	// The transport keeps no output and its timers never fire: the state
	// machine without sockets, the benchmark playing the loop.
	tr := &streamtest.Transport{Discard: true, NoTimers: true}
	sc := NewServerConn(tr, h, Config{IdleTimeout: -1})
	tr.Conn = sc
	in := new(bytes.Buffer)
	fr := http2.NewFramer(in, nil)
	in.WriteString(clientPreface)
	fr.WriteSettings()
	fr.WriteSettingsAck()
	if err := sc.Feed(in.Bytes()); err != nil {
		b.Fatal(err)
	}
	tr.EndStep()
	in.Reset()
	return sc, tr, in, fr
}

func benchGET(b *testing.B, ev stream.Events) {
	body := bytes.Repeat([]byte("x"), 1024)
	fields := []stream.Field{{Name: "content-type", Value: "text/plain"}, {Name: "content-length", Value: "1024"}}
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, fields, false)
		w.Write(body)
		w.Close(nil)
		return ev
	})
	sc, tr, in, fr := benchConn(b, h)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	encode := func() []byte {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "example.test"},
			{":path", "/index.html"}, {"user-agent", "bench/1.0"}, {"accept", "*/*"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	// The first request fills both dynamic tables; every later block is
	// the same few indexes, as on a kept-alive connection.
	first := encode()
	block := encode()
	in.Reset()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndStream: true, EndHeaders: true})
	if err := sc.Feed(in.Bytes()); err != nil {
		b.Fatal(err)
	}
	tr.EndStep()
	b.ReportAllocs()
	b.ResetTimer()
	id := uint32(3)
	var msg []byte
	for i := 0; i < b.N; i++ {
		in.Reset()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
		fr.WriteWindowUpdate(0, 1024)
		msg = append(msg[:0], in.Bytes()...)
		if err := sc.Feed(msg); err != nil {
			b.Fatal(err)
		}
		tr.EndStep()
		id += 2
	}
	b.StopTimer()
	if len(sc.streams) != 0 || tr.Written < b.N*1024 {
		b.Fatalf("streams left %d, output %d", len(sc.streams), tr.Written)
	}
}
