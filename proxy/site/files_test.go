package site

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// The file matcher and file_server's pass_thru ask the disk in
// fileserver's pool, never on the loop: the first pass over the routes
// learns what they ask about, the request waits (fileWait), and the
// routes run again on the loop once the pool has answered. These tests
// put real files in a directory and run the real pool and a real loop.

// fileTree makes a directory holding names: a name ending in "/" is a
// directory, any other a file whose content is its name.
func fileTree(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// tryFiles is try_files as the Caddyfile compiles it (one group of
// rewrites, each behind a file matcher), under root.
func tryFiles(t *testing.T, root, policy string, entries ...string) Node {
	t.Helper()
	var try []route.Template
	for _, e := range entries {
		try = append(try, mustTemplate(t, e))
	}
	return Node{Do: &Group{Children: []Node{{Exclusive: 1,
		Match: &File{Root: root, Try: try, Policy: policy},
		Do:    &Rewrite{FileTarget: true, To: mustTemplate(t, "")}}}}}
}

// tasks counts what the pools post back to the loop as it runs, so a test
// knows the pool's answer came back even when it changed nothing.
type tasks struct {
	*netpoll.Loop
	ran int // only the loop's goroutine, the test's, touches it
}

func (q *tasks) Post(f func()) { q.Loop.Post(func() { f(); q.ran++ }) }

// serveOn serves req through h on the loop l and returns the client's
// writer and the request's events once the request has left its wait.
func serveOn(t *testing.T, l *netpoll.Loop, h *Handler, req *stream.Request, done func(*client) bool) (*client, stream.Events) {
	t.Helper()
	c := &client{}
	ev := h.Serve(req, c)
	runUntil(t, l, func() bool { return done(c) })
	return c, ev
}

// TestTryFiles: try_files {path} {path}/ /index.html, Caddy's single-page
// application line: a file is rewritten to itself, a directory only by
// the entry written with a slash, anything else to /index.html; the
// query stays.
func TestTryFiles(t *testing.T) {
	root := fileTree(t, "a.txt", "dir/", "index.html")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		tab := &Table{Nodes: []Node{tryFiles(t, root, "", "{path}", "{path}/", "/index.html"), {Do: &Proxy{}}}}
		h := NewHandler(tab, []stream.Handler{app}, nil, l)
		for _, tc := range []struct{ path, want string }{
			{"/a.txt", "/a.txt"},
			{"/a.txt?x=1", "/a.txt?x=1"},
			{"/dir", "/dir/"},
			{"/missing", "/index.html"},
			{"/missing?q=%20", "/index.html?q=%20"},
			{"/../a.txt", "/a.txt"},
		} {
			before := len(app.ex)
			serveOn(t, l, h, get(tc.path), func(*client) bool { return len(app.ex) > before })
			if got := app.last(t).req.Path; got != tc.want {
				t.Errorf("%s: the app got %s, want %s", tc.path, got, tc.want)
			}
		}
	})
}

// TestTryFilesStatus: an "=404" entry raises the error: the site's error
// routes render it, with the code as its message; without them the
// answer is the bare status.
func TestTryFilesStatus(t *testing.T) {
	root := fileTree(t, "a.txt")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		routes := []Node{tryFiles(t, root, "", "{path}", "=404"), {Do: &Proxy{}}}
		bare := NewHandler(&Table{Nodes: routes}, []stream.Handler{app}, nil, l)
		c, _ := serveOn(t, l, bare, get("/gone"), func(c *client) bool { return c.status != 0 })
		if c.status != 404 || len(c.body) != 0 || len(app.ex) != 0 {
			t.Errorf("bare: status %d body %q, the app got %d requests", c.status, c.body, len(app.ex))
		}

		paged := NewHandler(&Table{Nodes: routes, Errors: []Node{errorPage(t, ErrorStatus{404}, "not here")}},
			[]stream.Handler{app}, nil, l)
		c, _ = serveOn(t, l, paged, get("/gone"), func(c *client) bool { return c.status != 0 })
		if c.status != 404 || string(c.body) != "not here" || c.field("x-err") != "404 404" {
			t.Errorf("error routes: status %d body %q x-err %q", c.status, c.body, c.field("x-err"))
		}

		c, _ = serveOn(t, l, paged, get("/a.txt"), func(*client) bool { return len(app.ex) == 1 })
		if c.status != 0 || app.last(t).req.Path != "/a.txt" {
			t.Errorf("a file that exists: status %d, the app got %s", c.status, app.last(t).req.Path)
		}
	})
}

