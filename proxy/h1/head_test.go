package h1

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/field"
)

// TestHeadFieldLines covers the field-line scanner where its two paths
// meet: a line that arrives whole is scanned in one pass, any other line
// (split across reads, or with a defect) is found first and validated
// after. Every case runs whole, split at every byte and byte by byte, on
// one reused parser, so both paths must agree on every field and every
// error, and a head with several defects must report the same one (the
// start line's first, then the first field line's, unless a limit is hit
// on the way).
func TestHeadFieldLines(t *testing.T) {
	limits := Limits{MaxHeadSize: 160, MaxLineSize: 40, MaxFields: 5, MaxTrailerSize: 40}
	long := "X-Long: " + strings.Repeat("v", 40) // a 48-byte field line
	tests := []struct {
		name string
		in   string
		want respResult
	}{
		{
			name: "names lowercased, whitespace trimmed, tabs and obs-text kept",
			in:   "HTTP/1.1 200 OK\r\nCoNtEnT-TyPe:\t text/html \t\r\nX-A:a\tb\xff\r\nX-Empty:\r\nX-Blank:  \r\nContent-Length: 0\r\n\r\n",
			want: respResult{status: 200, header: "content-type=\"text/html\";x-a=\"a\\tb\\xff\";x-empty=\"\";x-blank=\"\";content-length=\"0\";",
				cl: 0, done: true, keep: true},
		},
		{
			name: "every tchar in a name",
			in:   "HTTP/1.1 204 No Content\r\n!#$%&'*+-.^_`|~09AZaz: v\r\n\r\n",
			want: respResult{status: 204, header: "!#$%&'*+-.^_`|~09azaz=\"v\";", cl: -1, done: true, keep: true},
		},
		{
			name: "chunked trailers scanned like fields",
			in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n" +
				"Grpc-Status: 0\r\nGRPC-MESSAGE:\tok \r\n\r\n",
			want: respResult{status: 200, hasBody: true, chunked: true, cl: -1, body: "x",
				trailers: `grpc-status="0";grpc-message="ok";`, done: true, keep: true},
		},
		{name: "bare CR in a value", in: "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", want: respResult{status: -2, header: errBareCR.Reason}},
		{name: "bare CR in a name", in: "HTTP/1.1 200 OK\r\nX\rY: a\r\n\r\n", want: respResult{status: -2, header: errBareCR.Reason}},
		{name: "DEL in a value", in: "HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n", want: respResult{status: -2, header: errFieldValue.Reason}},
		{name: "no colon", in: "HTTP/1.1 200 OK\r\nA: 1\r\nNoColon\r\n\r\n", want: respResult{status: -2, header: errNoColon.Reason}},
		{name: "empty name", in: "HTTP/1.1 200 OK\r\n: v\r\n\r\n", want: respResult{status: -2, header: errFieldName.Reason}},
		{name: "non-token in a name", in: "HTTP/1.1 200 OK\r\nX(y): v\r\n\r\n", want: respResult{status: -2, header: errFieldName.Reason}},
		{name: "tab before colon", in: "HTTP/1.1 200 OK\r\nX\t: v\r\n\r\n", want: respResult{status: -2, header: errSpaceBeforeCol.Reason}},
		{name: "obs-fold after good lines", in: "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\tfold\r\n\r\n", want: respResult{status: -2, header: errObsFold.Reason}},
		{name: "bare LF after a field", in: "HTTP/1.1 200 OK\r\nA: 1\nB: 2\r\n\r\n", want: respResult{status: -2, header: errBareLF.Reason}},
		{
			name: "the first bad field line is the one reported",
			in:   "HTTP/1.1 200 OK\r\nA: 1\r\nX/y: 1\r\nZ: \x00\r\n\r\n",
			want: respResult{status: -2, header: errFieldName.Reason},
		},
		{
			name: "a bad status line outranks a bad field line",
			in:   "HTTP/1.1 2x0 OK\r\nX: \x00\r\n\r\n",
			want: respResult{status: -2, header: errStatusLine.Reason},
		},
		{
			name: "a long line outranks an earlier bad field line",
			in:   "HTTP/1.1 200 OK\r\nX: \x00\r\n" + long + "\r\n\r\n",
			want: respResult{status: -2, header: errFieldTooLong.Reason},
		},
		{name: "a long well-formed line", in: "HTTP/1.1 200 OK\r\n" + long + "\r\n\r\n", want: respResult{status: -2, header: errFieldTooLong.Reason}},
		{
			name: "a line of exactly the limit",
			in:   "HTTP/1.1 200 OK\r\n" + long[:40] + "\r\nContent-Length: 0\r\n\r\n",
			want: respResult{status: 200, header: `x-long="` + long[8:40] + `";content-length="0";`, cl: 0, done: true, keep: true},
		},
		{
			name: "too many fields outranks an earlier bad field line",
			in:   "HTTP/1.1 200 OK\r\nA: \x01\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\n\r\n",
			want: respResult{status: -2, header: errTooManyFields.Reason},
		},
		{
			name: "head size counted over well-formed lines",
			in:   "HTTP/1.1 200 OK\r\n" + strings.Repeat("A-Field: "+strings.Repeat("v", 28)+"\r\n", 5) + "\r\n",
			want: respResult{status: -2, header: errHeadTooLarge.Reason},
		},
		{
			name: "trailer defect",
			in:   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: \x00\r\n\r\n",
			want: respResult{status: -2, header: errFieldValue.Reason},
		},
		{
			name: "trailer size",
			in:   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + strings.Repeat("t", 40) + "\r\n\r\n",
			want: respResult{status: -2, header: errTrailerTooLarge.Reason},
		},
		{
			name: "interim head's fields do not leak into the final head",
			in:   "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			want: respResult{infos: `103{link="</a>";}`, status: 200, header: `content-length="0";`, cl: 0, done: true, keep: true},
		},
	}
	p := ResponseParser{Limits: limits}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, pieces := range splitsOf(tc.in) {
				if got := parseResponsePieces(&p, "GET", pieces, false); got != tc.want {
					t.Fatalf("split %q:\n got %+v\nwant %+v", pieces, got, tc.want)
				}
			}
		})
	}
}

