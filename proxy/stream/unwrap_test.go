package stream_test

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// front is a front end's writer: the end of every chain, with the
// optional methods a front end has.
type front struct {
	refused bool
	routed  []int
}

func (*front) WriteHeader(int, []stream.Field, bool) error { return nil }
func (*front) Write(p []byte) (int, error)                 { return len(p), nil }
func (*front) Close([]stream.Field) error                  { return nil }
func (*front) Reset(uint32)                                {}
func (*front) Consumed(int)                                {}
func (f *front) RefuseBody()                               { f.refused = true }
func (f *front) RouteError(status int, _ string, _ []stream.Field) bool {
	f.routed = append(f.routed, status)
	return true
}

// pass is a wrapper that changes nothing optional: it only unwraps.
type pass struct {
	stream.ResponseWriter
	gone bool // released: it unwraps to nothing
}

func (p *pass) Unwrap() stream.ResponseWriter {
	if p.gone {
		return nil
	}
	return p.ResponseWriter
}

// holder holds bytes back: it changes Flush, and passes it on.
type holder struct {
	pass
	flushed int
}

func (h *holder) Flush() {
	h.flushed++
	stream.Flush(h.Unwrap())
}

// refusing answers errors itself: it changes RouteError.
type refusing struct{ pass }

func (*refusing) RouteError(int, string, []stream.Field) bool { return false }

// TestUnwrapChain: the helpers reach the first writer in the chain that
// has the optional method, through wrappers that have none, and stop
// where a wrapper changes it or unwraps to nothing.
func TestUnwrapChain(t *testing.T) {
	f := &front{}
	inner := &holder{pass: pass{ResponseWriter: f}}
	outer := &holder{pass: pass{ResponseWriter: &pass{ResponseWriter: inner}}}
	var w stream.ResponseWriter = &pass{ResponseWriter: outer}

	if !stream.RouteError(w, 502, "down") || len(f.routed) != 1 || f.routed[0] != 502 {
		t.Errorf("RouteError through three wrappers: front end saw %v", f.routed)
	}
	stream.RefuseBody(w)
	if !f.refused {
		t.Error("RefuseBody did not reach the front end")
	}
	stream.Flush(w)
	if outer.flushed != 1 || inner.flushed != 1 {
		t.Errorf("Flush: outer %d, inner %d times, want 1 and 1", outer.flushed, inner.flushed)
	}
	if h, ok := stream.Find[*holder](w); !ok || h != outer {
		t.Error("Find did not return the first holder in the chain")
	}

	if stream.RouteError(&refusing{pass{ResponseWriter: f}}, 504, "slow") || len(f.routed) != 1 {
		t.Errorf("a wrapper that refuses errors was walked past: front end saw %v", f.routed)
	}
	if stream.RouteError(&pass{ResponseWriter: f, gone: true}, 504, "slow") {
		t.Error("RouteError went past a wrapper that unwraps to nothing")
	}
	if stream.Replaced(w) {
		t.Error("Replaced with no Replacer in the chain")
	}
	if stream.Unwrap(f) != nil {
		t.Error("a front end's writer unwraps to something")
	}
}
