package encode

import (
	"reflect"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestChoose: the client's q-values first, then the directive's order,
// as Caddy's AcceptedEncodings.
func TestChoose(t *testing.T) {
	zg := &Config{Formats: []Format{{Name: Zstd}, {Name: Gzip}}}
	gz := &Config{Formats: []Format{{Name: Gzip}, {Name: Zstd}}}
	for _, tc := range []struct {
		cfg    *Config
		fields []stream.Field
		want   string
	}{
		{zg, nil, ""},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "gzip, deflate, br, zstd"}}, Zstd},
		{gz, []stream.Field{{Name: "accept-encoding", Value: "gzip, deflate, br, zstd"}}, Gzip},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "zstd;q=0.5, gzip;q=0.8"}}, Gzip},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "zstd;q=0.8, gzip;q=0.8"}}, Zstd},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "zstd;q=0, gzip;q=0.1"}}, Gzip},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "zstd;q=0, gzip;q=0"}}, ""},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "GZIP"}}, Gzip},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "gzip;q=2"}}, Gzip}, // out of range: 1, as in Caddy
		{zg, []stream.Field{{Name: "accept-encoding", Value: "*"}}, ""},          // Caddy offers nothing for *
		{zg, []stream.Field{{Name: "accept-encoding", Value: "identity"}}, ""},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "gzip;q=0.2"}, {Name: "accept-encoding", Value: "zstd;q=0.3"}}, Zstd},
		{zg, []stream.Field{{Name: "accept-encoding", Value: "gzip"}, {Name: "sec-websocket-key", Value: "x"}}, ""},
	} {
		w := Wrap(tc.cfg, nil, &stream.Request{Header: tc.fields}, nil)
		if got := w.Encoding(); got != tc.want {
			t.Errorf("%v under %v: %q, want %q", tc.fields, tc.cfg.Formats, got, tc.want)
		}
	}
}

// TestETags: a strong ETag is marked with the encoding, and the mark
// comes off If-None-Match again; weak ones stay as they are.
func TestETags(t *testing.T) {
	for etag, want := range map[string]string{`"abc"`: `"abc-gzip"`, `W/"abc"`: `W/"abc"`, ``: ``} {
		if got := markETag(etag, Gzip); got != want {
			t.Errorf("markETag(%s) = %s, want %s", etag, got, want)
		}
	}
	in := []stream.Field{{Name: "accept", Value: "*/*"}, {Name: "if-none-match", Value: `"a-gzip", "b"`}, {Name: "x", Value: "1"}, {Name: "if-none-match", Value: `"c-gzip"`}}
	want := []stream.Field{{Name: "accept", Value: "*/*"}, {Name: "if-none-match", Value: `"a", "b", "c"`}, {Name: "x", Value: "1"}}
	if got := StripETags(in, Gzip); !reflect.DeepEqual(got, want) {
		t.Errorf("StripETags = %v, want %v", got, want)
	}
	if in[1].Value != `"a-gzip", "b"` {
		t.Error("StripETags changed the request's own fields")
	}
	plain := []stream.Field{{Name: "if-none-match", Value: `"a-zstd"`}}
	if got := StripETags(plain, Gzip); &got[0] != &plain[0] {
		t.Error("StripETags copied fields with nothing to strip")
	}
}
