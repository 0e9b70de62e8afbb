package site

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// errorPage is an error route answering with the error's status and a
// body, and a header naming the error it rendered.
func errorPage(t *testing.T, match ErrorStatus, body string) Node {
	t.Helper()
	return Node{Exclusive: 1, Match: match, Do: &Group{Children: []Node{
		{Do: &EditResponse{Ops: []route.HeaderOp{mustOp(t, "X-Err", "{err.status_code} {err.message}")}}},
		{Do: &Respond{StatusUnset: true, Body: mustTemplate(t, body)}},
	}}}
}

// The error directive re-enters the site's error routes, which answer
// with the error's status.
func TestErrorDirectiveRoutes(t *testing.T) {
	tab := &Table{
		Nodes:  []Node{{Do: &Error{Status: 403, Message: mustTemplate(t, "no entry"), Static: ErrorResponse(403)}}},
		Errors: []Node{errorPage(t, ErrorStatus{403}, "denied page")},
	}
	h := NewHandler(tab, nil, nil, &taskQueue{})
	c := &client{}
	req := get("/secret")
	req.HasBody = true
	ev := h.Serve(req, c)
	if c.status != 403 || string(c.body) != "denied page" || c.field("x-err") != "403 no entry" {
		t.Errorf("client got %d %q %v, want the error route's 403 page", c.status, c.body, c.fields)
	}
	ev.OnBody([]byte("dropped"))
	if c.consumed != 7 {
		t.Errorf("consumed %d, want the body dropped (7)", c.consumed)
	}
}

// Without error routes the error directive's answer is the bare status.
func TestErrorDirectiveBare(t *testing.T) {
	tab := &Table{Nodes: []Node{{Do: &Error{Status: 403, Static: ErrorResponse(403)}}}}
	h := NewHandler(tab, nil, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/"), c)
	if c.status != 403 || len(c.body) != 0 || c.field("content-length") != "0" {
		t.Errorf("client got %d %q %v, want a bare 403", c.status, c.body, c.fields)
	}
}

// A reverse proxy's own error (its origin down) goes to the error routes;
// an error while they answer is the first error's status with an empty
// body, never a second pass.
func TestProxyErrorRoutes(t *testing.T) {
	app, down := &origin{}, &origin{}
	tab := &Table{
		Nodes:  []Node{{Do: &Proxy{Index: 0}}},
		Errors: []Node{{Do: &Proxy{Index: 1}}},
	}
	h := NewHandler(tab, []stream.Handler{app, down}, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/"), c)
	if !stream.RouteError(app.last(t).w, 502, "origin down") {
		t.Fatal("the site's error routes refused the proxy's error")
	}
	e := down.last(t)
	if e.req.Handoff == nil || e.req.Handoff.ErrStatus != 502 || e.req.Handoff.ErrMessage != "origin down" {
		t.Fatalf("the error route's request carries %+v, want the 502", e.req.Handoff)
	}
	if !stream.RouteError(e.w, 504, "also down") {
		t.Fatal("the second error was refused: the client would wait forever")
	}
	if c.status != 502 || len(c.body) != 0 || c.heads != 1 {
		t.Errorf("client got %d %q in %d heads, want the first error's bare 502", c.status, c.body, c.heads)
	}
}

// An error the relayed exchange raises (handle_response's origin down)
// is never a response the handlers match: it goes to the error routes.
func TestRelayErrorRoutes(t *testing.T) {
	o := &origin{}
	tab := &Table{
		Nodes:  []Node{{Do: &Proxy{Index: 0, Responses: []ResponseHandler{{Match: matchStatus(5), Routes: []Node{respond(418, "taken")}}}}}},
		Errors: []Node{errorPage(t, ErrorStatus{5}, "sorry")},
	}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/"), c)
	e := o.last(t)
	if !stream.RouteError(e.w, 502, "origin down") {
		t.Fatal("the relay refused its exchange's error")
	}
	if c.status != 502 || string(c.body) != "sorry" {
		t.Errorf("client got %d %q, want the error route's 502 page", c.status, c.body)
	}
	if stream.RouteError(e.w, 504, "again") {
		t.Error("a relay whose response is decided routed a second error")
	}
}

// An intercept watches whatever answers: a response its handle_response
// matches goes to those routes, which do not go on past the intercept;
// when they do not answer, the answer is the intercepted status, empty.
func TestIntercept(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{
		{Do: &Intercept{Responses: []ResponseHandler{
			{Match: matchStatus(404), Routes: []Node{respond(200, "custom 404")}},
			{Match: matchStatus(500), Routes: []Node{{Do: &EditResponse{Ops: []route.HeaderOp{mustOp(t, "X-Seen", "1")}}}}},
		}}},
		{Do: &Proxy{Index: 0}},
	}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})

	for _, tc := range []struct {
		status     int
		wantStatus int
		wantBody   string
	}{
		{200, 200, "origin"},
		{404, 200, "custom 404"},
		{500, 500, ""},
	} {
		c := &client{}
		h.Serve(get("/"), c)
		o.last(t).respond(t, tc.status, "origin")
		if c.status != tc.wantStatus || string(c.body) != tc.wantBody || c.heads != 1 {
			t.Errorf("origin %d: client got %d %q in %d heads, want %d %q", tc.status, c.status, c.body, c.heads, tc.wantStatus, tc.wantBody)
		}
	}
}

// An intercepted handler's reset before any head is the client's: it
// would otherwise wait forever.
func TestInterceptReset(t *testing.T) {
	o := &origin{}
	tab := &Table{Nodes: []Node{
		{Do: &Intercept{Responses: []ResponseHandler{{Match: matchStatus(404), Routes: []Node{respond(200, "x")}}}}},
		{Do: &Proxy{Index: 0}},
	}}
	h := NewHandler(tab, []stream.Handler{o}, nil, &taskQueue{})
	c := &client{}
	h.Serve(get("/"), c)
	o.last(t).w.Reset(stream.CodeInternal)
	if !c.reset {
		t.Error("the intercepted handler's reset did not reach the client")
	}
}

func mustTemplate(t *testing.T, s string) route.Template {
	t.Helper()
	tm, err := route.ParseTemplate(s, route.TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