// TestTryPolicies: try_policy picks among the candidates that exist by
// size or age, and first_exist_fallback takes the last entry unasked.
func TestTryPolicies(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	for i, f := range []struct {
		name string
		size int
		age  time.Duration
	}{{"small", 1, 3 * time.Hour}, {"large", 9, 2 * time.Hour}, {"new", 5, time.Hour}} {
		p := filepath.Join(root, f.name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", f.size)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now, now.Add(-f.age)); err != nil {
			t.Fatal(i, err)
		}
	}
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		for _, tc := range []struct {
			policy string
			try    []string
			want   string
		}{
			{"", []string{"/none", "/large", "/small"}, "/large"},
			{"first_exist", []string{"/small", "/large"}, "/small"},
			{"largest_size", []string{"/small", "/none", "/large", "/new"}, "/large"},
			{"smallest_size", []string{"/large", "/small", "/new"}, "/small"},
			{"most_recently_modified", []string{"/small", "/new", "/large"}, "/new"},
			{"first_exist_fallback", []string{"/none", "/fallback"}, "/fallback"},
			{"first_exist_fallback", []string{"/new", "/fallback"}, "/new"},
		} {
			app := &origin{}
			tab := &Table{Nodes: []Node{tryFiles(t, root, tc.policy, tc.try...), {Do: &Proxy{}}}}
			h := NewHandler(tab, []stream.Handler{app}, nil, l)
			serveOn(t, l, h, get("/asked"), func(*client) bool { return len(app.ex) == 1 })
			if got := app.last(t).req.Path; got != tc.want {
				t.Errorf("%s %v: the app got %s, want %s", tc.policy, tc.try, got, tc.want)
			}
		}
		// No candidate at all: the matcher does not match, the request
		// goes on as it came.
		app := &origin{}
		h := NewHandler(&Table{Nodes: []Node{tryFiles(t, root, "largest_size", "/none", "/nothing"), {Do: &Proxy{}}}},
			[]stream.Handler{app}, nil, l)
		serveOn(t, l, h, get("/asked"), func(*client) bool { return len(app.ex) == 1 })
		if got := app.last(t).req.Path; got != "/asked" {
			t.Errorf("no candidate: the app got %s, want /asked", got)
		}
	})
}

// TestFileMatcherRoot: a file matcher without a root of its own looks
// under the root the root directive set; one with a root, under that.
func TestFileMatcherRoot(t *testing.T) {
	site, other := fileTree(t, "page.html", "fallback"), fileTree(t, "other.html")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		tab := &Table{Nodes: []Node{
			{Do: &SetRoot{Root: site}},
			tryFiles(t, "", "", "{path}", "/fallback"),
			{Do: &Proxy{}},
		}}
		h := NewHandler(tab, []stream.Handler{app}, nil, l)
		serveOn(t, l, h, get("/page.html"), func(*client) bool { return len(app.ex) == 1 })
		serveOn(t, l, h, get("/other.html"), func(*client) bool { return len(app.ex) == 2 })
		if a, b := app.ex[0].req.Path, app.ex[1].req.Path; a != "/page.html" || b != "/fallback" {
			t.Errorf("under the root directive's root: %s and %s, want /page.html and /fallback", a, b)
		}

		own := NewHandler(&Table{Nodes: []Node{
			{Do: &SetRoot{Root: site}},
			tryFiles(t, other, "", "{path}", "/fallback"),
			{Do: &Proxy{}},
		}}, []stream.Handler{app}, nil, l)
		serveOn(t, l, own, get("/other.html"), func(*client) bool { return len(app.ex) == 3 })
		if got := app.ex[2].req.Path; got != "/other.html" {
			t.Errorf("under its own root: %s, want /other.html", got)
		}
	})
}

