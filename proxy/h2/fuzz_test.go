package h2_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// The fuzz targets drive h2.ServerConn through its exported API only:
// streamtest's in-memory transport that plays the loop (Flush at the end
// of every step when it was asked for), its manual clock whose timers fire
// when the test says so, and a handler that checks every request it is
// given.

// drain plays the socket taking what is queued, if anything, and the
// connection's OnDrained after it.
func drain(tr *streamtest.Transport) {
	if len(tr.Pending) > 0 {
		tr.Drain()
	}
}

// fzHandler validates every request, answers it (with a body on some),
// consumes request bodies, and counts what is open.
type fzHandler struct {
	t          *testing.T
	open       int
	maxOpen    int
	unconsumed int
	maxHeld    int
	served     int
}

type fzEvents struct {
	h    *fzHandler
	w    stream.ResponseWriter
	done bool
	hold bool // keep body bytes unconsumed
}

func (e *fzEvents) finish() {
	if !e.done {
		e.done = true
		e.h.open--
	}
}

func (e *fzEvents) OnBody(p []byte) {
	if e.hold {
		e.h.unconsumed += len(p)
		e.h.maxHeld = max(e.h.maxHeld, e.h.unconsumed)
		return
	}
	e.w.Consumed(len(p))
}
func (e *fzEvents) OnBodyEnd(trailers []stream.Field) {
	for _, f := range trailers {
		if bad := badField(f); bad != "" {
			e.h.t.Fatalf("trailer %q: %s", f.Name, bad)
		}
	}
	if !e.done {
		e.w.WriteHeader(200, nil, true)
		e.finish()
	}
}
func (e *fzEvents) OnWritable() {}
func (e *fzEvents) OnAbort(error) {
	e.finish()
}

func (h *fzHandler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	checkRequest(h.t, req)
	h.served++
	h.open++
	h.maxOpen = max(h.maxOpen, h.open)
	ev := &fzEvents{h: h, w: w, hold: strings.HasSuffix(req.Path, "hold")}
	switch {
	case !req.HasBody:
		w.WriteHeader(200, []stream.Field{{Name: "content-type", Value: "text/plain"}}, false)
		w.Write([]byte("hello from the fuzzer"))
		w.Close([]stream.Field{{Name: "x-trailer", Value: "t"}})
		ev.finish()
	case strings.HasSuffix(req.Path, "early"):
		w.WriteHeader(204, nil, true)
		ev.finish()
	}
	return ev
}

// checkRequest fails on any request a handler must never see. The checks
// are written independently of the front end's own validators.
func checkRequest(t *testing.T, req *stream.Request) {
	t.Helper()
	if !isTokenFz(req.Method) {
		t.Fatalf("method %q", req.Method)
	}
	if req.Method == "CONNECT" {
		t.Fatalf("CONNECT reached the handler")
	}
	if req.Scheme != "https" {
		t.Fatalf("scheme %q", req.Scheme)
	}
	switch {
	case req.Path == "*":
		if req.Method != "OPTIONS" {
			t.Fatalf("path * with %s", req.Method)
		}
	case strings.HasPrefix(req.Path, "/"):
		for i := 0; i < len(req.Path); i++ {
			if c := req.Path[i]; c <= 0x20 || c >= 0x7f || c == '#' {
				t.Fatalf("path %q", req.Path)
			}
		}
	default:
		t.Fatalf("path %q", req.Path)
	}
	for i := 0; i < len(req.Authority); i++ {
		if c := req.Authority[i]; c <= 0x20 || c >= 0x7f || c == '/' || c == '@' || c == '?' || c == '#' {
			t.Fatalf("authority %q", req.Authority)
		}
	}
	cls := 0
	for _, f := range req.Header {
		if bad := badField(f); bad != "" {
			t.Fatalf("field %q: %s", f.Name, bad)
		}
		switch f.Name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host":
			t.Fatalf("field %q reached the handler", f.Name)
		case "te":
			if f.Value != "trailers" {
				t.Fatalf("te %q", f.Value)
			}
		case "content-length":
			cls++
			n, err := strconv.ParseInt(f.Value, 10, 64)
			if err != nil || n != req.ContentLength || strconv.FormatInt(n, 10) != f.Value {
				t.Fatalf("content-length %q with ContentLength %d", f.Value, req.ContentLength)
			}
		}
	}
	if cls > 1 {
		t.Fatalf("%d content-length fields", cls)
	}
	if cls == 0 && req.ContentLength != -1 && !(req.ContentLength == 0 && !req.HasBody) {
		t.Fatalf("ContentLength %d without a field", req.ContentLength)
	}
	if !req.HasBody && req.ContentLength > 0 {
		t.Fatalf("no body but ContentLength %d", req.ContentLength)
	}
}

