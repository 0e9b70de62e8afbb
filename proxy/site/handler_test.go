package site

import (
	"fmt"
	"regexp"
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
	nodes := []Node{{Match: route.MustPath("/secure/*"), Do: &EditResponse{Ops: []route.HeaderOp{hsts}}}}
	var proxies []stream.Handler
	for i := 0; i < 48; i++ {
		var m route.Matcher = route.MustPath(fmt.Sprintf("/service%02d/*", i))
		if i%8 == 0 {
			m = route.All{m, route.Method{"GET", "HEAD"}, route.Header{{Name: "accept", Values: []string{"*json*"}}}}
		}
		nodes = append(nodes, Node{Exclusive: 1, Match: m, Do: &Group{Strip: "", Children: []Node{{Do: &Proxy{Index: len(proxies)}}}}})
		proxies = append(proxies, marker{hit: hit, id: i, path: path})
	}
	nodes = append(nodes, Node{Exclusive: 1, Do: &Group{Children: []Node{{Do: &Proxy{Index: len(proxies)}}}}})
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
		nodes = append(nodes, Node{Do: &EditResponse{Ops: []route.HeaderOp{op}}})
	}
	nodes = append(nodes, Node{Do: &Respond{Status: 204, Static: Responder(204, "")}})
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

// through serves req through routes that end in one app and returns the
// request the app got.
func through(t *testing.T, req *stream.Request, routes ...Node) stream.Request {
	t.Helper()
	app := &origin{}
	h := NewHandler(&Table{Nodes: append(routes, Node{Do: &Proxy{}})}, []stream.Handler{app}, nil, &taskQueue{})
	h.Serve(req, &client{})
	return app.last(t).req
}

// TestURIOps: uri's strip_prefix, strip_suffix, replace (its limit in
// the path and in the query each), path_regexp and query edits, as
// Caddy's.
func TestURIOps(t *testing.T) {
	query := &route.QueryOps{}
	for _, args := range [][]string{{"-drop"}, {"+tag", "b"}, {"page", "2"}} {
		if err := query.ParseQueryOp(args); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		op   *URI
		path string
		want string
	}{
		{&URI{Op: StripPrefix, Find: "/api"}, "/API/x?q", "/x?q"},
		{&URI{Op: StripPrefix, Find: "/api"}, "/api", "/"},
		{&URI{Op: StripSuffix, Find: ".php"}, "/x.php", "/x"},
		{&URI{Op: Replace, Find: "a", ReplBy: "b", Limit: 1}, "/aa?x=aa", "/ba?x=ba"},
		{&URI{Op: Replace, Find: "a", ReplBy: "b"}, "/aa?x=aa", "/bb?x=bb"},
		{&URI{Op: Replace, Find: "", ReplBy: "b"}, "/aa", "/aa"},
		{&URI{Op: Replace, Find: "/old/", ReplBy: "/new/"}, "/x//old/./y", "/x/new/y"},
		{&URI{Op: RegexpPath, Regexp: regexp.MustCompile(`^/v(\d+)/`), ReplBy: "/version$1/"}, "/v2/items?x", "/version2/items?x"},
		{&URI{Op: EditQuery, Query: query}, "/list?drop=1&tag=a", "/list?page=2&tag=a&tag=b"},
		{&URI{Op: EditQuery, Query: &route.QueryOps{Delete: []route.Template{mustTemplate(t, "only")}}}, "/list?only=1", "/list"},
	} {
		if got := through(t, get(tc.path), Node{Do: tc.op}).Path; got != tc.want {
			t.Errorf("%c %q on %s: %s, want %s", tc.op.Op, tc.op.Find, tc.path, got, tc.want)
		}
	}
}

// TestRequestDirectives: what the routes do to a request before it
// reaches the app: rewrite (the query kept unless the target has one),
// method, request_body, log_skip, request_header, and handle_path's
// strip; the original target stays for the access log.
func TestRequestDirectives(t *testing.T) {
	set, err := route.ParseHeaderOp([]string{"X-Via", "{method} {path}"}, false)
	if err != nil {
		t.Fatal(err)
	}
	req := get("/api/v1/users?id=7")
	got := through(t, req,
		Node{Do: &SetMethod{Method: "PUT"}},
		Node{Do: &RequestBody{MaxBody: 1 << 10}},
		Node{Do: &LogSkip{}},
		Node{Match: route.MustPath("/api/*"), Do: &Group{Strip: "/api", Children: []Node{
			{Do: &Rewrite{To: mustTemplate(t, "/v2{path}")}},
			{Do: &EditRequest{Ops: []route.HeaderOp{set}}},
		}}})
	if got.Path != "/v2/v1/users?id=7" || got.Method != "PUT" || got.MaxBodySize != 1<<10 || !got.LogSkip {
		t.Errorf("the app got %s %s, max body %d, log_skip %v", got.Method, got.Path, got.MaxBodySize, got.LogSkip)
	}
	if v := fieldOf(got.Header, "x-via"); v != "PUT /v2/v1/users" {
		t.Errorf("x-via %q: request_header must see the request as the routes left it", v)
	}
	if got.OriginalPath != "/api/v1/users?id=7" {
		t.Errorf("original path %q", got.OriginalPath)
	}
	if got := through(t, get("/a?x=1"), Node{Do: &Rewrite{To: mustTemplate(t, "/b?y=2")}}).Path; got != "/b?y=2" {
		t.Errorf("a rewrite with a query: %s", got)
	}
}

