package site

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// recorder is a stream.ResponseWriter that keeps the head, and a
// terminal handler that reports which proxy a request reached.
type recorder struct {
	status int
	fields []stream.Field
}

func (r *recorder) WriteHeader(status int, fields []stream.Field, end bool) error {
	r.status, r.fields = status, append([]stream.Field(nil), fields...)
	return nil
}
func (r *recorder) Write(p []byte) (int, error) { return len(p), nil }
func (r *recorder) Close([]stream.Field) error  { return nil }
func (r *recorder) Reset(uint32)                {}
func (r *recorder) Consumed(int)                {}

type marker struct {
	hit  *int
	id   int
	path *string
}

func (m marker) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	*m.hit, *m.path = m.id, req.Path
	return nil
}

// table50 is 50 routes as a large site might have them: 48 path routes
// in handle blocks (a few with a header or method condition), a header
// edit, and the catch-all.
func table50() (*Table, []stream.Handler, *int, *string) {
	hit, path := new(int), new(string)
	hsts, _ := route.ParseHeaderOp([]string{"Strict-Transport-Security", "max-age=31536000"}, true)
	nodes := []Node{{Kind: EditResponse, Ops: []route.HeaderOp{hsts}, Match: route.MustPath("/secure/*")}}
	var proxies []stream.Handler
	for i := 0; i < 48; i++ {
		var m route.Matcher = route.MustPath(fmt.Sprintf("/service%02d/*", i))
		if i%8 == 0 {
			m = route.All{m, route.Method{"GET", "HEAD"}, route.Header{{Name: "accept", Values: []string{"*json*"}}}}
		}
		nodes = append(nodes, Node{Kind: Group, Exclusive: 1, Match: m, Strip: "",
			Children: []Node{{Kind: Proxy, Proxy: len(proxies)}}})
		proxies = append(proxies, marker{hit: hit, id: i, path: path})
	}
	nodes = append(nodes, Node{Kind: Group, Exclusive: 1, Children: []Node{{Kind: Proxy, Proxy: len(proxies)}}})
	proxies = append(proxies, marker{hit: hit, id: 99, path: path})
	return &Table{Nodes: nodes, Proxies: len(proxies)}, proxies, hit, path
}

func TestTable50(t *testing.T) {
	tab, proxies, hit, _ := table50()
	h := NewHandler(tab, proxies, nil, nil)
	for path, want := range map[string]int{"/service47/x": 47, "/service08/x": 99, "/nothing": 99, "/SERVICE03/y?z=1": 3} {
		h.Serve(&stream.Request{Method: "GET", Path: path, Authority: "example.com"}, &recorder{})
		if *hit != want {
			t.Errorf("%s reached %d, want %d", path, *hit, want)
		}
	}
}

// BenchmarkRoutes50 is what evaluating a 50-route table costs per request
// when the request falls through to the last route (the worst case).
func BenchmarkRoutes50(b *testing.B) {
	tab, proxies, hit, _ := table50()
	h := NewHandler(tab, proxies, nil, nil)
	req := &stream.Request{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/assets/app.js?v=3",
		Header: []stream.Field{{Name: "accept", Value: "*/*"}}}
	w := &recorder{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Serve(req, w)
	}
	if *hit != 99 {
		b.Fatalf("reached %d", *hit)
	}
}

// TestRoutes50Allocs: evaluating the table allocates nothing.
func TestRoutes50Allocs(t *testing.T) {
	tab, proxies, _, _ := table50()
	h := NewHandler(tab, proxies, nil, nil)
	req := &stream.Request{Method: "GET", Authority: "example.com", Path: "/service40/x", Header: []stream.Field{{Name: "accept", Value: "*/*"}}}
	w := &recorder{}
	if n := testing.AllocsPerRun(100, func() { h.Serve(req, w) }); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

// TestManyResponseEdits is the CORS preflight that took the process down:
// five header directives and a respond, so the edits outgrow the writer's
// inline array, and every one of them reaches the response.
func TestManyResponseEdits(t *testing.T) {
	var nodes []Node
	for i := 0; i < 9; i++ {
		op, err := route.ParseHeaderOp([]string{fmt.Sprintf("X-Edit-%d", i), "v"}, true)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, Node{Kind: EditResponse, Ops: []route.HeaderOp{op}})
	}
	nodes = append(nodes, Node{Kind: Respond, Status: 204, Static: Responder(204, "")})
	h := NewHandler(&Table{Nodes: nodes}, nil, nil, nil)
	for _, n := range []int{1, 4, 5, 9} {
		h.t = &Table{Nodes: append(append([]Node(nil), nodes[:n]...), nodes[len(nodes)-1])}
		rec := &recorder{}
		h.Serve(&stream.Request{Method: "OPTIONS", Path: "/", Authority: "example.com"}, rec)
		if rec.status != 204 {
			t.Fatalf("%d edits: status %d, want 204", n, rec.status)
		}
		got := 0
		for _, f := range rec.fields {
			if strings.HasPrefix(f.Name, "x-edit-") {
				got++
			}
		}
		if got != n {
			t.Errorf("%d edits: %d reached the response: %v", n, got, rec.fields)
		}
	}
}

// TestStripPath: uri strip_prefix and strip_suffix as Caddy's: the path
// cleaned first, compared without case, and never left empty.
func TestStripPath(t *testing.T) {
	for _, c := range []struct {
		target, text string
		prefix       bool
		want         string
	}{
		{"/", "/", false, "/"},
		{"/?a=b", "/", false, "/?a=b"},
		{"/api", "/api", true, "/"},
		{"/API/x?q", "/api", true, "/x?q"},
		{"/a//b/../c", "/a", true, "/c"},
		{"/a//b", "//", false, "/a//b"},
		{"/x.PHP", ".php", false, "/x"},
		{"/x.php/", ".php", false, "/x.php/"},
		{"/other", "/api", true, "/other"},
		{"/a/./b", "/zz", true, "/a/b"},
	} {
		if got := stripPath(c.target, c.text, c.prefix); got != c.want {
			t.Errorf("stripPath(%q, %q, %v) = %q, want %q", c.target, c.text, c.prefix, got, c.want)
		}
	}
}
