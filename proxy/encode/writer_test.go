package encode

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/pollproxy/pollproxy/proxy/encode/encodetest"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// page is the page encode is measured at.
var page = encodetest.Page()

// frontEnd stands in for a front end's ResponseWriter: it takes at most
// room bytes per Write (all when room is 0) and keeps what it took.
type frontEnd struct {
	status int
	head   []stream.Field
	body   bytes.Buffer
	room   int
	closed bool
}

func (f *frontEnd) WriteHeader(status int, fields []stream.Field, end bool) error {
	f.status, f.head = status, append([]stream.Field(nil), fields...)
	f.closed = end
	return nil
}

func (f *frontEnd) Write(p []byte) (int, error) {
	if f.room > 0 && len(p) > f.room {
		p = p[:f.room]
	}
	f.body.Write(p)
	return len(p), nil
}

func (f *frontEnd) Close([]stream.Field) error { f.closed = true; return nil }
func (f *frontEnd) Reset(uint32)               {}
func (f *frontEnd) Consumed(int)               {}

var htmlHead = []stream.Field{{Name: "content-type", Value: "text/html; charset=utf-8"}, {Name: "content-length", Value: fmt.Sprint(len(page))}}

var configs = map[string]*Config{
	Gzip: {Formats: []Format{{Name: Gzip}}, MinLength: DefaultMinLength, Match: anyResponse{}},
	Zstd: {Formats: []Format{{Name: Zstd}}, MinLength: DefaultMinLength, Match: anyResponse{}},
}

type anyResponse struct{}

func (anyResponse) Matches(int, []stream.Field) bool { return true }

// serve sends body through a Writer for a request accepting encoding,
// as a handler would: writes until refused, then waits for OnWritable,
// which the front end here gives at once.
func serve(pool *Pool, encoding string, fe *frontEnd, body []byte) *Writer {
	req := &stream.Request{Header: []stream.Field{{Name: "accept-encoding", Value: encoding}}}
	w := Wrap(configs[encoding], pool, req, fe)
	w.WriteHeader(200, htmlHead, false)
	for len(body) > 0 {
		n, _ := w.Write(body)
		body = body[n:]
		if n == 0 {
			w.OnWritable()
		}
	}
	w.Close(nil)
	for !fe.closed {
		w.OnWritable()
	}
	return w
}

func decode(t testing.TB, encoding string, p []byte) []byte {
	var r io.Reader
	var err error
	if encoding == Gzip {
		r, err = gzip.NewReader(bytes.NewReader(p))
	} else {
		r, err = zstd.NewReader(bytes.NewReader(p))
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriterBackpressure: through a front end that takes a few bytes
// per Write, a large body is encoded whole, and what waits in the
// Writer stays within a slice's output and the encoder's block.
func TestWriterBackpressure(t *testing.T) {
	big := bytes.Repeat(page, 40)
	for _, enc := range []string{Gzip, Zstd} {
		var pool Pool
		for _, room := range []int{0, 1000} {
			fe := &frontEnd{room: room}
			w := serve(&pool, enc, fe, big)
			if got := decode(t, enc, fe.body.Bytes()); !bytes.Equal(got, big) {
				t.Errorf("%s room %d: decoded %d bytes, want %d", enc, room, len(got), len(big))
			}
			if w.state != wsDone || w.enc != nil {
				t.Errorf("%s: writer not finished (state %d)", enc, w.state)
			}
		}
		if len(pool.free) != 1 || len(pool.bufs) != 1 {
			t.Errorf("%s: the pool keeps %d encoders and %d buffers, want one of each reused", enc, len(pool.free), len(pool.bufs))
		}
		for _, b := range pool.bufs {
			if cap(b) > 160<<10 {
				t.Errorf("%s: an output buffer grew to %d KiB", enc, cap(b)>>10)
			}
		}
	}
}

// TestWriterSmallPieces: a body of unknown length that comes in pieces
// below minimum_length (an origin's chunks, one write each) is decided
// by what came before the origin went quiet, as Caddy decides by what
// one read brought: encoded once the pieces pass it, sent as it is when
// the origin goes quiet or the body ends first.
func TestWriterSmallPieces(t *testing.T) {
	chunked := []stream.Field{{Name: "content-type", Value: "text/plain"}}
	piece := bytes.Repeat([]byte("x"), 300)
	for _, tc := range []struct {
		name     string
		steps    string // w: write a piece, f: flush (the origin is quiet)
		encoding string
	}{
		{"pieces pass it", "www", Gzip},
		{"quiet first", "wfww", ""},
		{"ends first", "w", ""},
	} {
		var pool Pool
		fe := &frontEnd{}
		req := &stream.Request{Header: []stream.Field{{Name: "accept-encoding", Value: Gzip}}}
		w := Wrap(configs[Gzip], &pool, req, fe)
		w.WriteHeader(200, chunked, false)
		var sent []byte
		for _, s := range tc.steps {
			if s == 'f' {
				w.Flush()
				continue
			}
			if n, err := w.Write(piece); n != len(piece) || err != nil {
				t.Fatalf("%s: Write %d, %v", tc.name, n, err)
			}
			sent = append(sent, piece...)
		}
		w.Close(nil)
		var ce string
		for _, f := range fe.head {
			if f.Name == "content-encoding" {
				ce = f.Value
			}
		}
		if fe.status != 200 || ce != tc.encoding || !fe.closed {
			t.Errorf("%s: status %d, content-encoding %q, closed %v; want %q", tc.name, fe.status, ce, fe.closed, tc.encoding)
		}
		got := fe.body.Bytes()
		if ce != "" {
			got = decode(t, ce, got)
		}
		if !bytes.Equal(got, sent) {
			t.Errorf("%s: body of %d bytes, want %d", tc.name, len(got), len(sent))
		}
	}
}