// TestExclusiveGroups: of the routes of one list in the same exclusive
// group, only the first that matches runs (handle, rewrite, root); other
// groups and ungrouped routes all run.
func TestExclusiveGroups(t *testing.T) {
	mark := func(name string) []Node {
		op, err := route.ParseHeaderOp([]string{"+X-Ran", name}, false)
		if err != nil {
			t.Fatal(err)
		}
		return []Node{{Do: &EditRequest{Ops: []route.HeaderOp{op}}}}
	}
	got := through(t, get("/docs/x"),
		Node{Exclusive: 1, Match: route.MustPath("/nope/*"), Do: &Group{Children: mark("skipped")}},
		Node{Exclusive: 1, Match: route.MustPath("/docs/*"), Do: &Group{Children: mark("first")}},
		Node{Exclusive: 1, Do: &Group{Children: mark("second")}},
		Node{Exclusive: 2, Do: &Group{Children: mark("other group")}},
		Node{Do: &Group{Children: mark("ungrouped")}},
	)
	var ran []string
	for _, f := range got.Header {
		if f.Name == "x-ran" {
			ran = append(ran, f.Value)
		}
	}
	if fmt.Sprint(ran) != "[first other group ungrouped]" {
		t.Errorf("ran %v", ran)
	}
}

// TestAnswers: the answers the routes make themselves: redir with a
// target from placeholders and its html page, respond with a body from
// placeholders, and the empty 200 when nothing answers.
func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes []Node
		status int
		field  string // name: value the head must have
		body   string
	}{
		{"redir", []Node{{Do: &Redirect{Status: 301, To: mustTemplate(t, "https://{host}{uri}")}}}, 301,
			"location: https://example.com/from?q=1", ""},
		{"redir html", []Node{{Do: &Redirect{Status: 200, HTML: true, To: mustTemplate(t, "/to")}}}, 200,
			"content-type: text/html; charset=utf-8", "Redirecting to <a href=\"/to\">/to</a>"},
		{"respond", []Node{{Do: &Respond{Status: 203, Body: mustTemplate(t, "at {path}")}}}, 203,
			"content-length: 8", "at /from"},
		{"respond status from a placeholder", []Node{{Do: &Respond{StatusT: mustTemplate(t, "{query.code}"), Body: mustTemplate(t, "")}}}, 500,
			"content-length: 0", ""},
		{"nothing answers", []Node{{Do: &EditRequest{}}}, 200, "content-length: 0", ""},
	} {
		h := NewHandler(&Table{Nodes: tc.routes}, nil, nil, &taskQueue{})
		c := &client{}
		h.Serve(get("/from?q=1"), c)
		name, value, _ := strings.Cut(tc.field, ": ")
		if c.status != tc.status || c.field(name) != value || !strings.Contains(string(c.body), tc.body) {
			t.Errorf("%s: %d %s: %q, body %q", tc.name, c.status, name, c.field(name), c.body)
		}
	}
}

// TestErrorRouteAnswers: in the error routes, a respond that names no
// status answers with the error's, one that names it by placeholder too,
// and routes that answer nothing give the error's status with no body.
func TestErrorRouteAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		errs   []Node
		status int
		body   string
	}{
		{"respond without a status", []Node{{Do: &Respond{StatusUnset: true, Body: mustTemplate(t, "{err.status_text}")}}}, 503, "Service Unavailable"},
		{"status from a placeholder", []Node{{Do: &Respond{StatusT: mustTemplate(t, "{err.status_code}"), Body: mustTemplate(t, "{err.message}")}}}, 503, "down"},
		{"nothing answers", []Node{{Do: &EditRequest{}}}, 503, ""},
	} {
		tab := &Table{Nodes: []Node{{Do: &Error{Status: 503, Message: mustTemplate(t, "down"), Static: ErrorResponse(503)}}}, Errors: tc.errs}
		c := &client{}
		NewHandler(tab, nil, nil, &taskQueue{}).Serve(get("/"), c)
		if c.status != tc.status || string(c.body) != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, c.status, c.body, tc.status, tc.body)
		}
	}
}

// TestParseCopyField: forward_auth's copy_headers, Name or From>To.
func TestParseCopyField(t *testing.T) {
	for in, want := range map[string]CopyField{
		"X-User":        {From: "x-user", To: "x-user"},
		"Remote-User>X": {From: "remote-user", To: "x"},
	} {
		if got, ok := ParseCopyField(in); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{">x", "x>", ""} {
		if _, ok := ParseCopyField(in); ok {
			t.Errorf("%q accepted", in)
		}
	}
}
