package route

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

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

func TestMatchers(t *testing.T) {
	req := &stream.Request{Method: "GET", Scheme: "https", Authority: "API.Example.com:8443", Path: "/Api/V1/users%2Fx?debug=1&tag=a+b",
		Header:     []stream.Field{{Name: "x-env", Value: "staging-2"}, {Name: "accept", Value: "text/html"}},
		RemoteAddr: netip.MustParseAddrPort("10.1.2.3:5555")}
	ranges, _ := ParseRanges([]string{"10.0.0.0/8"})
	private, _ := ParseRanges([]string{"private_ranges"})
	for _, tc := range []struct {
		name string
		m    Matcher
		want bool
	}{
		{"path prefix", MustPath("/api/*"), true},
		{"path exact folded", MustPath("/api/v1/users/x"), true},
		{"path suffix", MustPath("*/x"), true},
		{"path contains", MustPath("*v1*"), true},
		{"path glob", MustPath("/api/*/users/*"), true},
		{"path miss", MustPath("/web/*"), false},
		{"path_regexp", PathRegexp{Re: regexp.MustCompile(`^/Api/V[0-9]+/`)}, true},
		{"host wildcard", NewHost([]string{"*.example.com"}), true},
		{"host exact", NewHost([]string{"api.example.com"}), true},
		{"host miss", NewHost([]string{"example.com"}), false},
		{"method", Method{"POST", "GET"}, true},
		{"method miss", Method{"POST"}, false},
		{"header prefix", Header{{Name: "x-env", Values: []string{"staging*"}}}, true},
		{"header present", Header{{Name: "accept"}}, true},
		{"header absent", Header{{Name: "cookie", Absent: true}}, true},
		{"header absent but there", Header{{Name: "accept", Absent: true}}, false},
		{"header value miss", Header{{Name: "x-env", Values: []string{"prod"}}}, false},
		{"header_regexp", HeaderRegexp{Name: "x-env", Re: regexp.MustCompile(`-\d$`)}, true},
		{"query", Query{{Key: "debug", Values: []string{"1"}}, {Key: "tag", Values: []string{"a b"}}}, true},
		{"query any", Query{{Key: "tag", Values: []string{"*"}}}, true},
		{"query miss", Query{{Key: "debug", Values: []string{"0"}}}, false},
		{"remote_ip", RemoteIP(ranges), true},
		{"private_ranges", RemoteIP(private), true},
		{"client_ip", ClientIP(ranges), true},
		{"not", Not{All{Method{"GET"}}}, false},
		{"all", All{Method{"GET"}, MustPath("/api/*")}, true},
		{"protocol", Protocol("https"), true},
	} {
		if got := tc.m.Match(NewCtx(req, nil)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// client_ip reads the derivation it is given.
	proxied := func(*stream.Request) netip.Addr { return netip.MustParseAddr("203.0.113.9") }
	if ClientIP(ranges).Match(NewCtx(req, proxied)) {
		t.Error("client_ip matched the peer, not the client the derivation reported")
	}
}

func TestHeaderOps(t *testing.T) {
	fs := []stream.Field{{Name: "server", Value: "nginx"}, {Name: "x-debug-a", Value: "1"}, {Name: "x-debug-b", Value: "2"},
		{Name: "location", Value: "http://internal:8080/x"}, {Name: "x-keep", Value: "k"}}
	var ops []HeaderOp
	for _, args := range [][]string{{"-X-Debug-*"}, {"Server", "pollproxy"}, {"+Vary", "Origin"}, {"?X-Keep", "default"}, {"?X-New", "n"},
		{"Location", `^http://internal:8080(.*)$`, "https://example.com$1"}} {
		op, err := ParseHeaderOp(args, true)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	got := fmt.Sprint(ApplyHeaderOps(fs, ops, nil))
	want := "[{location https://example.com/x} {x-keep k} {vary Origin} {server pollproxy} {x-new n}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	all, _ := ParseHeaderOp([]string{"-*"}, true)
	if got := ApplyHeaderOps([]stream.Field{{Name: "a", Value: "1"}}, []HeaderOp{all}, nil); len(got) != 0 {
		t.Errorf("-* left %v", got)
	}
}

// table50 is 50 routes as a large site might have them: 48 path routes
// in handle blocks (a few with a header or method condition), a header
// edit, and the catch-all.
func table50() (*Table, []stream.Handler, *int, *string) {
	hit, path := new(int), new(string)
	hsts, _ := ParseHeaderOp([]string{"Strict-Transport-Security", "max-age=31536000"}, true)
	nodes := []Node{{Kind: EditResponse, Ops: []HeaderOp{hsts}, Match: MustPath("/secure/*")}}
	var proxies []stream.Handler
	for i := 0; i < 48; i++ {
		var m Matcher = MustPath(fmt.Sprintf("/service%02d/*", i))
		if i%8 == 0 {
			m = All{m, Method{"GET", "HEAD"}, Header{{Name: "accept", Values: []string{"*json*"}}}}
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

func TestExpression(t *testing.T) {
	req := &stream.Request{Method: "POST", Scheme: "https", Authority: "api.example.com", Path: "/v1/items?debug=1",
		Header: []stream.Field{{Name: "x-env", Value: "staging"}}, RemoteAddr: netip.MustParseAddrPort("10.0.0.7:1000")}
	for src, want := range map[string]bool{
		`{method} == "POST"`:                                    true,
		`{path}.startsWith("/v1/") && {query} != ""`:            true,
		`path('/v1/*') && method('GET', 'POST')`:                true,
		`host('*.example.com') && !path('/admin*')`:             true,
		`header({'X-Env': 'staging'})`:                          true,
		`query({'debug': '0'})`:                                 false,
		`remote_ip('10.0.0.0/8') && protocol('https')`:          true,
		`{header.X-Env} == "prod" || path_regexp('^/v[0-9]+/')`: true,
		`method('GET')`:                                         false,
	} {
		m, err := CompileExpression(src, "m")
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := m.Match(NewCtx(req, nil)); got != want {
			t.Errorf("%s: %v, want %v", src, got, want)
		}
	}
	for _, src := range []string{`{method} ==`, `{method}`, `{http.nope} == "x"`, `colour('red')`} {
		if _, err := CompileExpression(src, "m"); err == nil {
			t.Errorf("%s compiled", src)
		}
	}
}

// TestManyResponseEdits is the CORS preflight that took the process down:
// five header directives and a respond, so the edits outgrow the writer's
// inline array, and every one of them reaches the response.
func TestManyResponseEdits(t *testing.T) {
	var nodes []Node
	for i := 0; i < 9; i++ {
		op, err := ParseHeaderOp([]string{fmt.Sprintf("X-Edit-%d", i), "v"}, true)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, Node{Kind: EditResponse, Ops: []HeaderOp{op}})
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
