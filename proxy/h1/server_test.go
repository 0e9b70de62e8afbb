package h1

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// testLoop is the connection under test on streamtest's in-memory
// transport, which plays the event loop, single-threaded as the loop is:
// each call into the connection is a step (Step), after which the
// transport delivers what the real loop would before the next event, and
// time is a manual clock (Advance fires the timers that fall due, each as
// a step of its own).
type testLoop struct {
	*streamtest.Transport
	conn *ServerConn
}

// newTestLoop returns a loop that records everything the connection
// writes, for output.
func newTestLoop() *testLoop {
	l := &testLoop{Transport: streamtest.NewTransport()}
	l.Record = true
	return l
}

func (l *testLoop) feed(t *testing.T, s string) error {
	t.Helper()
	return l.Feed([]byte(s))
}

func (l *testLoop) output() string { return string(l.Output) }

// must checks cond between loop steps: every transition, including one
// taken up from an owed Feed, has happened by then.
func (l *testLoop) must(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !cond() {
		t.Fatalf("not so: %s; output so far:\n%s", what, l.output())
	}
}

// testHandler records what it is given and answers through serve.
type testHandler struct {
	reqs  []stream.Request
	ws    []stream.ResponseWriter
	serve func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events
}

func (h *testHandler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := *req
	r.Header = append([]stream.Field(nil), req.Header...)
	h.reqs = append(h.reqs, r)
	h.ws = append(h.ws, w)
	return h.serve(h, req, w)
}

type testEvents struct {
	body     bytes.Buffer
	ended    bool
	trailers []stream.Field
	writable int
	aborted  error
	onEnd    func()
	consume  bool
	w        stream.ResponseWriter
}

func (e *testEvents) OnBody(p []byte) {
	e.body.Write(p)
	if e.consume {
		e.w.Consumed(len(p))
	}
}
func (e *testEvents) OnBodyEnd(tr []stream.Field) {
	e.ended, e.trailers = true, tr
	if e.onEnd != nil {
		e.onEnd()
	}
}
func (e *testEvents) OnWritable()       { e.writable++ }
func (e *testEvents) OnAbort(err error) { e.aborted = err }

// respond answers in Serve with a fixed body.
func respond(body string) func(*testHandler, *stream.Request, stream.ResponseWriter) stream.Events {
	return func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: itoa(len(body))}}, false)
		w.Write([]byte(body))
		w.Close(nil)
		return nil
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func newTestConn(h *testHandler, cfg ServerConfig) *testLoop {
	l := newTestLoop()
	l.Step(func() {
		l.conn = NewServerConn(l, h, cfg)
		l.Conn = l.conn
	})
	return l
}

type gotResp struct {
	status   int
	infos    []int
	header   []stream.Field
	body     string
	trailers []stream.Field
	keep     bool
}

