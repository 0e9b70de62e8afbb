package route

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

type routerTestSite string

func (routerTestSite) Serve(*stream.Request, stream.ResponseWriter) stream.Events { return nil }

type routerTestWriter struct {
	status int
	body   []byte
	closed bool
}

func (w *routerTestWriter) WriteHeader(status int, _ []stream.Field, end bool) error {
	w.status, w.closed = status, end
	return nil
}
func (w *routerTestWriter) Write(p []byte) (int, error) {
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *routerTestWriter) Close([]stream.Field) error { w.closed = true; return nil }
func (w *routerTestWriter) Reset(uint32)               {}
func (w *routerTestWriter) Consumed(int)               {}

func TestRouter(t *testing.T) {
	r := NewRouter()
	r.Handle("example.com", routerTestSite("exact"))
	r.Handle("*.example.com", routerTestSite("wild"))
	r.Handle("API.example.com.", routerTestSite("api"))
	r.Handle("::1", routerTestSite("v6"))
	for authority, want := range map[string]string{
		"example.com": "exact", "example.com:8443": "exact", "EXAMPLE.com": "exact", "example.com.": "exact",
		"www.example.com": "wild", "www.example.com:443": "wild", "api.example.com": "api",
		"a.b.example.com": "", "example.org": "", "[::1]:8443": "v6", "": "",
	} {
		got, _ := r.Route(authority).(routerTestSite)
		if string(got) != want {
			t.Errorf("Route(%q) = %q, want %q", authority, got, want)
		}
	}
	r.Handle("", routerTestSite("default"))
	if got := r.Route("example.org"); got != routerTestSite("default") {
		t.Errorf("default: %v", got)
	}
}

func TestRouterMisdirected(t *testing.T) {
	r := NewRouter()
	w := &routerTestWriter{}
	if ev := r.Serve(&stream.Request{Method: "GET", Authority: "nobody.example"}, w); ev != nil {
		t.Errorf("events for a finished response")
	}
	if w.status != 421 || !w.closed || string(w.body) != string(misdirectedBody) {
		t.Errorf("got %d %q closed=%v", w.status, w.body, w.closed)
	}
	w = &routerTestWriter{}
	ev := r.Serve(&stream.Request{Method: "POST", Authority: "nobody.example", HasBody: true, ContentLength: 3}, w)
	if w.status != 0 || ev == nil {
		t.Fatalf("answered before the body")
	}
	ev.OnBody([]byte("abc"))
	ev.OnBodyEnd(nil)
	if w.status != 421 || !w.closed {
		t.Errorf("after body: %d closed=%v", w.status, w.closed)
	}
}
