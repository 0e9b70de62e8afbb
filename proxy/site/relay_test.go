package site

import (
	"errors"
	"slices"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// The runtime half of the routes, driven in memory: the Handler gets a
// client writer that keeps what reaches the client, reverse proxies
// that keep the exchange they were given (the test writes their
// responses), and a loop whose posted funcs wait until the test runs
// them, as the real loop's task queue does.

// client is the front end's ResponseWriter: everything the client gets.
type client struct {
	status    int
	fields    []stream.Field
	heads     int
	body      []byte
	closed    bool
	reset     bool
	consumed  int
	headerEnd bool
}

func (c *client) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status >= 200 {
		c.heads++
	}
	c.status, c.fields, c.headerEnd = status, append([]stream.Field(nil), fields...), end
	return nil
}
func (c *client) Write(p []byte) (int, error) { c.body = append(c.body, p...); return len(p), nil }
func (c *client) Close([]stream.Field) error  { c.closed = true; return nil }
func (c *client) Reset(uint32)                { c.reset = true }
func (c *client) Consumed(n int)              { c.consumed += n }

func (c *client) field(name string) string {
	for _, f := range c.fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// origin is a reverse proxy whose exchanges the test answers by hand.
type origin struct{ ex []*exchange }

func (o *origin) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	q := *req
	q.Header = slices.Clone(req.Header)
	e := &exchange{req: q, w: w}
	o.ex = append(o.ex, e)
	return e
}

func (o *origin) last(t *testing.T) *exchange {
	t.Helper()
	if len(o.ex) == 0 {
		t.Fatal("the origin got no request")
	}
	return o.ex[len(o.ex)-1]
}

// exchange is one request an origin got, and the events it heard.
type exchange struct {
	req      stream.Request
	w        stream.ResponseWriter
	body     []byte
	bodyEnd  bool
	writable int
	aborted  bool
	released int
}

func (e *exchange) OnBody(p []byte)          { e.body = append(e.body, p...) }
func (e *exchange) OnBodyEnd([]stream.Field) { e.bodyEnd = true }
func (e *exchange) OnWritable()              { e.writable++ }
func (e *exchange) OnAbort(error)            { e.aborted = true }
func (e *exchange) OnRelease()               { e.released++ }

// respond writes a whole response to the exchange's writer.
func (e *exchange) respond(t *testing.T, status int, body string, fields ...stream.Field) {
	t.Helper()
	if err := e.w.WriteHeader(status, fields, body == ""); err != nil {
		t.Fatalf("WriteHeader %d: %v", status, err)
	}
	if body != "" {
		e.w.Write([]byte(body))
	}
	e.w.Close(nil)
}

// taskQueue is the loop's Poster: posted funcs run when the test drains
// them, as the loop runs its tasks after the event it is in.
type taskQueue struct{ tasks []func() }

func (q *taskQueue) Post(f func()) { q.tasks = append(q.tasks, f) }

func (q *taskQueue) drain() {
	for len(q.tasks) > 0 {
		f := q.tasks[0]
		q.tasks = q.tasks[1:]
		f()
	}
}

func respond(status int, body string) Node {
	return Node{Do: &Respond{Status: status, Static: Responder(status, body)}}
}

func matchStatus(codes ...int) *route.ResponseMatch { return &route.ResponseMatch{Status: codes} }

func get(path string) *stream.Request {
	return &stream.Request{Method: "GET", Scheme: "https", Authority: "example.com", Path: path, ContentLength: -1}
}

// A response no handle_response matches is the client's as written, and
// the client's events go to its exchange.
func TestRelayPassing(t *testing.T) {
	o, loop := &origin{}, &taskQueue{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{respond(418, "taken")}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, loop)
	c := &client{}
	req := get("/a")
	req.HasBody = true
	ev := h.Serve(req, c)
	e := o.last(t)
	ev.OnBody([]byte("up"))
	ev.OnBodyEnd(nil)
	if string(e.body) != "up" || !e.bodyEnd {
		t.Errorf("the origin got body %q (end %v), want the client's", e.body, e.bodyEnd)
	}
	e.respond(t, 200, "from origin", stream.Field{Name: "x-o", Value: "1"})
	if c.status != 200 || string(c.body) != "from origin" || !c.closed || c.field("x-o") != "1" {
		t.Errorf("client got %d %q closed %v fields %v", c.status, c.body, c.closed, c.fields)
	}
	if rp, ok := e.w.(stream.Replacer); !ok || rp.Replaced() {
		t.Error("a passing response reports itself replaced")
	}
	ev.OnWritable()
	if e.writable != 1 {
		t.Errorf("OnWritable reached the origin %d times, want 1", e.writable)
	}
	ev.(stream.Releaser).OnRelease()
	ev.(stream.Releaser).OnRelease()
	loop.drain()
	if e.released != 1 {
		t.Errorf("the origin was released %d times, want once", e.released)
	}
}