func (r gotResp) get(name string) string {
	for _, f := range r.header {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// readResponses parses the front end's output with pollproxy's own
// response parser, one response per method given.
func readResponses(t *testing.T, out string, closed bool, methods ...string) []gotResp {
	t.Helper()
	b := []byte(out)
	var rs []gotResp
	var p ResponseParser
	for _, m := range methods {
		p.Reset(m)
		var r gotResp
		for done := false; !done; {
			n, ev, err := p.Feed(b)
			b = b[n:]
			if err != nil {
				t.Fatalf("response %d: %v in %q", len(rs), err, out)
			}
			switch ev {
			case EventInfo:
				r.infos = append(r.infos, p.Status())
			case EventHead:
				r.status = p.Status()
				r.header = append([]stream.Field(nil), p.Header()...)
			case EventBody:
				r.body += string(p.Body())
			case EventDone:
				r.trailers = append([]stream.Field(nil), p.Trailers()...)
				r.keep = p.KeepAlive()
				done = true
			case EventNone:
				if !closed {
					t.Fatalf("response %d incomplete in %q", len(rs), out)
				}
				ev, err := p.EOF()
				if err != nil || ev != EventDone {
					t.Fatalf("response %d incomplete at EOF: %v in %q", len(rs), err, out)
				}
				r.keep = false
				done = true
			}
		}
		rs = append(rs, r)
	}
	if len(b) != 0 {
		t.Fatalf("unexpected trailing output %q", b)
	}
	return rs
}

func TestServerKeepAlive(t *testing.T) {
	h := &testHandler{serve: respond("hello")}
	l := newTestConn(h, ServerConfig{})
	for i := 0; i < 3; i++ {
		if err := l.feed(t, "GET /"+itoa(i)+" HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	rs := readResponses(t, l.output(), false, "GET", "GET", "GET")
	for i, r := range rs {
		if r.status != 200 || r.body != "hello" || !r.keep {
			t.Fatalf("response %d: %+v", i, r)
		}
	}
	if l.Closed || len(h.reqs) != 3 || h.reqs[2].Path != "/2" || h.reqs[0].Authority != "example.com" ||
		h.reqs[0].Scheme != "https" || h.reqs[0].RemoteAddr.Port() != 4242 {
		t.Fatalf("closed %v, reqs %+v", l.Closed, h.reqs)
	}
}

// TestServerPipelining answers asynchronously: the second request must not
// reach the handler before the first response is complete.
func TestServerPipelining(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &testEvents{}
	}}
	l := newTestConn(h, ServerConfig{})
	in := "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	if err := l.feed(t, in); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		l.Step(func() {
			if len(h.reqs) != i {
				t.Fatalf("before response %d: %d requests served", i, len(h.reqs))
			}
			w := h.ws[i-1]
			w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: "2"}}, false)
			w.Write([]byte("ok"))
			w.Close(nil)
			if len(h.reqs) != i {
				t.Fatalf("request %d started inside Close", i+1)
			}
		})
		if i < 3 {
			// Taken up from the Feed that Close asked for, not inside Close.
			l.must(t, "next request", func() bool { return len(h.reqs) == i+1 })
		}
	}
	l.must(t, "close", func() bool { return l.Closed })
	rs := readResponses(t, l.output(), true, "GET", "HEAD", "GET")
	if rs[1].body != "" || rs[1].get("content-length") != "2" || rs[2].keep || rs[2].get("connection") != "" {
		t.Fatalf("responses %+v", rs)
	}
	if !strings.Contains(l.output(), "connection: close") {
		t.Fatal("last response lacks connection: close")
	}
}

func TestServerPipelineBufferPauses(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &testEvents{}
	}}
	l := newTestConn(h, ServerConfig{MaxBufferedInput: 100})
	one := "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
	if err := l.feed(t, strings.Repeat(one, 10)); err != nil {
		t.Fatal(err)
	}
	l.Step(func() {
		if !l.Paused || len(h.reqs) != 1 {
			t.Fatalf("paused %v, %d served", l.Paused, len(h.reqs))
		}
	})
	for i := 1; i <= 10; i++ {
		l.Step(func() {
			h.ws[i-1].WriteHeader(204, nil, true)
		})
		if i < 10 {
			l.must(t, "next", func() bool { return len(h.reqs) == i+1 })
		}
	}
	l.must(t, "unpaused", func() bool { return !l.Paused })
	if rs := readResponses(t, l.output(), false, strings.Split(strings.Repeat("GET ", 10), " ")[:10]...); rs[9].status != 204 {
		t.Fatal(rs)
	}
}

