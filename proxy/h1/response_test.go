package h1

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// respResult flattens a response parse for comparison across splits.
type respResult struct {
	status   int // -1 incomplete, -2 error
	infos    string
	header   string
	hasBody  bool
	chunked  bool
	cl       int64
	body     string
	trailers string
	done     bool
	keep     bool
	rest     string
}

func parseResponsePieces(p *ResponseParser, method string, pieces []string, eof bool) respResult {
	p.Reset(method)
	r := respResult{status: -1}
	var pending []byte
	var body, infos strings.Builder
	fail := func(err error) respResult {
		var e *Error
		if !errors.As(err, &e) {
			panic(err)
		}
		return respResult{status: -2, header: e.Reason}
	}
	for _, piece := range pieces {
		pending = append(pending, piece...)
		for !r.done {
			n, ev, err := p.Feed(pending)
			pending = pending[n:]
			if err != nil {
				return fail(err)
			}
			switch ev {
			case EventInfo:
				fmt.Fprintf(&infos, "%d{%s}", p.Status(), fieldsString(p.Header()))
			case EventHead:
				r.status = p.Status()
				r.header = fieldsString(p.Header())
				r.hasBody, r.chunked, r.cl = p.HasBody(), p.br.mode == bodyChunked, p.ContentLength()
			case EventBody:
				body.Write(p.Body())
			case EventDone:
				r.done = true
				r.trailers = fieldsString(p.Trailers())
				r.keep = p.KeepAlive()
			}
			if ev == EventNone {
				break
			}
		}
	}
	if eof && !r.done {
		ev, err := p.EOF()
		if err != nil {
			return fail(err)
		}
		if ev == EventDone {
			r.done = true
			r.keep = p.KeepAlive()
		}
	}
	r.infos = infos.String()
	r.body = body.String()
	r.rest = string(pending)
	return r
}

