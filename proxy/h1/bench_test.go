package h1

import (
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// benchRequest is a typical browser request head of about 400 bytes.
var benchRequest = []byte("GET /static/app/main.js?v=1712345678 HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0\r\n" +
	"Accept: */*\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br\r\n" +
	"Referer: https://www.example.com/index.html\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=4f2a9c1e7b3d; theme=dark\r\n" +
	"Sec-Fetch-Dest: script\r\n" +
	"Sec-Fetch-Mode: no-cors\r\n" +
	"\r\n")

func BenchmarkRequestHead(b *testing.B) {
	var p RequestParser
	b.SetBytes(int64(len(benchRequest)))
	b.ReportAllocs()
	for b.Loop() {
		p.Reset()
		if _, ev, err := p.Feed(benchRequest); ev != EventHead || err != nil {
			b.Fatal(ev, err)
		}
	}
}

// benchResponse is a 1 KiB response with eight header fields.
var benchResponse = []byte("HTTP/1.1 200 OK\r\n" +
	"Date: Mon, 27 May 2024 10:00:00 GMT\r\n" +
	"Server: nginx\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n" +
	"Content-Length: 1024\r\n" +
	"Last-Modified: Mon, 20 May 2024 10:00:00 GMT\r\n" +
	"ETag: \"664b1f40-400\"\r\n" +
	"Cache-Control: max-age=3600\r\n" +
	"Accept-Ranges: bytes\r\n" +
	"\r\n" + strings.Repeat("x", 1024))

func BenchmarkResponse1K(b *testing.B) { benchResponses(b, 1) }

// BenchmarkResponse1KConns is BenchmarkResponse1K over 120 parsers in
// turn, as a proxy at h2 -c 6 -m 20 holds one origin connection (and
// parser) per stream in flight: each parser's buffers are colder.
func BenchmarkResponse1KConns(b *testing.B) { benchResponses(b, 120) }

func benchResponses(b *testing.B, conns int) {
	ps := make([]ResponseParser, conns)
	b.SetBytes(int64(len(benchResponse)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := &ps[i%conns]
		i++
		p.Reset("GET")
		buf := benchResponse
		for {
			n, ev, err := p.Feed(buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = buf[n:]
			if ev == EventDone {
				break
			}
		}
	}
}

func BenchmarkAppendRequestHead(b *testing.B) {
	fields := []stream.Field{
		{Name: "host", Value: "backend:8080"},
		{Name: "user-agent", Value: "Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"},
		{Name: "accept", Value: "*/*"},
		{Name: "accept-encoding", Value: "gzip, deflate, br"},
		{Name: "x-forwarded-for", Value: "192.0.2.1"},
		{Name: "x-forwarded-proto", Value: "https"},
		{Name: "via", Value: "2.0 pollproxy"},
	}
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendRequestHeadFramed(dst[:0], "GET", "/static/app/main.js?v=1712345678", fields, LengthNone)
	}
}

// The response both ServerConn benchmarks write.
var (
	benchBody   = []byte(strings.Repeat("x", 1024))
	benchFields = []stream.Field{{Name: "content-length", Value: "1024"}, {Name: "content-type", Value: "text/html"}}
)

func respondBench(w stream.ResponseWriter) {
	w.WriteHeader(200, benchFields, false)
	w.Write(benchBody)
	w.Close(nil)
}

// benchServerConn feeds one kept-alive request per iteration to a front end
// serving with serve; after, if not nil, runs once the Feed returned.
func benchServerConn(b *testing.B, serve func(w stream.ResponseWriter) stream.Events, after func()) {
	benchServerConnOn(b, &testLoop{Transport: &streamtest.Transport{NoTimers: true}}, serve, after)
}

func benchServerConnOn(b *testing.B, l *testLoop, serve func(w stream.ResponseWriter) stream.Events, after func()) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return serve(w)
	}}
	c := NewServerConn(l, allocHandler{h}, ServerConfig{})
	b.ReportAllocs()
	for b.Loop() {
		l.Pending = l.Pending[:0]
		if err := c.Feed(benchRequest); err != nil {
			b.Fatal(err)
		}
		if after != nil {
			after()
		}
	}
}

// BenchmarkServerConn is one kept-alive request and response through the
// front end, with a handler answering in Serve.
func BenchmarkServerConn(b *testing.B) {
	benchServerConn(b, func(w stream.ResponseWriter) stream.Events {
		respondBench(w)
		return nil
	}, nil)
}

// BenchmarkServerConnAsync is one kept-alive request and response with the
// handler answering after Serve returns, as a proxy does from its backend's
// events: the response ends from outside the front end's own calls.
func BenchmarkServerConnAsync(b *testing.B) {
	var w stream.ResponseWriter
	benchServerConn(b, func(rw stream.ResponseWriter) stream.Events {
		w = rw
		return nopEvents{}
	}, func() { respondBench(w) })
}

// BenchmarkServerConnTimers is BenchmarkServerConn with a clock whose
// timers are real objects, as the loop's are: the header and idle timeouts
// armed around every request. The connection re-arms its one timer
// (stream.ResettableTimer) instead of allocating one per request.
func BenchmarkServerConnTimers(b *testing.B) {
	benchServerConnOn(b, &testLoop{Transport: streamtest.NewTransport()}, func(w stream.ResponseWriter) stream.Events {
		respondBench(w)
		return nil
	}, nil)
}

type nopEvents struct{}

func (nopEvents) OnBody([]byte)            {}
func (nopEvents) OnBodyEnd([]stream.Field) {}
func (nopEvents) OnWritable()              {}
func (nopEvents) OnAbort(error)            {}