// TestServerChunkedUploadBackpressure streams a chunked body to a handler
// that consumes slowly: reading pauses at the window and resumes on
// Consumed.
func TestServerChunkedUploadBackpressure(t *testing.T) {
	ev := &testEvents{}
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		ev.w = w
		ev.onEnd = func() {
			w.WriteHeader(200, nil, false)
			w.Write([]byte("got " + itoa(ev.body.Len())))
			w.Close([]stream.Field{{Name: "x-checksum", Value: "abc"}})
		}
		return ev
	}}
	l := newTestConn(h, ServerConfig{BodyWindow: 16})
	var body strings.Builder
	in := "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	for i := 0; i < 10; i++ {
		chunk := strings.Repeat(string(rune('a'+i)), 10)
		body.WriteString(chunk)
		in += "a\r\n" + chunk + "\r\n"
	}
	in += "0\r\nx-client: 1\r\n\r\n"
	if err := l.feed(t, in); err != nil {
		t.Fatal(err)
	}
	l.Step(func() {
		if !l.Paused || ev.body.Len() != 16 {
			t.Fatalf("paused %v after %d bytes", l.Paused, ev.body.Len())
		}
		if r := h.reqs[0]; r.ContentLength != -1 || !r.HasBody {
			t.Fatalf("request %+v", r)
		}
	})
	for step := 0; step < 20; step++ {
		var done bool
		l.Step(func() {
			done = ev.ended
			if !done {
				n := ev.body.Len()
				ev.w.Consumed(n) // everything so far; window reopens
				if ev.body.Len() != n {
					t.Fatal("body delivered from inside Consumed")
				}
			}
		})
		if done {
			break
		}
		// The bytes held back went on from the Feed that Consumed asked
		// for: exactly one more window.
		l.must(t, "progress", func() bool { return ev.body.Len() == min(16*(step+2), 100) })
	}
	l.must(t, "end", func() bool { return ev.ended })
	if ev.body.String() != body.String() || len(ev.trailers) != 1 || ev.trailers[0].Name != "x-client" {
		t.Fatalf("body %q trailers %v", ev.body.String(), ev.trailers)
	}
	l.Step(func() {
		if l.Pauses == 0 || l.Paused {
			t.Fatalf("pauses %d, paused %v", l.Pauses, l.Paused)
		}
	})
	rs := readResponses(t, l.output(), false, "POST")
	if rs[0].body != "got 100" || len(rs[0].trailers) != 1 || rs[0].trailers[0].Value != "abc" ||
		rs[0].get("transfer-encoding") != "" {
		t.Fatalf("response %+v", rs[0])
	}
	if !strings.Contains(l.output(), "transfer-encoding: chunked\r\n") {
		t.Fatal("response not chunked")
	}
}

func TestServerExpectContinue(t *testing.T) {
	ev := &testEvents{consume: true}
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		if _, ok := req.Get("expect"); ok {
			t.Error("expect forwarded to the handler")
		}
		ev.w = w
		ev.onEnd = func() { w.WriteHeader(201, nil, true) }
		return ev
	}}
	l := newTestConn(h, ServerConfig{})
	if err := l.feed(t, "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if out := l.output(); out != "HTTP/1.1 100 Continue\r\n\r\n" {
		t.Fatalf("before body: %q", out)
	}
	if err := l.feed(t, "data"); err != nil {
		t.Fatal(err)
	}
	rs := readResponses(t, l.output(), false, "PUT")
	if len(rs[0].infos) != 1 || rs[0].status != 201 || !rs[0].keep || ev.body.String() != "data" {
		t.Fatalf("%+v", rs[0])
	}

	// A handler that refuses in Serve spares the upload: no 100, and the
	// connection closes because the body may or may not follow.
	h2 := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(413, nil, true)
		return nil
	}}
	l2 := newTestConn(h2, ServerConfig{})
	l2.feed(t, "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4000000\r\n\r\n")
	rs = readResponses(t, l2.output(), true, "PUT")
	if len(rs[0].infos) != 0 || rs[0].status != 413 || rs[0].keep || !l2.Closed {
		t.Fatalf("%+v closed %v", rs[0], l2.Closed)
	}
}

func TestServerHeadAnd204(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		switch req.Path {
		case "/head":
			w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: "1234"}}, false)
			if n, err := w.Write([]byte("ignored")); n != 7 || err != nil {
				t.Errorf("write on HEAD: %d %v", n, err)
			}
			w.Close(nil)
		case "/204":
			w.WriteHeader(204, []stream.Field{{Name: "content-length", Value: "5"}, {Name: "x", Value: "y"}}, true)
		case "/304":
			w.WriteHeader(304, []stream.Field{{Name: "etag", Value: `"e"`}}, true)
		case "/empty":
			w.WriteHeader(200, nil, true)
		}
		return nil
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "HEAD /head HTTP/1.1\r\nHost: h\r\n\r\nGET /204 HTTP/1.1\r\nHost: h\r\n\r\n"+
		"GET /304 HTTP/1.1\r\nHost: h\r\n\r\nGET /empty HTTP/1.1\r\nHost: h\r\n\r\n")
	out := l.output()
	rs := readResponses(t, out, false, "HEAD", "GET", "GET", "GET")
	if rs[0].get("content-length") != "1234" || rs[0].body != "" {
		t.Fatalf("HEAD %+v", rs[0])
	}
	if rs[1].status != 204 || rs[1].get("content-length") != "" || rs[1].get("x") != "y" {
		t.Fatalf("204 %+v", rs[1])
	}
	if rs[2].status != 304 || rs[3].get("content-length") != "0" {
		t.Fatalf("%+v %+v", rs[2], rs[3])
	}
	if strings.Contains(out, "ignored") || strings.Contains(out, "transfer-encoding") {
		t.Fatalf("body on a bodiless response: %q", out)
	}
}

