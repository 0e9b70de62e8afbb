package site

import (
	"errors"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// entries is an Observer that keeps a copy of every request it is told
// of, as an access log takes what it writes.
type entries []observe.RequestLog

func (e *entries) Observe(r *observe.RequestLog) { *e = append(*e, *r) }

// one returns the only entry, or fails.
func (e entries) one(t *testing.T) observe.RequestLog {
	t.Helper()
	if len(e) != 1 {
		t.Fatalf("%d log entries, want 1", len(e))
	}
	return e[0]
}

// TestAnswerLogAnswers: every answer the routes make themselves is one
// entry, with the loop that made it, its status and the body bytes the
// client got; the original path, not the rewritten one.
func TestAnswerLogAnswers(t *testing.T) {
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		a := basicAuthNode(t)
		for _, tc := range []struct {
			name   string
			routes []Node
			status int
			bytes  int64
		}{
			{"respond", []Node{{Do: &Rewrite{To: mustTemplate(t, "/elsewhere")}}, respond(201, "made")}, 201, 4},
			{"redir", []Node{{Do: &Redirect{Status: 308, Static: Redirector(308, "/new", false)}}}, 308, 0},
			{"no route", nil, 200, 0},
			{"basic_auth", []Node{a, {Do: &Proxy{}}}, 401, 0},
			{"abort", []Node{{Do: &Abort{}}}, 0, 0},
			{"error", []Node{{Do: &Error{Status: 418, Static: ErrorResponse(418)}}}, 418, 0},
		} {
			var log entries
			h := NewHandler(&Table{Nodes: tc.routes}, []stream.Handler{&origin{}}, nil, l)
			h.Observe(&log, false)
			req := get("/asked")
			if ev := h.Serve(req, &client{}); ev != nil {
				t.Errorf("%s: the answer did not end in Serve", tc.name)
			}
			e := log.one(t)
			if e.Status != tc.status || e.BytesOut != tc.bytes || e.Path != "/asked" || e.Method != "GET" {
				t.Errorf("%s: status %d, %d bytes, %s %s; want %d, %d bytes, GET /asked",
					tc.name, e.Status, e.BytesOut, e.Method, e.Path, tc.status, tc.bytes)
			}
			if e.Loop != l.ID() || e.Poller != l.Backend() || !e.Start.Equal(l.Now()) || e.Duration != 0 {
				t.Errorf("%s: loop %d %s start %v (+%v), want loop %d %s at %v", tc.name,
					e.Loop, e.Poller, e.Start, e.Duration, l.ID(), l.Backend(), l.Now())
			}
			if e.Header != nil || e.RespHeader != nil {
				t.Errorf("%s: fields logged without headers", tc.name)
			}
		}
	})
}

// basicAuthNode is a basic_auth route for alice whose password nobody in
// these tests sends.
func basicAuthNode(t *testing.T) Node {
	t.Helper()
	tab, _ := basicAuthTable(t)
	return tab.Nodes[0]
}

// TestAnswerLogProxied: a request the routes hand to a reverse proxy is
// that proxy's to report, never the routes'.
func TestAnswerLogProxied(t *testing.T) {
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		var log entries
		app := &origin{}
		h := NewHandler(&Table{Nodes: []Node{{Do: &EditResponse{Ops: nil}}, {Do: &Proxy{}}}}, []stream.Handler{app}, nil, l)
		h.Observe(&log, true)
		h.Serve(get("/"), &client{})
		app.last(t).respond(t, 200, "from the app")
		if len(log) != 0 {
			t.Errorf("the routes logged a proxied request: %+v", log)
		}
	})
}

// TestAnswerLogHeaders: with headers, the entry has the request's fields
// and the response's as they went out.
func TestAnswerLogHeaders(t *testing.T) {
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		var log entries
		h := NewHandler(&Table{Nodes: []Node{respond(200, "hi")}}, nil, nil, l)
		h.Observe(&log, true)
		req := get("/")
		req.Header = []stream.Field{{Name: "x-asked", Value: "1"}}
		h.Serve(req, &client{})
		e := log.one(t)
		if fieldOf(e.Header, "x-asked") != "1" || fieldOf(e.RespHeader, "content-type") != "text/plain; charset=utf-8" {
			t.Errorf("fields %v, response fields %v", e.Header, e.RespHeader)
		}
	})
}

// TestAnswerLogBody: an answer that waits for the request body counts
// the bytes it read and drops, and is reported when it ends.
func TestAnswerLogBody(t *testing.T) {
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		var log entries
		h := NewHandler(&Table{Nodes: []Node{respond(202, "taken")}}, nil, nil, l)
		h.Observe(&log, false)
		req := get("/")
		req.Method, req.HasBody = "POST", true
		c := &client{}
		ev := h.Serve(req, c)
		if ev == nil {
			t.Fatal("an answer to a request with a body ended before the body")
		}
		ev.OnBody([]byte("abc"))
		ev.OnBody([]byte("de"))
		if len(log) != 0 {
			t.Fatal("reported before the answer ended")
		}
		ev.OnBodyEnd(nil)
		e := log.one(t)
		if e.Status != 202 || e.BytesRead != 5 || e.BytesOut != 5 || c.consumed != 5 || !c.closed {
			t.Errorf("status %d, read %d, out %d; the client saw %d consumed, closed %v",
				e.Status, e.BytesRead, e.BytesOut, c.consumed, c.closed)
		}
		ev.OnAbort(errors.New("late")) // after the end: no second entry
		if len(log) != 1 {
			t.Errorf("%d entries after a late abort", len(log))
		}
	})
}

// TestAnswerLogClientGone: a client that leaves before the answer ends
// is reported as gone, once.
func TestAnswerLogClientGone(t *testing.T) {
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		var log entries
		h := NewHandler(&Table{Nodes: []Node{respond(200, "never sent")}}, nil, nil, l)
		h.Observe(&log, false)
		req := get("/")
		req.Method, req.HasBody = "PUT", true
		ev := h.Serve(req, &client{})
		ev.OnBody([]byte("part"))
		ev.OnAbort(errors.New("client gone"))
		ev.OnAbort(errors.New("again"))
		e := log.one(t)
		if e.Reason != observe.ReasonClientGone || e.Status != 0 || e.BytesRead != 4 {
			t.Errorf("reason %v status %d read %d, want the client gone, no status, 4 read", e.Reason, e.Status, e.BytesRead)
		}
	})
}

// TestObserveNeedsLoopClock: a handler on a loop that cannot date an
// entry is not observed at all, and a nil observer observes nothing.
func TestObserveNeedsLoopClock(t *testing.T) {
	var log entries
	h := NewHandler(&Table{Nodes: []Node{respond(200, "")}}, nil, nil, &taskQueue{})
	h.Observe(&log, false)
	h.Serve(get("/"), &client{})
	if len(log) != 0 {
		t.Errorf("observed without a loop clock: %+v", log)
	}
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		h := NewHandler(&Table{Nodes: []Node{respond(200, "")}}, nil, nil, l)
		h.Observe(nil, true)
		c := &client{}
		h.Serve(get("/"), c)
		if c.status != 200 {
			t.Errorf("status %d", c.status)
		}
	})
}