func badField(f stream.Field) string {
	if f.Name == "" || f.Name[0] == ':' {
		return "empty or pseudo name"
	}
	for i := 0; i < len(f.Name); i++ {
		c := f.Name[i]
		if c >= 'A' && c <= 'Z' || !isTokenFz(f.Name[i:i+1]) {
			return "bad name byte"
		}
	}
	v := f.Value
	if v != "" && (v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		return "surrounding whitespace"
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return "control byte in value"
		}
	}
	return ""
}

func isTokenFz(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

var fzConfig = h2.Config{MaxConcurrentStreams: 8, StreamWindow: 64 << 10, MaxHeaderListSize: 8 << 10}

// clientStart is the client preface, an empty SETTINGS and the ack of the
// server's SETTINGS.
func clientStart() []byte {
	var b bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	fr.WriteSettings()
	fr.WriteSettingsAck()
	return b.Bytes()
}

func newFz(t *testing.T) (*h2.ServerConn, *streamtest.Transport, *fzHandler) {
	tr := streamtest.NewTransport()
	h := &fzHandler{t: t}
	sc := h2.NewServerConn(tr, h, fzConfig)
	tr.Conn = sc
	tr.EndStep()
	if err := tr.Feed(clientStart()); err != nil {
		t.Fatalf("preface: %v", err)
	}
	drain(tr)
	return sc, tr, h
}

// decodeFields reads the fuzzer's field list: repeated
// [name length][value length][name][value], lengths one byte each.
func decodeFields(data []byte) (fields []hpack.HeaderField) {
	for len(data) >= 2 {
		nl, vl := int(data[0]), int(data[1])
		data = data[2:]
		if nl+vl > len(data) {
			break
		}
		fields = append(fields, hpack.HeaderField{Name: string(data[:nl]), Value: string(data[nl : nl+vl])})
		data = data[nl+vl:]
	}
	return fields
}

func encodeFields(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, byte(len(kv[i])), byte(len(kv[i+1])))
		b = append(b, kv[i]...)
		b = append(b, kv[i+1]...)
	}
	return b
}

// FuzzRequestHeaders feeds an arbitrary header field list (any names, any
// bytes, any order, pseudo-headers or not) as one HEADERS frame, then
// optionally a body and trailers. The connection must not panic, and the
// handler must never see a request with an invalid field.
func FuzzRequestHeaders(f *testing.F) {
	get := []string{":method", "GET", ":scheme", "https", ":authority", "example.com", ":path", "/"}
	f.Add(byte(1), encodeFields(get...), []byte(nil))
	f.Add(byte(0), encodeFields(append([]string{":method", "POST"}, append(get[2:], "content-length", "3")...)...), []byte("abc"))
	f.Add(byte(2), encodeFields(append([]string{":method", "POST"}, get[2:]...)...), encodeFields("x-t", "v"))
	f.Add(byte(1), encodeFields(append(get, "x-a", "v\r\nx-b: 1")...), []byte(nil))
	f.Add(byte(1), encodeFields(append(get, "Upper", "v", "te", "trailers")...), []byte(nil))
	f.Add(byte(1), encodeFields(":method", "OPTIONS", ":scheme", "https", ":path", "*", "host", "h"), []byte(nil))
	f.Add(byte(1), encodeFields(append(get, "cookie", "a=1", "cookie", "b=2", ":path", "/late")...), []byte(nil))
	f.Fuzz(func(t *testing.T, mode byte, fields []byte, tail []byte) {
		sc, tr, h := newFz(t)
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, hf := range decodeFields(fields) {
			enc.WriteField(hf)
		}
		end := mode&1 != 0
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: end, EndHeaders: true})
		if !end {
			if mode&2 != 0 {
				hb.Reset()
				for _, hf := range decodeFields(tail) {
					enc.WriteField(hf)
				}
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
			} else {
				fr.WriteData(1, true, tail)
			}
		}
		tr.Feed(b.Bytes())
		drain(tr)
		if h.served > 1 {
			t.Fatalf("one HEADERS frame served %d requests", h.served)
		}
		sc.Abort(nil)
	})
}