func TestServerConnectionClose(t *testing.T) {
	h := &testHandler{serve: respond("bye")}
	l := newTestConn(h, ServerConfig{})
	if err := l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	rs := readResponses(t, l.output(), true, "GET")
	if rs[0].keep || !l.Closed || len(h.reqs) != 1 {
		t.Fatalf("%+v closed %v reqs %d", rs[0], l.Closed, len(h.reqs))
	}
}

func TestServerHTTP10(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(103, []stream.Field{{Name: "link", Value: "</a>"}}, false)
		w.WriteHeader(200, nil, false)
		w.Write([]byte("close-delimited"))
		w.Close([]stream.Field{{Name: "x", Value: "dropped"}})
		return nil
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	out := l.output()
	if strings.Contains(out, "103") || strings.Contains(out, "chunked") || !strings.Contains(out, "connection: close") {
		t.Fatalf("%q", out)
	}
	rs := readResponses(t, out, true, "GET")
	if rs[0].body != "close-delimited" || !l.Closed || h.reqs[0].Proto != "HTTP/1.0" {
		t.Fatalf("%+v", rs[0])
	}

	// With a length, an HTTP/1.0 keep-alive client keeps its connection.
	h = &testHandler{serve: respond("x")}
	l = newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	if out := l.output(); !strings.Contains(out, "connection: keep-alive") || l.Closed {
		t.Fatalf("%q", out)
	}
}

func TestServerEarlyHints(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(103, []stream.Field{{Name: "link", Value: "</s.css>; rel=preload"}}, false)
		w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: "0"}}, true)
		return nil
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	rs := readResponses(t, l.output(), false, "GET")
	if len(rs[0].infos) != 1 || rs[0].infos[0] != 103 || rs[0].status != 200 {
		t.Fatalf("%+v", rs[0])
	}
}

func TestServerHeaderTimeout(t *testing.T) {
	h := &testHandler{serve: respond("x")}
	l := newTestConn(h, ServerConfig{HeaderTimeout: 30 * time.Millisecond, IdleTimeout: 30 * time.Millisecond})
	// Slowloris: bytes keep coming, the head never ends, the timer is not
	// extended: it counts from the connection's start.
	for i := 0; i < 3; i++ {
		l.feed(t, "X") // at 0, 10 and 20 ms
		if i < 2 {
			l.Advance(10 * time.Millisecond)
		}
	}
	l.Advance(9 * time.Millisecond)
	l.must(t, "open 29 ms in", func() bool { return !l.Closed })
	l.Advance(time.Millisecond)
	l.must(t, "timeout at 30 ms", func() bool { return l.Closed })
	if out := l.output(); !strings.HasPrefix(out, "HTTP/1.1 408 Request Timeout\r\n") || !strings.Contains(out, "connection: close") {
		t.Fatalf("%q", out)
	}
	if len(h.reqs) != 0 {
		t.Fatal("served")
	}

	// An idle kept-alive connection closes without a word.
	l = newTestConn(h, ServerConfig{HeaderTimeout: time.Hour, IdleTimeout: 20 * time.Millisecond})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	before := l.output()
	l.Advance(19 * time.Millisecond)
	l.must(t, "open 19 ms in", func() bool { return !l.Closed })
	l.Advance(time.Millisecond)
	l.must(t, "idle close at 20 ms", func() bool { return l.Closed })
	if l.output() != before {
		t.Fatalf("idle close wrote %q", l.output()[len(before):])
	}
}