func TestResponseParser(t *testing.T) {
	tests := []struct {
		name   string
		method string
		in     string
		eof    bool
		want   respResult
	}{
		{
			name: "content-length",
			in:   "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhelloHTTP",
			want: respResult{status: 200, header: `content-type="text/plain";content-length="5";`,
				hasBody: true, cl: 5, body: "hello", done: true, keep: true, rest: "HTTP"},
		},
		{
			name: "chunked with trailers",
			in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: grpc-status\r\n\r\n" +
				"3\r\nabc\r\n2;x\r\nde\r\n0\r\ngrpc-status: 0\r\nContent-Type: bad\r\n\r\n",
			want: respResult{status: 200, header: `trailer="grpc-status";`, hasBody: true, chunked: true,
				cl: -1, body: "abcde", trailers: `grpc-status="0";`, done: true, keep: true},
		},
		{
			name: "interim responses then final",
			in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
			want: respResult{infos: `100{}103{link="</s.css>; rel=preload";}`, status: 204, cl: -1, done: true, keep: true},
		},
		{
			name:   "head response keeps content-length, no body",
			method: "HEAD",
			in:     "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
			want:   respResult{status: 200, header: `content-length="1000";`, cl: 1000, done: true, keep: true},
		},
		{
			name: "304 has no body",
			in:   "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
			want: respResult{status: 304, header: `etag="\"x\"";`, cl: -1, done: true, keep: true},
		},
		{
			name: "close-delimited",
			in:   "HTTP/1.1 200 OK\r\n\r\nall of it",
			eof:  true,
			want: respResult{status: 200, hasBody: true, cl: -1, body: "all of it", done: true},
		},
		{
			name: "connection close and named fields removed",
			in:   "HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: a\r\nKeep-Alive: timeout=5\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n",
			want: respResult{status: 200, header: `content-length="0";`, cl: 0, done: true},
		},
		{
			name: "http/1.0 keep-alive",
			in:   "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
			want: respResult{status: 200, header: `content-length="1";`, hasBody: true, cl: 1, body: "x", done: true, keep: true},
		},
		{
			name: "http/1.0 closes by default",
			in:   "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
			want: respResult{status: 200, header: `content-length="1";`, hasBody: true, cl: 1, body: "x", done: true},
		},
		{
			name: "status line without reason",
			in:   "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n",
			want: respResult{status: 404, header: `content-length="0";`, cl: 0, done: true, keep: true},
		},
		{name: "CL+TE", in: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", want: respResult{status: -2, header: errCLTE.Reason}},
		{name: "TE gzip", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", want: respResult{status: -2, header: errBadTE.Reason}},
		{name: "TE chunked, gzip", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", want: respResult{status: -2, header: errBadTE.Reason}},
		{name: "TE in 1.0", in: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", want: respResult{status: -2, header: errTE10.Reason}},
		{name: "conflicting CL", in: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", want: respResult{status: -2, header: errMultiCL.Reason}},
		{name: "obs-fold", in: "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", want: respResult{status: -2, header: errObsFold.Reason}},
		{name: "NUL", in: "HTTP/1.1 200 OK\r\nX: a\x00\r\n\r\n", want: respResult{status: -2, header: errFieldValue.Reason}},
		{name: "space before colon", in: "HTTP/1.1 200 OK\r\nX : a\r\n\r\n", want: respResult{status: -2, header: errSpaceBeforeCol.Reason}},
		{name: "bare LF", in: "HTTP/1.1 200 OK\nX: a\n\n", want: respResult{status: -2, header: errBareLF.Reason}},
		{name: "101", in: "HTTP/1.1 101 Switching Protocols\r\n\r\n", want: respResult{status: -2, header: errSwitching.Reason}},
		{name: "bad version", in: "HTTP/2 200 OK\r\n\r\n", want: respResult{status: -2, header: errStatusLine.Reason}},
		{name: "bad status", in: "HTTP/1.1 2x0 OK\r\n\r\n", want: respResult{status: -2, header: errStatusLine.Reason}},
		{name: "status 600", in: "HTTP/1.1 600 OK\r\n\r\n", want: respResult{status: -2, header: errStatusLine.Reason}},
		{name: "bad chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", want: respResult{status: -2, header: errChunkSize.Reason}},
		{name: "truncated CL", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", eof: true, want: respResult{status: -2, header: ErrTruncated.Reason}},
		{name: "nothing at all", in: "", eof: true, want: respResult{status: -2, header: ErrNoResponse.Reason}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			var p ResponseParser
			for _, pieces := range splitsOf(tc.in) {
				if got := parseResponsePieces(&p, tc.method, pieces, tc.eof); got != want {
					t.Fatalf("split %q:\n got %+v\nwant %+v", pieces, got, want)
				}
			}
		})
	}
}

// TestResponseParserBackpressure feeds the body a few bytes at a time from
// the caller's own buffer, as a handler that may forward only so much does.
func TestResponseParserBackpressure(t *testing.T) {
	in := []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n")
	var p ResponseParser
	p.Reset("GET")
	var got []byte
	buf := in
	for budget := 3; ; {
		k := min(budget, len(buf))
		n, ev, err := p.Feed(buf[:k])
		if err != nil {
			t.Fatal(err)
		}
		buf = buf[n:]
		if ev == EventBody {
			if len(p.Body()) > budget {
				t.Fatalf("body run %d exceeds fed budget", len(p.Body()))
			}
			got = append(got, p.Body()...)
		}
		if ev == EventDone {
			break
		}
		if ev == EventNone && n == 0 && k == len(buf) && k < budget {
			t.Fatal("stuck")
		}
	}
	if string(got) != "0123456789abcdef" || len(buf) != 0 {
		t.Fatalf("body %q, left %q", got, buf)
	}
}

func TestResponseKeepAliveTimeout(t *testing.T) {
	var p ResponseParser
	p.Reset("GET")
	in := []byte("HTTP/1.1 200 OK\r\nKeep-Alive: max=10, timeout=5\r\nContent-Length: 0\r\n\r\n")
	if _, ev, err := p.Feed(in); ev != EventHead || err != nil {
		t.Fatal(ev, err)
	}
	if d := p.KeepAliveTimeout(); d != 5*time.Second {
		t.Fatalf("timeout %v", d)
	}
}

func TestSerialiser(t *testing.T) {
	fields := []stream.Field{{Name: "host", Value: "h"}, {Name: "content-length", Value: "9"}, {Name: "x", Value: "y"}}
	got := string(AppendRequestHeadFramed(nil, "GET", "/p", fields[:1], LengthNone))
	if want := "GET /p HTTP/1.1\r\nhost: h\r\n\r\n"; got != want {
		t.Fatalf("head %q", got)
	}
	got = string(AppendRequestHeadFramed(nil, "POST", "/", fields, 3))
	if want := "POST / HTTP/1.1\r\nhost: h\r\nx: y\r\ncontent-length: 3\r\n\r\n"; got != want {
		t.Fatalf("framed %q", got)
	}
	got = string(AppendRequestHeadFramed(nil, "POST", "/", fields, LengthChunked))
	if want := "POST / HTTP/1.1\r\nhost: h\r\nx: y\r\ntransfer-encoding: chunked\r\n\r\n"; got != want {
		t.Fatalf("chunked %q", got)
	}
	var body []byte
	body = AppendChunk(body, []byte("hello world, this is pollproxy"))
	body = AppendChunk(body, nil)
	body = AppendLastChunk(body, []stream.Field{{Name: "grpc-status", Value: "0"}})
	if want := "1e\r\nhello world, this is pollproxy\r\n0\r\ngrpc-status: 0\r\n\r\n"; string(body) != want {
		t.Fatalf("chunks %q", body)
	}

	// What the serialiser writes, the parser reads back identically.
	var rp RequestParser
	msg := AppendRequestHeadFramed(nil, "PUT", "/x", fields, LengthChunked)
	msg = append(msg, body...)
	r := parseRequestPieces(&rp, []string{string(msg)})
	if r.status != 0 || r.body != "hello world, this is pollproxy" || r.trailers != `grpc-status="0";` || r.header != `x="y";` {
		t.Fatalf("round trip %+v", r)
	}

	dst := make([]byte, 0, 512)
	if a := testing.AllocsPerRun(100, func() {
		dst = AppendRequestHeadFramed(dst[:0], "GET", "/", fields, 12345)
		dst = AppendChunk(dst, []byte("abc"))
		dst = AppendLastChunk(dst, nil)
	}); a != 0 {
		t.Fatalf("serialiser allocates %v", a)
	}

	for _, f := range []stream.Field{{Name: "", Value: "v"}, {Name: "a b", Value: "v"}, {Name: "a", Value: "x\r\ny"}, {Name: "a", Value: "\x00"}, {Name: "a", Value: " x"}} {
		if ValidField(f) {
			t.Errorf("ValidField(%q) = true", f)
		}
	}
	if !ValidField(stream.Field{Name: "x-a", Value: "v w"}) {
		t.Error("valid field refused")
	}
}
