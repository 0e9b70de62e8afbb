package h2

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// The cached head (encodeHead reuses the block of the last head that was
// table indices alone) must never outlive the table its indices point
// into: heads that repeat, interleaved with heads that add entries (a new
// value, a trailer), with a rejected request's answer, with SETTINGS that
// shrink the client's table to nothing and grow it back, and with
// ReleaseIdle making a new encoder, must all decode to what the handler
// wrote, through one client decoder that follows the whole connection.
func TestHeadCacheFollowsTheTable(t *testing.T) {
	same := []stream.Field{{Name: "content-type", Value: "text/html"}, {Name: "server", Value: "origin/1"}, {Name: "x-kind", Value: "same"}}
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		switch req.Path {
		case "/same":
			w.WriteHeader(200, same, true)
		case "/trailers":
			w.WriteHeader(200, same, false)
			w.Write([]byte("body"))
			w.Close([]stream.Field{{Name: "x-checksum", Value: "c1"}})
		default: // a value seen once: a new entry in the table
			w.WriteHeader(200, append(slices.Clone(same[:2]), stream.Field{Name: "x-kind", Value: req.Path}), true)
		}
		return nil
	})
	rc := newRaw(t, h, Config{})
	rc.fr.ReadMetaHeaders = nil // blocks as sent, decoded here
	dec := hpack.NewDecoder(4096, nil)
	// head reads the next header block of stream id, checks whether it
	// starts with a table size update, and decodes it.
	head := func(id uint32, sizeUpdate bool) map[string]string {
		t.Helper()
		for {
			f, ok := rc.read().(*http2.HeadersFrame)
			if !ok || f.StreamID != id {
				continue
			}
			block := f.HeaderBlockFragment()
			if (block[0]&0xe0 == 0x20) != sizeUpdate {
				t.Fatalf("stream %d: block % x, want a size update first: %v", id, block, sizeUpdate)
			}
			fields, err := dec.DecodeFull(block)
			if err != nil {
				t.Fatalf("stream %d: %v", id, err)
			}
			m := map[string]string{}
			for _, hf := range fields {
				m[hf.Name] = hf.Value
			}
			return m
		}
	}
	id := uint32(1)
	check := func(path string, sizeUpdate bool) {
		t.Helper()
		rc.headers(id, true, ":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", path)
		want := map[string]string{":status": "200", "content-type": "text/html", "server": "origin/1", "x-kind": "same"}
		if path != "/same" && path != "/trailers" {
			want["x-kind"] = path
		}
		if got := head(id, sizeUpdate); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stream %d %s: head %v, want %v", id, path, got, want)
		}
		if path == "/trailers" {
			if got := head(id, false); fmt.Sprint(got) != "map[x-checksum:c1]" {
				t.Fatalf("stream %d: trailers %v", id, got)
			}
		}
		id += 2
	}
	for _, p := range []string{"/same", "/same", "/new-1", "/same", "/same", "/trailers", "/same", "/new-2", "/same"} {
		check(p, false)
	}
	// A request pollproxy rejects itself (405: CONNECT without the
	// extended protocol) is answered by the same encoder.
	rc.headers(id, true, ":method", "CONNECT", ":authority", "a.test:443")
	if st := head(id, false)[":status"]; st != "405" {
		t.Fatalf("CONNECT answered %s, want 405", st)
	}
	id += 2
	check("/same", false)
	check("/same", false)
	// The client's table shrinks to nothing and grows back: each change
	// reaches the next block as a size update (RFC 7541 §4.2), cached
	// head or not.
	rc.fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
	check("/same", true)
	check("/same", false)
	rc.fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 4096})
	check("/same", true)
	check("/new-3", false)
	check("/same", false)
	check("/same", false)
	// An idle connection lets its encoder go; the next starts afresh.
	rc.ping()
	rc.ts.lock(func() {
		if rc.ts.sc.ReleaseIdle() == 0 || rc.ts.sc.lastHead != nil {
			t.Errorf("ReleaseIdle released nothing or kept the cached head")
		}
	})
	check("/same", true)
	check("/same", false)
}