// FuzzFrames feeds arbitrary bytes after a valid preface and SETTINGS,
// split where the first byte says, firing timers and draining output in
// between. The connection must not panic and must stay within its limits:
// open streams, request body bytes held by the handler, queued output.
// (Heap growth under the same frames is asserted in proxy/hardening, with
// runtime.ReadMemStats, which is too slow to call per fuzz input.)
func FuzzFrames(f *testing.F) {
	for _, seed := range frameSeeds() {
		f.Add(byte(0), seed)
		f.Add(byte(7), seed)
	}
	f.Fuzz(func(t *testing.T, split byte, data []byte) {
		sc, tr, h := newFz(t)
		step := len(data)
		if split > 0 {
			step = int(split)
		}
		for i := 0; i < len(data); i += step {
			if tr.Feed(data[i:min(len(data), i+step)]) != nil {
				break
			}
			if split%3 != 0 {
				drain(tr)
			}
			if split%5 == 4 {
				tr.Fire()
			}
		}
		tr.Fire()
		drain(tr)
		if h.maxOpen > int(fzConfig.MaxConcurrentStreams) {
			t.Fatalf("%d streams open at once, limit %d", h.maxOpen, fzConfig.MaxConcurrentStreams)
		}
		if h.maxHeld > 2<<20 {
			t.Fatalf("handler held %d unconsumed body bytes, above the connection window", h.maxHeld)
		}
		// Output may pass the limit by what one Feed produces before the
		// check; the answers to one 16 KiB frame are far below 64 KiB.
		if limit := 4*256<<10 + len(data)*8 + 64<<10; tr.MaxBuffered > limit {
			t.Fatalf("%d bytes of output queued, limit %d", tr.MaxBuffered, limit)
		}
		sc.Abort(nil)
	})
}

// frameSeeds are frame sequences that reach every frame handler.
func frameSeeds() [][]byte {
	var seeds [][]byte
	add := func(w func(fr *http2.Framer, enc func(kv ...string) []byte)) {
		var b, hb bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		he := hpack.NewEncoder(&hb)
		enc := func(kv ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(kv); i += 2 {
				he.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
			}
			return append([]byte(nil), hb.Bytes()...)
		}
		w(fr, enc)
		seeds = append(seeds, b.Bytes())
	}
	get := []string{":method", "GET", ":scheme", "https", ":authority", "a.example", ":path", "/"}
	post := []string{":method", "POST", ":scheme", "https", ":authority", "a.example", ":path", "/hold"}
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
	})
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(post...), EndHeaders: true})
		fr.WriteData(1, false, bytes.Repeat([]byte("d"), 1000))
		fr.WriteWindowUpdate(1, 100)
		fr.WriteData(1, true, []byte("end"))
	})
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		b := enc(get...)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b[:3], Priority: http2.PriorityParam{Weight: 5}})
		fr.WriteContinuation(3, false, b[3:5])
		fr.WriteContinuation(3, true, b[5:])
		fr.WriteRSTStream(3, http2.ErrCodeCancel)
	})
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WritePing(false, [8]byte{1})
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
		fr.WriteWindowUpdate(0, 1<<20)
		fr.WriteWindowUpdate(5, 10)
		fr.WritePriority(7, http2.PriorityParam{StreamDep: 5, Weight: 1})
		fr.WriteGoAway(5, http2.ErrCodeNo, []byte("bye"))
	})
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(append(post, "content-length", "2")...), EndHeaders: true})
		fr.WriteData(1, false, []byte("abc"))
		fr.WriteRawFrame(0x77, 0, 0, []byte("unknown"))
		fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: enc(get...), EndHeaders: true})
	})
	add(func(fr *http2.Framer, enc func(...string) []byte) {
		for i := uint32(0); i < 12; i++ {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2*i + 1, BlockFragment: enc(post...), EndHeaders: true})
		}
		fr.WriteData(1, true, nil)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc("x-trailer", "v"), EndStream: true, EndHeaders: true})
	})
	return seeds
}