// A response a handle_response matches is taken: the block's routes
// answer, the origin's body is dropped, and its exchange is released
// from the loop's queue, once, after it ended.
func TestRelayTaken(t *testing.T) {
	o, loop := &origin{}, &taskQueue{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{respond(418, "taken")}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, loop)
	c := &client{}
	ev := h.Serve(get("/a"), c)
	e := o.last(t)
	e.respond(t, 404, "origin's page")
	if c.status != 418 || string(c.body) != "taken" || c.heads != 1 {
		t.Errorf("client got %d %q in %d heads, want the block's 418 alone", c.status, c.body, c.heads)
	}
	if rp := e.w.(stream.Replacer); !rp.Replaced() {
		t.Error("a taken response does not report itself replaced")
	}
	if e.released != 0 {
		t.Error("the origin was released inside its own ending")
	}
	loop.drain()
	if e.released != 1 {
		t.Errorf("after the loop's tasks the origin was released %d times, want once", e.released)
	}
	ev.OnAbort(errors.New("gone"))
	if e.aborted {
		t.Error("the client's abort reached the exchange whose response was taken")
	}
	ev.(stream.Releaser).OnRelease()
	if e.released != 1 {
		t.Errorf("the origin was released %d times, want once", e.released)
	}
}

// The handle_response routes see the taken response's status, and go on
// past the reverse_proxy when they do not answer.
func TestRelayTakenGoesOn(t *testing.T) {
	o, loop := &origin{}, &taskQueue{}
	tab := &Table{Nodes: []Node{
		{Exclusive: 1, Do: &Group{Children: []Node{
			{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(5),
				Routes: []Node{{Do: &EditResponse{Ops: []route.HeaderOp{mustOp(t, "X-Was", "{rp.status_code}")}}}}}}}},
		}}},
		respond(200, ""),
	}}
	h := NewHandler(tab, []stream.Handler{o}, nil, loop)
	c := &client{}
	h.Serve(get("/a"), c)
	o.last(t).respond(t, 503, "")
	if c.status != 200 || c.field("x-was") != "503" {
		t.Errorf("client got %d %v, want the route after the proxy with x-was 503", c.status, c.fields)
	}
}

func mustOp(t *testing.T, args ...string) route.HeaderOp {
	t.Helper()
	op, err := route.ParseHeaderOp(args, true)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// replace_status passes the response with its status.
func TestRelayReplaceStatus(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Status: 200}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/a"), c)
	o.last(t).respond(t, 404, "page")
	if c.status != 200 || string(c.body) != "page" || !c.closed {
		t.Errorf("client got %d %q closed %v, want 200 with the origin's body", c.status, c.body, c.closed)
	}
}

// copy_response sends the taken response after all, with its head, and
// the client's OnWritable reaches its exchange.
func TestRelayCopyResponse(t *testing.T) {
	o, loop := &origin{}, &taskQueue{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{
		{Do: &EditResponse{Ops: []route.HeaderOp{mustOp(t, "X-Copied", "yes")}}},
		{Do: &CopyResponse{}},
	}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, loop)
	c := &client{}
	ev := h.Serve(get("/a"), c)
	e := o.last(t)
	if err := e.w.WriteHeader(404, []stream.Field{{Name: "x-o", Value: "1"}}, false); err != nil {
		t.Fatal(err)
	}
	if c.status != 404 || c.field("x-o") != "1" || c.field("x-copied") != "yes" {
		t.Errorf("client got %d %v, want the origin's 404 with the route's edit", c.status, c.fields)
	}
	ev.OnWritable()
	if e.writable != 1 {
		t.Errorf("OnWritable reached the copied exchange %d times, want 1", e.writable)
	}
	e.w.Write([]byte("copied body"))
	e.w.Close(nil)
	if string(c.body) != "copied body" || !c.closed {
		t.Errorf("client got body %q closed %v", c.body, c.closed)
	}
	if rp := e.w.(stream.Replacer); !rp.Replaced() {
		t.Error("a copied response does not report itself replaced")
	}
	e.w.Reset(stream.CodeInternal)
	if !c.reset {
		t.Error("a copied exchange's reset did not reach the client")
	}
	ev.(stream.Releaser).OnRelease()
	loop.drain()
	if e.released != 1 {
		t.Errorf("the origin was released %d times, want once", e.released)
	}
}

