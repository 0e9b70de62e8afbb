package h1

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// reqResult is everything a request parse produced, flattened so that runs
// over different splits of the same input can be compared.
type reqResult struct {
	status   int // 0 when the request parsed completely
	method   string
	auth     string
	path     string
	proto    string
	header   string
	cl       int64
	hasBody  bool
	keep     bool
	expect   bool
	body     string
	trailers string
	done     bool
	rest     string // bytes left after the request
}

func fieldsString(fs []stream.Field) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s=%q;", f.Name, f.Value)
	}
	return b.String()
}

// parseRequestPieces feeds pieces one after another, as a connection would,
// keeping unconsumed bytes the way a caller must.
func parseRequestPieces(p *RequestParser, pieces []string) reqResult {
	var r reqResult
	var pending []byte
	var body strings.Builder
	for _, piece := range pieces {
		pending = append(pending, piece...)
		if r.done {
			continue
		}
		for {
			n, ev, err := p.Feed(pending)
			pending = pending[n:]
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					panic(err)
				}
				r.status = e.Status
				return r
			}
			switch ev {
			case EventHead:
				q := p.Request()
				r.method, r.auth, r.path, r.proto = q.Method, q.Authority, q.Path, q.Proto
				r.header = fieldsString(q.Header)
				r.cl, r.hasBody = q.ContentLength, q.HasBody
				r.keep, r.expect = p.KeepAlive(), p.ExpectContinue()
			case EventBody:
				body.Write(p.Body())
			case EventDone:
				r.trailers = fieldsString(p.Trailers())
				r.done = true
			}
			if ev == EventNone || ev == EventDone {
				break
			}
		}
	}
	r.body = body.String()
	r.rest = string(pending)
	if !r.done && r.status == 0 {
		r.status = -1 // incomplete
	}
	return r
}

// splitsOf yields the input whole, split at every position, and byte by
// byte: every way a socket could deliver it that matters to a state
// machine.
func splitsOf(in string) [][]string {
	out := [][]string{{in}}
	for i := 1; i < len(in); i++ {
		out = append(out, []string{in[:i], in[i:]})
	}
	bytewise := make([]string, len(in))
	for i := 0; i < len(in); i++ {
		bytewise[i] = in[i : i+1]
	}
	return append(out, bytewise)
}

// parseRequestAllSplits parses in every split and fails if any differs.
func parseRequestAllSplits(t *testing.T, in string) reqResult {
	t.Helper()
	var p RequestParser
	want := parseRequestPieces(&p, []string{in})
	for _, pieces := range splitsOf(in) {
		var q RequestParser
		if got := parseRequestPieces(&q, pieces); got != want {
			t.Fatalf("split %q:\n got %+v\nwant %+v", pieces, got, want)
		}
	}
	// A reused parser must behave like a fresh one.
	p.Reset()
	if got := parseRequestPieces(&p, []string{in}); got != want {
		t.Fatalf("after Reset:\n got %+v\nwant %+v", got, want)
	}
	return want
}

func TestRequestParserValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want reqResult
	}{
		{
			name: "simple get",
			in:   "GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nUser-Agent: x\r\n\r\n",
			want: reqResult{method: "GET", auth: "example.com", path: "/a?b=c", proto: "HTTP/1.1",
				header: `user-agent="x";`, keep: true, done: true},
		},
		{
			name: "leading empty lines ignored, names lowercased, OWS trimmed",
			in:   "\r\n\r\nPOST / HTTP/1.1\r\nHOST: h\r\nX-Thing: \t v a l \t\r\nContent-Length: 3\r\n\r\nabc",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `x-thing="v a l";content-length="3";`, cl: 3, hasBody: true, keep: true,
				body: "abc", done: true},
		},
		{
			name: "chunked with extensions and trailers",
			in: "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"5;ext=1\r\nhello\r\nA ; a=\"b\"\r\n0123456789\r\n0\r\nX-Sum: 9\r\nContent-Length: 1\r\n\r\n",
			want: reqResult{method: "POST", auth: "h", path: "/up", proto: "HTTP/1.1",
				cl: -1, hasBody: true, keep: true, body: "hello0123456789",
				trailers: `x-sum="9";`, done: true},
		},
		{
			name: "transfer-encoding is case-insensitive with OWS",
			in:   "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\tChunked \r\n\r\n0\r\n\r\n",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				cl: -1, hasBody: true, keep: true, done: true},
		},
		{
			name: "hop-by-hop fields removed, connection close",
			in: "GET / HTTP/1.1\r\nHost: h\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n" +
				"Proxy-Connection: x\r\nTE: trailers\r\nUpgrade: websocket\r\nX-Keep: 2\r\n\r\n",
			want: reqResult{method: "GET", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `x-keep="2";`, done: true},
		},
		{
			name: "connection cannot strip content-length",
			in:   "POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length\r\nContent-Length: 1\r\n\r\nx",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `content-length="1";`, cl: 1, hasBody: true, keep: true, body: "x", done: true},
		},
		{
			name: "identical content-lengths collapse and canonicalise",
			in:   "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 002, 2\r\nContent-Length: 2\r\n\r\nxy",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `content-length="2";`, cl: 2, hasBody: true, keep: true, body: "xy", done: true},
		},
		{
			name: "content-length zero has no body",
			in:   "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\nGET",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `content-length="0";`, keep: true, done: true, rest: "GET"},
		},
		{
			name: "http/1.0 without host closes by default",
			in:   "GET / HTTP/1.0\r\n\r\n",
			want: reqResult{method: "GET", path: "/", proto: "HTTP/1.0", done: true},
		},
		{
			name: "http/1.0 keep-alive",
			in:   "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: h\r\n\r\n",
			want: reqResult{method: "GET", auth: "h", path: "/", proto: "HTTP/1.0", keep: true, done: true},
		},
		{
			name: "absolute form overrides host",
			in:   "GET http://Example.com:8080/x?y HTTP/1.1\r\nHost: other\r\n\r\n",
			want: reqResult{method: "GET", auth: "Example.com:8080", path: "/x?y", proto: "HTTP/1.1", keep: true, done: true},
		},
		{
			name: "absolute form without path",
			in:   "GET https://h?q HTTP/1.1\r\nHost: h\r\n\r\n",
			want: reqResult{method: "GET", auth: "h", path: "/?q", proto: "HTTP/1.1", keep: true, done: true},
		},
		{
			name: "options asterisk",
			in:   "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
			want: reqResult{method: "OPTIONS", auth: "h", path: "*", proto: "HTTP/1.1", keep: true, done: true},
		},
		{
			name: "options absolute without path becomes asterisk",
			in:   "OPTIONS http://h:1 HTTP/1.1\r\nHost: h\r\n\r\n",
			want: reqResult{method: "OPTIONS", auth: "h:1", path: "*", proto: "HTTP/1.1", keep: true, done: true},
		},
		{
			name: "expect 100-continue is answered hop by hop",
			in:   "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nz",
			want: reqResult{method: "PUT", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `content-length="1";`, cl: 1, hasBody: true, keep: true, expect: true, body: "z", done: true},
		},
		{
			name: "pipelined request stays unconsumed",
			in:   "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
			want: reqResult{method: "GET", auth: "h", path: "/1", proto: "HTTP/1.1", keep: true, done: true,
				rest: "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"},
		},
		{
			name: "obs-text and empty value allowed",
			in:   "GET / HTTP/1.1\r\nHost: h\r\nX-A: caf\xc3\xa9\r\nX-B:\r\n\r\n",
			want: reqResult{method: "GET", auth: "h", path: "/", proto: "HTTP/1.1",
				header: `x-a="café";x-b="";`, keep: true, done: true},
		},
		{
			name: "chunk size with leading zeros",
			in:   "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000000003\r\nabc\r\n0\r\n\r\n",
			want: reqResult{method: "POST", auth: "h", path: "/", proto: "HTTP/1.1",
				cl: -1, hasBody: true, keep: true, body: "abc", done: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRequestAllSplits(t, tc.in)
			if got != tc.want {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRequestSmuggling is the corpus of framing tricks: each must be
// refused with the right status, or parse in the one safe way.
func TestRequestSmuggling(t *testing.T) {
	const h = "POST / HTTP/1.1\r\nHost: h\r\n"
	tests := []struct {
		name   string
		in     string
		status int
	}{
		{"CL+TE", h + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"TE+CL", h + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", 400},
		{"TE chunked, identity", h + "Transfer-Encoding: chunked, identity\r\n\r\n", 400},
		{"TE identity, chunked", h + "Transfer-Encoding: identity, chunked\r\n\r\n", 501},
		{"TE gzip, chunked", h + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"TE gzip only", h + "Transfer-Encoding: gzip\r\n\r\n", 400},
		{"TE xchunked", h + "Transfer-Encoding: xchunked\r\n\r\n", 400},
		{"TE chunkedx", h + "Transfer-Encoding: chunkedx\r\n\r\n", 400},
		{"TE chunked twice", h + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"TE chunked, empty", h + "Transfer-Encoding: chunked,\r\n\r\n", 400},
		{"TE empty", h + "Transfer-Encoding:\r\n\r\n", 400},
		{"TE space before colon", h + "Transfer-Encoding : chunked\r\n\r\n", 400},
		{"TE tab before colon", h + "Transfer-Encoding\t: chunked\r\n\r\n", 400},
		{"TE leading space name", h + " Transfer-Encoding: chunked\r\n\r\n", 400},
		{"TE vertical tab", h + "Transfer-Encoding: \x0bchunked\r\n\r\n", 400},
		{"TE form feed", h + "Transfer-Encoding: chunked\x0c\r\n\r\n", 400},
		{"TE obs-fold", h + "Transfer-Encoding:\r\n chunked\r\n\r\n", 400},
		{"TE underscore", h + "Transfer_Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", 400},
		{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"CL differing duplicates", h + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
		{"CL differing list", h + "Content-Length: 3, 4\r\n\r\nabcd", 400},
		{"CL plus sign", h + "Content-Length: +3\r\n\r\nabc", 400},
		{"CL minus", h + "Content-Length: -1\r\n\r\n", 400},
		{"CL inner space", h + "Content-Length: 1 2\r\n\r\n", 400},
		{"CL hex", h + "Content-Length: 0x10\r\n\r\n", 400},
		{"CL empty", h + "Content-Length:\r\n\r\n", 400},
		{"CL overflow", h + "Content-Length: 99999999999999999999\r\n\r\n", 400},
		{"CL space before colon", h + "Content-Length : 3\r\n\r\nabc", 400},
		{"CL underscore", h + "Content_Length: 3\r\n\r\nabc", 400},
		{"obs-fold", h + "X-A: a\r\n b\r\n\r\n", 400},
		{"obs-fold tab", h + "X-A: a\r\n\tb\r\n\r\n", 400},
		{"bare LF in fields", "GET / HTTP/1.1\nHost: h\n\n", 400},
		{"bare LF end of head", "GET / HTTP/1.1\r\nHost: h\r\n\n", 400},
		{"bare CR in value", h + "X-A: a\rb\r\n\r\n", 400},
		{"bare CR in name", h + "X\rA: a\r\n\r\n", 400},
		{"NUL in value", h + "X-A: a\x00b\r\n\r\n", 400},
		{"DEL in value", h + "X-A: a\x7fb\r\n\r\n", 400},
		{"no colon", h + "X-A a\r\n\r\n", 400},
		{"empty name", h + ": a\r\n\r\n", 400},
		{"bad name char", h + "X(A): a\r\n\r\n", 400},
		{"chunk size 0x10", h + "Transfer-Encoding: chunked\r\n\r\n0x10\r\n0123456789abcdef\r\n0\r\n\r\n", 400},
		{"chunk size -1", h + "Transfer-Encoding: chunked\r\n\r\n-1\r\n\r\n", 400},
		{"chunk size empty", h + "Transfer-Encoding: chunked\r\n\r\n\r\n", 400},
		{"chunk size overflow", h + "Transfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", 400},
		{"chunk size huge", h + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400},
		{"chunk size too long", h + "Transfer-Encoding: chunked\r\n\r\n" + strings.Repeat("0", 5000) + "1\r\nx\r\n0\r\n\r\n", 400},
		{"chunk ext too long", h + "Transfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("a", 5000) + "\r\nx\r\n0\r\n\r\n", 400},
		{"chunk ext bare LF", h + "Transfer-Encoding: chunked\r\n\r\n1;a\nx\r\n0\r\n\r\n", 400},
		{"chunk ext bare CR", h + "Transfer-Encoding: chunked\r\n\r\n1;a\rb\r\nx\r\n0\r\n\r\n", 400},
		{"chunk size space then data", h + "Transfer-Encoding: chunked\r\n\r\n1 \r\nx\r\n0\r\n\r\n", 400},
		{"chunk size bare LF", h + "Transfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n", 400},
		{"chunk data missing CRLF", h + "Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", 400},
		{"chunk data LF only", h + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n", 400},
		{"last chunk missing final CRLF then garbage", h + "Transfer-Encoding: chunked\r\n\r\n0\r\nX\r\n", -1},
		{"trailer obs-fold", h + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n", 400},
		{"trailer too large", h + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: " + strings.Repeat("a", 20000) + "\r\n\r\n", 431},
		{"missing host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"empty host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"multiple host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"host with userinfo", "GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400},
		{"host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"absolute form userinfo", "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"absolute form other scheme", "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"CONNECT", "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 501},
		{"asterisk with GET", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"target with fragment", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"target with non-ascii", "GET /\xff HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"double space", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"trailing space", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
		{"tab separator", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"lowercase version", "GET / http/1.1\r\nHost: h\r\n\r\n", 400},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
		{"HTTP/0.9", "GET /\r\n\r\n", 400},
		{"bad method", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
		{"expect other", h + "Expect: something\r\nContent-Length: 1\r\n\r\nx", 417},
		{"request line too long", "GET /" + strings.Repeat("a", 17000) + " HTTP/1.1\r\nHost: h\r\n\r\n", 414},
		{"field too long", "GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", 17000) + "\r\n\r\n", 431},
		{"head too large", "GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("X: "+strings.Repeat("a", 1000)+"\r\n", 70) + "\r\n", 431},
		{"too many fields", "GET / HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("X: a\r\n", 100) + "\r\n", 431},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if len(in) > 2000 {
				// Long inputs: whole and byte by byte only, to keep the run short.
				var p, q RequestParser
				got := parseRequestPieces(&p, []string{in})
				if b := parseRequestPieces(&q, splitsOf(in)[len(in)]); b != got {
					t.Fatalf("bytewise %+v != whole %+v", b, got)
				}
				if got.status != tc.status {
					t.Fatalf("status %d, want %d (%+v)", got.status, tc.status, got)
				}
				return
			}
			got := parseRequestAllSplits(t, in)
			if got.status != tc.status {
				t.Fatalf("status %d, want %d (%+v)", got.status, tc.status, got)
			}
		})
	}
}

func TestRequestParserLimits(t *testing.T) {
	p := RequestParser{Limits: Limits{MaxHeadSize: 64, MaxFields: 2}}
	in := "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n"
	if got := parseRequestPieces(&p, []string{in}); got.status != 431 {
		t.Fatalf("3 fields with MaxFields 2: status %d", got.status)
	}
	// The head limit holds even when the peer never sends a LF.
	p = RequestParser{Limits: Limits{MaxHeadSize: 64}}
	if got := parseRequestPieces(&p, []string{"GET / HTTP/1.1\r\nHost: h\r\nX: " + strings.Repeat("a", 100)}); got.status != 431 {
		t.Fatalf("unterminated big head: status %d", got.status)
	}
	p = RequestParser{}
	if got := parseRequestPieces(&p, []string{"GET /" + strings.Repeat("a", 20000)}); got.status != 414 {
		t.Fatalf("unterminated long request line: status %d", got.status)
	}
}

func TestRequestParserEOF(t *testing.T) {
	var p RequestParser
	if err := p.EOF(); err != nil {
		t.Fatalf("fresh parser EOF: %v", err)
	}
	p.Feed([]byte("\r\n"))
	if err := p.EOF(); err != nil || p.Started() {
		t.Fatalf("EOF after empty line: %v, started %v", err, p.Started())
	}
	p.Feed([]byte("GET / HT"))
	if err := p.EOF(); err != ErrTruncated || !p.Started() {
		t.Fatalf("EOF mid head: %v", err)
	}
}

// TestRequestParserAllocs checks the steady state: one allocation per
// request (the head's string), nothing for the body.
func TestRequestParserAllocs(t *testing.T) {
	in := []byte("POST /x HTTP/1.1\r\nHost: h\r\nA: b\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	var p RequestParser
	run := func() {
		p.Reset()
		b := in
		for {
			n, ev, err := p.Feed(b)
			if err != nil {
				t.Fatal(err)
			}
			b = b[n:]
			if ev == EventDone {
				return
			}
		}
	}
	run()
	if a := testing.AllocsPerRun(100, run); a > 1 {
		t.Fatalf("%v allocs per request, want <= 1", a)
	}
}