// TestHeadFieldLinesRequest runs the request parser over heads whose
// request line and fields take both paths: empty lines before the request
// line are skipped, the request line is never scanned as a field, and a bad
// request line outranks a bad field.
func TestHeadFieldLinesRequest(t *testing.T) {
	got := parseRequestAllSplits(t, "\r\n\r\nGET /a:b HTTP/1.1\r\nHOST: h\r\nX-Y:\tz \r\n\r\n")
	if got.status != 0 || got.path != "/a:b" || got.header != `x-y="z";` || got.auth != "h" {
		t.Fatalf("got %+v", got)
	}
	if got := parseRequestAllSplits(t, "G(T / HTTP/1.1\r\nHost: h\r\nX: \x00\r\n\r\n"); got.status != errMethod.Status {
		t.Fatalf("bad method and bad field: status %d", got.status)
	}
	if got := parseRequestAllSplits(t, "GET / HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n"); got.status != errSpaceBeforeCol.Status {
		t.Fatalf("space before colon: status %d", got.status)
	}
}

// TestValueRun checks the eight-bytes-at-a-time value scan against the
// byte table: every byte value at every position of a word and its tail.
func TestValueRun(t *testing.T) {
	want := func(p []byte, i int) int {
		for i < len(p) && field.IsValueByte(p[i]) {
			i++
		}
		return i
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 19; pos++ {
			for _, fill := range []byte{'a', 0x80, 0xff, ' '} {
				p := bytes.Repeat([]byte{fill}, 19)
				p[pos] = byte(c)
				for from := 0; from < 3; from++ {
					if got, w := valueRun(p, from), want(p, from); got != w {
						t.Fatalf("byte %#x at %d in %q from %d: %d, want %d", c, pos, p, from, got, w)
					}
				}
			}
		}
	}
}

// TestLowerInPlace checks the word-at-a-time lowercasing against the byte
// table: every token byte at every position of names from one to twenty
// bytes long (the overlapping last word included), and that no byte
// outside the name changes.
func TestLowerInPlace(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for c := 0; c < 0x80; c++ {
			if !field.IsTchar(byte(c)) {
				continue
			}
			for pos := 0; pos < n; pos++ {
				buf := bytes.Repeat([]byte{'Q'}, n+10)
				name := buf[1 : 1+n]
				for i := range name {
					name[i] = "AbZz-09_Mx"[i%10]
				}
				name[pos] = byte(c)
				want := append([]byte(nil), buf...)
				for i := 1; i <= n; i++ {
					want[i] = toLower[want[i]]
				}
				lowerInPlace(name)
				if !bytes.Equal(buf, want) {
					t.Fatalf("length %d, byte %#x at %d: %q, want %q", n, c, pos, buf, want)
				}
			}
		}
	}
}