func TestServerBadRequests(t *testing.T) {
	tests := []struct {
		in     string
		status string
	}{
		{"GET / HTTP/1.1\r\n\r\n", "400"},
		{"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", "400"},
		{"GET /" + strings.Repeat("a", 20000) + " HTTP/1.1\r\n", "414"},
		{"GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("X: y\r\n", 101) + "\r\n", "431"},
		{"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "501"},
		{"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n", "413"},
		{"GET / HTTP/3.0\r\nHost: h\r\n\r\n", "505"},
	}
	for _, tc := range tests {
		h := &testHandler{serve: respond("x")}
		l := newTestConn(h, ServerConfig{MaxRequestBody: 1000})
		err := l.feed(t, tc.in)
		out := l.output()
		if err == nil || !l.Closed || !strings.HasPrefix(out, "HTTP/1.1 "+tc.status+" ") ||
			!strings.Contains(out, "connection: close") || len(h.reqs) != 0 {
			t.Errorf("%.40q: err %v closed %v out %q", tc.in, err, l.Closed, out)
		}
		readResponses(t, out, true, "GET")
	}
}

// TestServerBadChunkMidBody aborts the handler and answers 400 when no
// response has started.
func TestServerBadChunkMidBody(t *testing.T) {
	ev := &testEvents{consume: true}
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		ev.w = w
		return ev
	}}
	l := newTestConn(h, ServerConfig{})
	err := l.feed(t, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")
	if err == nil || ev.aborted == nil || !l.Closed || !strings.HasPrefix(l.output(), "HTTP/1.1 400 ") {
		t.Fatalf("err %v aborted %v out %q", err, ev.aborted, l.output())
	}
}

func TestServerWriteBackpressure(t *testing.T) {
	ev := &testEvents{}
	var w stream.ResponseWriter
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, rw stream.ResponseWriter) stream.Events {
		w = rw
		w.WriteHeader(200, nil, false)
		return ev
	}}
	l := newTestConn(h, ServerConfig{WriteHighWater: 1000})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	payload := bytes.Repeat([]byte("z"), 3000)
	var sent int
	l.Step(func() {
		n, err := w.Write(payload)
		if err != nil || n >= len(payload) || n == 0 {
			t.Fatalf("first write %d %v", n, err)
		}
		sent += n
		if n2, _ := w.Write(payload[sent:]); n2 != 0 {
			t.Fatalf("write above the high-water mark took %d", n2)
		}
	})
	for sent < len(payload) {
		l.Step(func() {
			l.Pending = l.Pending[:0]
			l.conn.OnDrained()
			n, _ := w.Write(payload[sent:])
			sent += n
		})
	}
	l.Step(func() {
		w.Close(nil)
		if ev.writable == 0 {
			t.Fatal("no OnWritable")
		}
	})
	rs := readResponses(t, l.output(), false, "GET")
	if rs[0].body != string(payload) {
		t.Fatalf("body length %d", len(rs[0].body))
	}
}

func TestServerEarlyResponseDiscardsBody(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		// As the proxy does when it answers an error mid-upload.
		w.(stream.BodyRefuser).RefuseBody()
		w.WriteHeader(403, nil, true)
		return &testEvents{}
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab")
	l.feed(t, "cde")
	l.feed(t, "GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
	l.must(t, "next", func() bool { return len(h.reqs) == 2 })
	if l.Closed || h.reqs[1].Path != "/next" {
		t.Fatal("connection not reused after a discarded body")
	}

	if strings.Contains(l.output(), "connection: close") {
		t.Fatal("a body small enough to discard: the response says connection: close")
	}

	// Too large to discard: the connection closes after the response, and
	// the response says so (RFC 9112 §9.6), or the client sends its next
	// request on a connection about to close.
	l = newTestConn(h, ServerConfig{MaxDiscard: 10})
	l.feed(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 500\r\n\r\nab")
	if !l.Closed {
		t.Fatal("large unread body kept the connection")
	}
	if !strings.Contains(l.output(), "connection: close") {
		t.Fatalf("the connection closes after this response, which lacks connection: close:\n%s", l.output())
	}
}

func TestServerAbortAndReset(t *testing.T) {
	ev := &testEvents{}
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return ev
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	gone := errors.New("peer reset")
	l.Step(func() { l.conn.Abort(gone) })
	if ev.aborted != gone {
		t.Fatalf("aborted %v", ev.aborted)
	}
	l.Step(func() {
		if err := h.ws[0].WriteHeader(200, nil, true); err != stream.ErrStreamClosed {
			t.Fatalf("write after abort: %v", err)
		}
	})

	ev = &testEvents{}
	l = newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	l.Step(func() { h.ws[1].Reset(stream.CodeCancel) })
	if !l.Closed || ev.aborted != nil {
		t.Fatalf("reset: closed %v aborted %v", l.Closed, ev.aborted)
	}
}

func TestServerShutdown(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &testEvents{}
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	l.Step(func() { l.conn.Shutdown() })
	if l.Closed {
		t.Fatal("closed with a request in flight")
	}
	l.Step(func() { h.ws[0].WriteHeader(200, nil, true) })
	if !l.Closed || !strings.Contains(l.output(), "connection: close") {
		t.Fatalf("closed %v out %q", l.Closed, l.output())
	}
	l = newTestConn(h, ServerConfig{})
	l.Step(func() { l.conn.Shutdown() })
	if !l.Closed {
		t.Fatal("idle connection not closed by Shutdown")
	}
}

func TestServerRejectsBadResponseFields(t *testing.T) {
	var err error
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		err = w.WriteHeader(200, []stream.Field{{Name: "x", Value: "a\r\nset-cookie: evil"}}, true)
		w.WriteHeader(500, nil, true)
		return nil
	}}
	l := newTestConn(h, ServerConfig{})
	l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	if err != ErrBadField || strings.Contains(l.output(), "evil") {
		t.Fatalf("err %v out %q", err, l.output())
	}
}

