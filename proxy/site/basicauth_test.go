package site

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/auth"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// postQueue is the loop's Poster for work that answers from the auth
// pool's goroutines: each posted func waits in the channel until the
// test runs it on its own goroutine, the test's "loop".
type postQueue chan func()

func (q postQueue) Post(f func()) { q <- f }

// next runs the next posted func.
func (q postQueue) next() { (<-q)() }

func basicAuthTable(t *testing.T) (*Table, *origin) {
	t.Helper()
	hash, err := auth.Hash([]byte("secret"), 4) // bcrypt's cheapest cost
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewBasicAuth("", []auth.Account{{User: "alice", Hash: hash}})
	if err != nil {
		t.Fatal(err)
	}
	app := &origin{}
	return &Table{Nodes: []Node{
		{Do: &BasicAuth{Auth: a, Unauthorized: Unauthorized(a)}},
		{Do: &Proxy{Index: 0}},
	}}, app
}

func withCredentials(user, pass string) *stream.Request {
	req := get("/private")
	req.Method, req.HasBody = "POST", true
	req.Header = []stream.Field{{Name: "authorization", Value: "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}}
	return req
}

// A request with credentials waits, its body held and unread, while the
// password is compared off the loop; once it passed, the app gets the
// request with the body held. The loop then remembers the credentials:
// the next request with them is decided at once.
func TestBasicAuthHoldsBody(t *testing.T) {
	tab, app := basicAuthTable(t)
	loop := make(postQueue, 4)
	h := NewHandler(tab, []stream.Handler{app}, nil, loop)
	c := &client{}
	ev := h.Serve(withCredentials("alice", "secret"), c)
	ev.OnBody([]byte("part1,"))
	ev.OnBodyEnd(nil)
	if len(app.ex) != 0 || c.consumed != 0 {
		t.Fatal("the request went on, or its body was consumed, before the password was checked")
	}
	loop.next()
	p := app.last(t)
	if p.req.AuthUser != "alice" || string(p.body) != "part1," || !p.bodyEnd {
		t.Errorf("the app got user %q body %q (end %v)", p.req.AuthUser, p.body, p.bodyEnd)
	}
	ev.OnWritable()
	if p.writable != 1 {
		t.Errorf("OnWritable reached the app %d times, want 1", p.writable)
	}
	ev.(stream.Releaser).OnRelease()
	if p.released != 1 {
		t.Errorf("the app's exchange was released %d times, want once", p.released)
	}

	h.Serve(withCredentials("alice", "secret"), &client{})
	if len(app.ex) != 2 || len(loop) != 0 {
		t.Errorf("credentials the loop saw pass were compared again (%d requests reached the app)", len(app.ex))
	}
}

// Requests carrying the same new credentials wait for one comparison.
func TestBasicAuthOneComparison(t *testing.T) {
	tab, app := basicAuthTable(t)
	loop := make(postQueue, 4)
	h := NewHandler(tab, []stream.Handler{app}, nil, loop)
	for i := 0; i < 3; i++ {
		h.Serve(withCredentials("alice", "secret"), &client{})
	}
	loop.next()
	if len(app.ex) != 3 || len(loop) != 0 {
		t.Errorf("one comparison let %d of 3 requests on, %d more posted", len(app.ex), len(loop))
	}
}

// A wrong password is answered with the 401 and its challenge; the held
// body is drained. Without credentials the 401 needs no comparison.
func TestBasicAuthRefused(t *testing.T) {
	tab, app := basicAuthTable(t)
	loop := make(postQueue, 4)
	h := NewHandler(tab, []stream.Handler{app}, nil, loop)
	c := &client{}
	ev := h.Serve(withCredentials("alice", "wrong"), c)
	ev.OnBody([]byte("held"))
	ev.OnBodyEnd(nil) // the 401 goes once the request's body was read
	loop.next()
	if c.status != 401 || c.field("www-authenticate") != `Basic realm="restricted"` || len(app.ex) != 0 {
		t.Errorf("client got %d %v, app %d requests", c.status, c.fields, len(app.ex))
	}
	if c.consumed != 4 {
		t.Errorf("consumed %d of the held body, want 4", c.consumed)
	}

	c = &client{}
	h.Serve(get("/private"), c)
	if c.status != 401 || len(loop) != 0 {
		t.Errorf("without credentials: %d, %d posted", c.status, len(loop))
	}
}

// A client gone while its password is compared: the answer finds nobody.
func TestBasicAuthClientGone(t *testing.T) {
	tab, app := basicAuthTable(t)
	loop := make(postQueue, 4)
	h := NewHandler(tab, []stream.Handler{app}, nil, loop)
	c := &client{}
	ev := h.Serve(withCredentials("alice", "secret"), c)
	ev.OnBody([]byte("x"))
	ev.OnAbort(errors.New("gone"))
	loop.next()
	if len(app.ex) != 0 || c.heads != 0 {
		t.Error("a request whose client went away reached the app or the client")
	}
}
