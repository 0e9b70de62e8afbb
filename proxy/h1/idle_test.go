package h1

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestServerReleaseIdle: between requests ReleaseIdle lets go of the
// parser's buffers and the last request (its head's string and fields),
// and the next request on the connection, with other fields, is read
// whole and right. While a head is half read nothing is released.
func TestServerReleaseIdle(t *testing.T) {
	h := &testHandler{serve: respond("hello")}
	l := newTestConn(h, ServerConfig{})
	if err := l.feed(t, "GET /first HTTP/1.1\r\nHost: example.com\r\nCookie: a=1\r\nX-Note: a value\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var released int
	l.Step(func() {
		released = l.conn.ReleaseIdle()
		if l.conn.p.req.Header != nil || l.conn.p.req.Path != "" || l.conn.p.hr.spans != nil || l.conn.p.hr.buf != nil {
			t.Errorf("after ReleaseIdle the parser still holds the last request: %+v, %d spans", l.conn.p.req, len(l.conn.p.hr.spans))
		}
	})
	if released <= 0 {
		t.Fatalf("ReleaseIdle released %d bytes", released)
	}

	// Half a head: the parser is busy and keeps what it has.
	if err := l.feed(t, "GET /second HTTP/1.1\r\nHost: example.org\r\n"); err != nil {
		t.Fatal(err)
	}
	l.Step(func() {
		if n := l.conn.ReleaseIdle(); n != 0 {
			t.Errorf("ReleaseIdle released %d bytes in the middle of a head", n)
		}
	})
	if err := l.feed(t, "Accept: text/plain\r\n\r\n"); err != nil {
		t.Fatal(err)
	}

	rs := readResponses(t, l.output(), false, "GET", "GET")
	for i, r := range rs {
		if r.status != 200 || r.body != "hello" || !r.keep {
			t.Fatalf("response %d: %+v", i, r)
		}
	}
	if len(h.reqs) != 2 {
		t.Fatalf("%d requests served, want 2", len(h.reqs))
	}
	first, second := h.reqs[0], h.reqs[1]
	if first.Path != "/first" || !hasHeader(first.Header, "cookie", "a=1") || !hasHeader(first.Header, "x-note", "a value") {
		t.Fatalf("first request %+v", first)
	}
	if second.Path != "/second" || second.Authority != "example.org" || len(second.Header) != 1 || !hasHeader(second.Header, "accept", "text/plain") {
		t.Fatalf("second request %+v, want /second on example.org with one field", second)
	}
}

func hasHeader(fs []stream.Field, name, value string) bool {
	for _, f := range fs {
		if f.Name == name && f.Value == value {
			return true
		}
	}
	return false
}