// TestServerAllocs checks the per-request cost of a kept-alive connection
// with a handler that answers in Serve.
func TestServerAllocs(t *testing.T) {
	body := []byte("hello")
	fields := []stream.Field{{Name: "content-length", Value: "5"}, {Name: "content-type", Value: "text/plain"}}
	h := &testHandler{}
	h.serve = func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, fields, false)
		w.Write(body)
		w.Close(nil)
		return nil
	}
	l := &testLoop{Transport: &streamtest.Transport{NoTimers: true}}
	c := NewServerConn(l, allocHandler{h}, ServerConfig{})
	l.conn, l.Conn = c, c
	in := []byte("GET /x HTTP/1.1\r\nHost: h\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	a := testing.AllocsPerRun(200, func() {
		l.Pending = l.Pending[:0]
		c.Feed(in)
	})
	// One string for the head; timers are the loop's business.
	if a > 1 {
		t.Fatalf("%v allocs per request", a)
	}
	// Nor does a request cost the loop anything more: no resumed reads,
	// no Feed owed, no Flush asked for.
	if l.Resumes != 0 || l.Pauses != 0 || l.FeedOwed || l.FlushOwed {
		t.Fatalf("resumes %d pauses %d feed owed %v flush owed %v", l.Resumes, l.Pauses, l.FeedOwed, l.FlushOwed)
	}
}

// TestServerAsyncAnswerCostsNoFeed: a handler that answers later, from an
// event of its own (a backend's response), with no input held back, costs
// no extra Feed: only the idle timer is armed.
func TestServerAsyncAnswerCostsNoFeed(t *testing.T) {
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		return &testEvents{}
	}}
	l := newTestConn(h, ServerConfig{IdleTimeout: time.Second})
	for i := 0; i < 3; i++ {
		l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		l.must(t, "served", func() bool { return len(h.reqs) == i+1 && l.Time.Pending() == 0 })
		l.Step(func() { h.ws[i].WriteHeader(204, nil, true) })
		l.must(t, "idle timer armed", func() bool { return l.Time.Pending() == 1 })
	}
	if l.Resumes != 0 || l.Feeds != 0 || l.Closed {
		t.Fatalf("resumes %d feeds %d closed %v", l.Resumes, l.Feeds, l.Closed)
	}
	l.Advance(time.Second)
	l.must(t, "idle close", func() bool { return l.Closed })
}

// allocHandler skips testHandler's recording, which allocates.
type allocHandler struct{ h *testHandler }

func (a allocHandler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	return a.h.serve(a.h, req, w)
}

// TestServerIdleTimerRestarts checks that the idle timeout counts from the
// end of the last exchange, not from the first idle period.
func TestServerIdleTimerRestarts(t *testing.T) {
	h := &testHandler{serve: respond("x")}
	l := newTestConn(h, ServerConfig{IdleTimeout: 60 * time.Millisecond})
	for i := 0; i < 4; i++ {
		l.feed(t, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
		l.Advance(30 * time.Millisecond)
		if l.Closed {
			t.Fatalf("closed %d ms into a busy connection", 30*(i+1))
		}
	}
	l.Advance(29 * time.Millisecond)
	l.must(t, "open 59 ms after the last exchange", func() bool { return !l.Closed })
	l.Advance(time.Millisecond)
	l.must(t, "idle close 60 ms after the last exchange", func() bool { return l.Closed })
}

// TestServerBodyEndWithFullWindow: the end of a body costs no window, so a
// handler that waits for OnBodyEnd before consuming is not deadlocked by a
// body that exactly fills its window.
func TestServerBodyEndWithFullWindow(t *testing.T) {
	for _, in := range []string{
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
	} {
		ev := &testEvents{}
		h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
			return ev
		}}
		l := newTestConn(h, ServerConfig{BodyWindow: 5})
		for i := 0; i < len(in); i++ {
			l.feed(t, in[i:i+1])
		}
		l.Step(func() {
			if !ev.ended || ev.body.String() != "hello" || l.Paused {
				t.Fatalf("%q: ended %v body %q paused %v", in, ev.ended, ev.body.String(), l.Paused)
			}
		})
	}
}