// TestFileWaitHoldsBody: while the pool looks, the request's body is
// held, unread (the client's window bounds it), and the app gets all of
// it, and its end, once the routes have run again.
func TestFileWaitHoldsBody(t *testing.T) {
	root := fileTree(t, "upload")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		q := &tasks{Loop: l}
		h := NewHandler(&Table{Nodes: []Node{tryFiles(t, root, "", "{path}"), {Do: &Proxy{}}}}, []stream.Handler{app}, nil, q)
		req := get("/upload")
		req.Method, req.HasBody, req.ContentLength = "POST", true, 10
		c := &client{}
		ev := h.Serve(req, c)
		if ev == nil {
			t.Fatal("the request did not wait for the disk")
		}
		ev.OnBody([]byte("hello"))
		ev.OnBody([]byte("world"))
		ev.OnBodyEnd(nil)
		if len(app.ex) != 0 || c.consumed != 0 {
			t.Fatalf("before the pool answered: the app got %d requests, %d bytes consumed", len(app.ex), c.consumed)
		}
		runUntil(t, l, func() bool { return len(app.ex) == 1 })
		e := app.last(t)
		if string(e.body) != "helloworld" || !e.bodyEnd || e.req.Path != "/upload" {
			t.Errorf("the app got %s with body %q (end %v)", e.req.Path, e.body, e.bodyEnd)
		}
		ev.OnBody([]byte("!"))
		if string(e.body) != "helloworld!" {
			t.Errorf("after the hand-over the body goes straight on: %q", e.body)
		}
		ev.OnWritable()
		if e.writable != 1 {
			t.Errorf("OnWritable reached the app %d times, want 1", e.writable)
		}
	})
}

// TestFileWaitClientGone: a client that goes away while the pool looks
// gets nothing, and its request reaches nobody when the answer comes.
func TestFileWaitClientGone(t *testing.T) {
	root := fileTree(t, "page")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		q := &tasks{Loop: l}
		h := NewHandler(&Table{Nodes: []Node{tryFiles(t, root, "", "{path}"), {Do: &Proxy{}}}}, []stream.Handler{app}, nil, q)
		req := get("/page")
		req.Method, req.HasBody = "POST", true
		c := &client{}
		ev := h.Serve(req, c)
		ev.OnBody([]byte("held"))
		ev.OnAbort(errors.New("client gone"))
		runUntil(t, l, func() bool { return q.ran == 1 })
		if len(app.ex) != 0 || c.status != 0 || c.consumed != 0 {
			t.Errorf("after the client left: the app got %d requests, the client status %d, %d bytes consumed",
				len(app.ex), c.status, c.consumed)
		}
	})
}

// TestFileServerPassThru: a file_server with pass_thru answers with the
// file when there is one (its bytes from the pool, on the loop) and hands
// any other request to the routes after it.
func TestFileServerPassThru(t *testing.T) {
	root := fileTree(t, "style.css")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		app := &origin{}
		tab := &Table{Nodes: []Node{
			{Do: &FileServer{Root: root, Files: fileserver.New(fileserver.Options{PassThru: true})}},
			{Do: &Proxy{}},
		}}
		h := NewHandler(tab, []stream.Handler{app}, nil, l)
		c, _ := serveOn(t, l, h, get("/style.css"), func(c *client) bool { return c.closed || c.headerEnd })
		if c.status != 200 || string(c.body) != "style.css" || len(app.ex) != 0 {
			t.Errorf("a file: status %d body %q, the app got %d requests", c.status, c.body, len(app.ex))
		}
		serveOn(t, l, h, get("/api/x"), func(*client) bool { return len(app.ex) == 1 })
		if got := app.last(t).req.Path; got != "/api/x" {
			t.Errorf("no file: the app got %s", got)
		}
	})
}

// TestFileServerRoot: file_server serves under its own root, else the
// root directive's; without pass_thru a missing file is its 404.
func TestFileServerRoot(t *testing.T) {
	set, own := fileTree(t, "f"), fileTree(t, "g")
	onLoops(t, func(t *testing.T, l *netpoll.Loop) {
		files := fileserver.New(fileserver.Options{})
		for _, tc := range []struct {
			routes []Node
			path   string
			status int
			body   string
		}{
			{[]Node{{Do: &SetRoot{Root: set}}, {Do: &FileServer{Files: files}}}, "/f", 200, "f"},
			{[]Node{{Do: &SetRoot{Root: set}}, {Do: &FileServer{Root: own, Files: files}}}, "/g", 200, "g"},
			{[]Node{{Do: &SetRoot{Root: set}}, {Do: &FileServer{Files: files}}}, "/g", 404, ""},
		} {
			h := NewHandler(&Table{Nodes: tc.routes}, nil, nil, l)
			c, _ := serveOn(t, l, h, get(tc.path), func(c *client) bool { return c.closed || c.headerEnd })
			if c.status != tc.status || string(c.body) != tc.body {
				t.Errorf("%s: status %d body %q, want %d %q", tc.path, c.status, c.body, tc.status, tc.body)
			}
		}
	})
}