// forward_auth: the subrequest is the request's head as GET without a
// body; the client's body waits, unread, and a 2xx hands it to the
// routes after forward_auth with copy_headers' fields, the client's own
// value of them dropped.
func TestForwardAuthAllowed(t *testing.T) {
	authsvc, app, loop := &origin{}, &origin{}, &taskQueue{}
	tab := &Table{Nodes: []Node{
		{Do: &ForwardAuth{Proxy: 0, Copy: []CopyField{{From: "x-user", To: "x-user"}}}},
		{Do: &Proxy{Index: 1}},
	}}
	h := NewHandler(tab, []stream.Handler{authsvc, app}, nil, loop)
	c := &client{}
	req := get("/upload")
	req.Method, req.HasBody, req.ContentLength = "POST", true, 6
	req.Header = []stream.Field{{Name: "x-user", Value: "mallory"}, {Name: "content-length", Value: "6"}}
	ev := h.Serve(req, c)
	a := authsvc.last(t)
	if a.req.Method != "GET" || a.req.HasBody || fieldOf(a.req.Header, "x-forwarded-method") != "POST" ||
		fieldOf(a.req.Header, "x-forwarded-uri") != "/upload" || fieldOf(a.req.Header, "content-length") != "" {
		t.Errorf("subrequest %s body %v header %v", a.req.Method, a.req.HasBody, a.req.Header)
	}
	ev.OnBody([]byte("abc"))
	ev.OnBody([]byte("def"))
	ev.OnBodyEnd(nil)
	if len(a.body) != 0 || c.consumed != 0 {
		t.Errorf("while the auth service answers, the body went to it (%q) or was consumed (%d)", a.body, c.consumed)
	}
	if err := a.w.WriteHeader(100, nil, false); err != nil || c.heads != 0 || c.status != 0 {
		t.Errorf("the auth service's 1xx reached the client (%d, %v)", c.status, err)
	}
	a.respond(t, 200, "", stream.Field{Name: "x-user", Value: "alice"})
	p := app.last(t)
	if got := fieldOf(p.req.Header, "x-user"); got != "alice" {
		t.Errorf("the app got x-user %q, want the auth service's alice", got)
	}
	if string(p.body) != "abcdef" || !p.bodyEnd {
		t.Errorf("the app got the held body %q (end %v)", p.body, p.bodyEnd)
	}
	if c.heads != 0 {
		t.Error("the auth service's 2xx reached the client")
	}
	loop.drain()
	if a.released != 1 {
		t.Errorf("the auth exchange was released %d times, want once", a.released)
	}
	p.w.WriteHeader(201, nil, true)
	if c.status != 201 {
		t.Errorf("client got %d, want the app's 201", c.status)
	}
	ev.(stream.Releaser).OnRelease()
	if p.released != 1 || a.released != 1 {
		t.Errorf("released: app %d, auth %d, want once each", p.released, a.released)
	}
}

// forward_auth's refusal is the client's answer; the held body is
// drained and the app never sees the request.
func TestForwardAuthRefused(t *testing.T) {
	authsvc, app := &origin{}, &origin{}
	tab := &Table{Nodes: []Node{{Do: &ForwardAuth{Proxy: 0}}, {Do: &Proxy{Index: 1}}}}
	h := NewHandler(tab, []stream.Handler{authsvc, app}, nil, &taskQueue{})
	c := &client{}
	req := get("/")
	req.Method, req.HasBody = "POST", true
	ev := h.Serve(req, c)
	ev.OnBody([]byte("held"))
	authsvc.last(t).respond(t, 401, "who?", stream.Field{Name: "www-authenticate", Value: "Basic"})
	if c.status != 401 || string(c.body) != "who?" || c.field("www-authenticate") != "Basic" || !c.closed {
		t.Errorf("client got %d %q %v", c.status, c.body, c.fields)
	}
	if c.consumed != 4 {
		t.Errorf("consumed %d of the held body, want 4", c.consumed)
	}
	ev.OnBody([]byte("more"))
	if c.consumed != 8 {
		t.Errorf("consumed %d after more body, want 8: a refused request's body is dropped", c.consumed)
	}
	if len(app.ex) != 0 {
		t.Error("the app got a request the auth service refused")
	}
}