// TestServerSplitInvariance feeds a pipelined mix of requests split at
// every position: the bytes written back must not depend on the split.
func TestServerSplitInvariance(t *testing.T) {
	in := "GET /a HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
		"\r\nPUT /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\nT: 1\r\n\r\n" +
		"HEAD /d HTTP/1.1\r\nHost: h\r\n\r\n" +
		"GET /e HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	run := func(pieces []string) (string, bool) {
		h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
			ev := &testEvents{consume: true, w: w}
			path := req.Path
			ev.onEnd = func() {
				w.WriteHeader(200, nil, false)
				w.Write([]byte(path + ":" + ev.body.String()))
				w.Close([]stream.Field{{Name: "x-n", Value: strconv.Itoa(len(ev.trailers))}})
			}
			if !req.HasBody {
				ev.onEnd()
				return nil
			}
			return ev
		}}
		l := newTestConn(h, ServerConfig{BodyWindow: 2})
		for _, p := range pieces {
			l.feed(t, p)
		}
		l.must(t, "close", func() bool { return l.Closed })
		return l.output(), l.Closed
	}
	want, _ := run([]string{in})
	rs := readResponses(t, want, true, "GET", "POST", "PUT", "HEAD", "GET")
	if rs[1].body != "/b:hello" || rs[2].body != "/c:abcde" || rs[2].trailers[0].Value != "1" || rs[3].body != "" || rs[4].keep {
		t.Fatalf("%+v", rs)
	}
	for _, pieces := range splitsOf(in) {
		if got, _ := run(pieces); got != want {
			t.Fatalf("split %q:\n got %q\nwant %q", pieces, got, want)
		}
	}
}

// writableEvents finishes its response from OnWritable.
type writableEvents struct {
	testEvents
	w    stream.ResponseWriter
	rest []byte
}

func (e *writableEvents) OnWritable() {
	e.writable++
	n, _ := e.w.Write(e.rest)
	if e.rest = e.rest[n:]; len(e.rest) == 0 {
		e.w.Close(nil)
	}
}

// TestServerDrainedEndsExchange: OnDrained delivers OnWritable directly; a
// handler that completes its response there, with a pipelined request
// waiting, gets that request from the Feed its Close asked for, never from
// inside OnDrained.
func TestServerDrainedEndsExchange(t *testing.T) {
	payload := bytes.Repeat([]byte("z"), 3000)
	var evs []*writableEvents
	h := &testHandler{serve: func(h *testHandler, req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: itoa(len(payload))}}, false)
		n, _ := w.Write(payload)
		ev := &writableEvents{w: w, rest: payload[n:]}
		evs = append(evs, ev)
		return ev
	}}
	l := newTestConn(h, ServerConfig{WriteHighWater: 1000})
	l.feed(t, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	for step := 0; step < 10 && !l.Closed; step++ {
		l.Step(func() {
			served := len(h.reqs)
			l.Pending = l.Pending[:0]
			l.conn.OnDrained()
			if len(h.reqs) != served {
				t.Fatal("next request started inside OnDrained")
			}
		})
	}
	l.must(t, "both served, then closed", func() bool { return len(h.reqs) == 2 && l.Closed })
	if evs[0].writable == 0 || l.Feeds == 0 {
		t.Fatalf("writable %d, owed feeds %d", evs[0].writable, l.Feeds)
	}
	rs := readResponses(t, l.output(), true, "GET", "GET")
	if rs[0].body != string(payload) || rs[1].body != string(payload) || rs[1].keep {
		t.Fatalf("bodies %d %d keep %v", len(rs[0].body), len(rs[1].body), rs[1].keep)
	}
}