// A client gone while forward_auth waits: the subrequest hears the
// abort, and its answer, 2xx or not, finds nobody.
func TestForwardAuthClientGone(t *testing.T) {
	authsvc, app := &origin{}, &origin{}
	tab := &Table{Nodes: []Node{{Do: &ForwardAuth{Proxy: 0}}, {Do: &Proxy{Index: 1}}}}
	h := NewHandler(tab, []stream.Handler{authsvc, app}, nil, &taskQueue{})
	c := &client{}
	ev := h.Serve(get("/"), c)
	ev.OnAbort(errors.New("client gone"))
	a := authsvc.last(t)
	if !a.aborted {
		t.Error("the subrequest did not hear the client's abort")
	}
	if err := a.w.WriteHeader(200, nil, true); !errors.Is(err, stream.ErrStreamClosed) {
		t.Errorf("the answer after the abort: %v, want ErrStreamClosed", err)
	}
	if len(app.ex) != 0 || c.heads != 0 {
		t.Error("a request whose client went away reached the app or the client")
	}
}

func fieldOf(fs []stream.Field, name string) string {
	for _, f := range fs {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// The client's abort reaches a relayed exchange whose response passes or
// is still undecided.
func TestRelayAbort(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{respond(418, "")}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	ev := h.Serve(get("/"), &client{})
	ev.OnAbort(errors.New("gone"))
	if !o.last(t).aborted {
		t.Error("an undecided exchange did not hear the client's abort")
	}
	ev = h.Serve(get("/"), &client{})
	o.last(t).w.WriteHeader(200, nil, false)
	ev.OnAbort(errors.New("gone"))
	if !o.last(t).aborted {
		t.Error("a passing exchange did not hear the client's abort")
	}
}

// forward_auth's handle_response: a refusal its matcher picks is taken
// by those routes, which get the held body.
func TestForwardAuthHandleResponse(t *testing.T) {
	authsvc, app, backup := &origin{}, &origin{}, &origin{}
	tab := &Table{Nodes: []Node{
		{Do: &ForwardAuth{Proxy: 0, Responses: []ResponseHandler{{Match: matchStatus(401), Routes: []Node{{Do: &Proxy{Index: 2}}}}}}},
		{Do: &Proxy{Index: 1}},
	}}
	h := NewHandler(tab, []stream.Handler{authsvc, app, backup}, nil, &taskQueue{})
	c := &client{}
	req := get("/")
	req.Method, req.HasBody = "PUT", true
	ev := h.Serve(req, c)
	ev.OnBody([]byte("held"))
	authsvc.last(t).respond(t, 401, "no")
	b := backup.last(t)
	if string(b.body) != "held" || b.req.Method != "PUT" || b.req.Handoff == nil || b.req.Handoff.Status != 401 {
		t.Errorf("the handle_response route got %s body %q handoff %+v", b.req.Method, b.body, b.req.Handoff)
	}
	if len(app.ex) != 0 || c.heads != 0 {
		t.Error("a refusal handle_response took reached the app or the client")
	}
}

// Re-entering the routes is bounded: past maxDepth a response the
// handlers would take passes as written.
func TestRelayDepthBound(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{respond(418, "")}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	for _, tc := range []struct{ depth, want int }{{maxDepth - 2, 418}, {maxDepth - 1, 404}} {
		c := &client{}
		req := get("/")
		req.Handoff = &stream.Handoff{Depth: tc.depth}
		h.Serve(req, c)
		o.last(t).respond(t, 404, "")
		if c.status != tc.want {
			t.Errorf("depth %d: client got %d, want %d", tc.depth, c.status, tc.want)
		}
	}
}

// copy_response_headers puts the taken response's fields the filter lets
// through on whatever the handle_response routes answer, never its
// framing.
func TestRelayCopyResponseHeaders(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(2), Routes: []Node{
		{Do: &EditResponse{Immediate: true, CopyFrom: &HeaderFilter{Include: []string{"x-keep", "content-length"}}}},
		respond(200, "file"),
	}}}}}}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/"), c)
	o.last(t).respond(t, 200, "", stream.Field{Name: "x-keep", Value: "1"}, stream.Field{Name: "x-drop", Value: "1"},
		stream.Field{Name: "content-length", Value: "999"})
	if c.status != 200 || string(c.body) != "file" || c.field("x-keep") != "1" || c.field("x-drop") != "" || c.field("content-length") != "4" {
		t.Errorf("client got %d %q %v", c.status, c.body, c.fields)
	}
}
