package fileserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// browseTree makes a root to list: files of known sizes and times, two
// directories, a hidden file, a name that needs escaping, a link to a
// directory inside the root and one to a file outside it.
func browseTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	base := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	files := []struct {
		name string
		size int
	}{{"c.txt", 30}, {"A.txt", 10}, {"b.txt", 20}, {".secret", 5}, {`x<y>&"z'.txt`, 1}, {"a-dir/in.txt", 3}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a-dir"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "B-dir"), 0o755))
	for i, f := range files {
		p := filepath.Join(root, f.name)
		must(os.WriteFile(p, []byte(strings.Repeat("x", f.size)), 0o644))
		at := base.Add(time.Duration(i) * time.Hour)
		must(os.Chtimes(p, at, at))
	}
	must(os.WriteFile(filepath.Join(dir, "secret"), []byte("outside the root"), 0o644))
	must(os.Symlink("a-dir", filepath.Join(root, "inlink")))
	must(os.Symlink("../secret", filepath.Join(root, "outlink")))
	for i, l := range []string{"inlink", "outlink"} { // a link's own time, older than the rest
		at := unix.NsecToTimespec(base.Add(time.Duration(-10-i) * time.Hour).UnixNano())
		must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(root, l), []unix.Timespec{at, at}, unix.AT_SYMLINK_NOFOLLOW))
	}
	for i, d := range []string{"a-dir", "B-dir", "."} {
		at := base.Add(time.Duration(-i-1) * time.Hour)
		must(os.Chtimes(filepath.Join(root, d), at, at))
	}
	return root
}

// browseAsk is one request of the listing tests: its target and fields.
func browseAsk(t *testing.T, s *Server, root, target string, header map[string]string) *plan {
	t.Helper()
	cur := pathOnly(target)
	rel, _, err := Clean(cur)
	if err != nil {
		t.Fatal(err)
	}
	ask := &listAsk{query: queryOnly(target), accept: header["accept"], secure: true}
	if v, ok := header["cookie"]; ok {
		ask.cookies = []string{v}
	}
	return s.prepare(target2(root, rel, target, ask), &conditions{method: "GET", ifModified: header["if-modified-since"]})
}

func target2(root, rel, to string, ask *listAsk) target {
	return target{root: root, rel: rel, orig: to, cur: pathOnly(to), list: ask}
}

func field(p *plan, name string) string {
	var vs []string
	for _, f := range p.fields {
		if f.Name == name {
			vs = append(vs, f.Value)
		}
	}
	return strings.Join(vs, "\n")
}

// names is the listing's names, in order, from its JSON.
func names(t *testing.T, p *plan) string {
	t.Helper()
	if p.status != 200 || field(p, "content-type") != "application/json; charset=utf-8" {
		t.Fatalf("status %d, type %q", p.status, field(p, "content-type"))
	}
	var items []map[string]any
	if err := json.Unmarshal(p.first, &items); err != nil {
		t.Fatalf("%v: %s", err, p.first)
	}
	var out []string
	for _, it := range items {
		out = append(out, it["name"].(string))
	}
	return strings.Join(out, " ")
}

// TestBrowseListing: what a listing holds and in which order: Caddy's
// sorts and orders, from the query, the directive and the cookies, the
// cookies it sets, limit and offset, hidden files left out, links.
func TestBrowseListing(t *testing.T) {
	root := browseTree(t)
	s := New(Options{Browse: &Browse{}, Hide: NewHide([]string{".secret"})})
	asJSON := map[string]string{"accept": "application/json"}
	all := `a-dir/ B-dir/ inlink/ A.txt b.txt c.txt outlink x<y>&"z'.txt`
	for _, c := range []struct {
		target, cookie, want string
		cookies              string // the set-cookie fields
	}{
		{"/", "", all, ""},
		{"/?sort=name", "", `a-dir/ A.txt B-dir/ b.txt c.txt inlink/ outlink x<y>&"z'.txt`,
			"sort=name; HttpOnly; Secure; SameSite=Lax"},
		{"/?sort=namedirfirst&order=desc", "", `x<y>&"z'.txt outlink c.txt b.txt A.txt inlink/ B-dir/ a-dir/`,
			"sort=namedirfirst; HttpOnly; Secure; SameSite=Lax\norder=desc; HttpOnly; Secure; SameSite=Lax"},
		// Directories first, by name, then files by size (the link out
		// of the root is its own size: 9 bytes of "../secret").
		{"/?sort=size", "", `a-dir/ B-dir/ inlink/ x<y>&"z'.txt outlink A.txt b.txt c.txt`, "sort=size; HttpOnly; Secure; SameSite=Lax"},
		{"/?sort=time&order=desc&limit=2", "", `x<y>&"z'.txt b.txt`, "sort=time; HttpOnly; Secure; SameSite=Lax\norder=desc; HttpOnly; Secure; SameSite=Lax"},
		{"/?offset=3&limit=2", "", `A.txt b.txt`, ""},
		{"/?offset=100", "", ``, ""},
		{"/?limit=100", "", all, ""},
		{"/?limit=-1&offset=x", "", all, ""},
		// The cookies stand in for a query that says nothing.
		{"/", "sort=name; order=desc", `x<y>&"z'.txt outlink inlink/ c.txt b.txt B-dir/ A.txt a-dir/`, ""},
		{"/?order=asc", "sort=name; order=desc", `a-dir/ A.txt B-dir/ b.txt c.txt inlink/ outlink x<y>&"z'.txt`,
			"order=asc; HttpOnly; Secure; SameSite=Lax"},
	} {
		h := map[string]string{"accept": asJSON["accept"]}
		if c.cookie != "" {
			h["cookie"] = c.cookie
		}
		p := browseAsk(t, s, root, c.target, h)
		if got := names(t, p); got != c.want {
			t.Errorf("%s (cookie %q): %s\nwant %s", c.target, c.cookie, got, c.want)
		}
		if got := field(p, "set-cookie"); got != c.cookies {
			t.Errorf("%s: set-cookie %q, want %q", c.target, got, c.cookies)
		}
		if got := field(p, "vary"); got != "Accept, Accept-Encoding" {
			t.Errorf("%s: vary %q", c.target, got)
		}
	}

	// The directive's sort comes before the cookie's, after the query's.
	sized := New(Options{Browse: &Browse{Sort: SortSize, Order: OrderDesc}, Hide: NewHide([]string{".secret"})})
	p := browseAsk(t, sized, root, "/", map[string]string{"accept": "application/json", "cookie": "sort=name"})
	if got := names(t, p); got != `c.txt b.txt A.txt outlink x<y>&"z'.txt inlink/ B-dir/ a-dir/` {
		t.Errorf("sort size desc: %s", got)
	}

	// file_limit reads that many entries, in the directory's order.
	limited := New(Options{Browse: &Browse{FileLimit: 2}})
	p = browseAsk(t, limited, root, "/", asJSON)
	var items []item
	if err := json.Unmarshal(p.first, &items); err != nil || len(items) != 2 {
		t.Errorf("file_limit 2: %d items, %v", len(items), err)
	}
}

// TestBrowseItems: each item's fields as Caddy writes them, a link's
// target under the root followed and one outside it not, and the
// answer's Last-Modified: the newest of the directory and its items.
func TestBrowseItems(t *testing.T) {
	root := browseTree(t)
	s := New(Options{Browse: &Browse{RevealSymlinks: true}, Hide: NewHide([]string{".secret"})})
	p := browseAsk(t, s, root, "/?sort=name", map[string]string{"accept": "text/html, application/json"})
	var items []map[string]any
	if err := json.Unmarshal(p.first, &items); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, it := range items {
		byName[it["name"].(string)] = it
	}
	if it := byName["A.txt"]; it["size"] != 10.0 || it["url"] != "./A.txt" || it["mod_time"] != "2024-05-06T08:08:09.123456789Z" ||
		it["mode"] != 420.0 || it["is_dir"] != false || it["is_symlink"] != false || it["symlink_path"] != nil {
		t.Errorf("A.txt: %v", it)
	}
	if it := byName["inlink/"]; it["is_dir"] != true || it["is_symlink"] != true || it["symlink_path"] != "a-dir" || it["url"] != "./inlink/" {
		t.Errorf("inlink: %v", it)
	}
	if it := byName["outlink"]; it["is_dir"] != false || it["size"] != 9.0 || it["symlink_path"] != "../secret" {
		t.Errorf("outlink: %v", it)
	}
	if it := byName[`x<y>&"z'.txt`]; it["url"] != "./x%3Cy%3E&%22z%27.txt" {
		t.Errorf("escaped: %v", it)
	}
	// encoding/json's HTML escaping, as Caddy's.
	if !strings.Contains(string(p.first), `"name":"x\u003cy\u003e\u0026\"z'.txt"`) {
		t.Errorf("JSON escaping: %s", p.first)
	}
	// The newest item: x<y>&"z'.txt at base+4h (the hidden file at +3h
	// does not count; a-dir/in.txt is not in this directory).
	if got := field(p, "last-modified"); got != "Mon, 06 May 2024 11:08:09 GMT" {
		t.Errorf("last-modified %q", got)
	}
	if p := browseAsk(t, s, root, "/", map[string]string{"if-modified-since": "Mon, 06 May 2024 11:08:09 GMT"}); p.status != 304 || p.first != nil {
		t.Errorf("if-modified-since: %d", p.status)
	}
	if p := browseAsk(t, s, root, "/", map[string]string{"if-modified-since": "Mon, 06 May 2024 11:08:08 GMT"}); p.status != 200 {
		t.Errorf("if-modified-since earlier: %d", p.status)
	}
}

// TestBrowseAnswers: HTML (escaped), text/plain, the redirect to the
// trailing slash, and what is not listed.
func TestBrowseAnswers(t *testing.T) {
	root := browseTree(t)
	s := New(Options{Browse: &Browse{}, Hide: NewHide([]string{".secret", "B-dir"}), NoCanonical: true})
	p := browseAsk(t, s, root, "/", nil)
	page := string(p.first)
	if p.status != 200 || field(p, "content-type") != "text/html; charset=utf-8" {
		t.Fatalf("html: %d %q", p.status, field(p, "content-type"))
	}
	for _, want := range []string{`<title>Index of /</title>`, `<a href="./x%3Cy%3E&amp;%22z%27.txt">x&lt;y&gt;&amp;&#34;z&#39;.txt</a>`,
		`<a href="./a-dir/">a-dir/</a>`, `2024-05-06 07:08:09 UTC`, `30 B`} {
		if !strings.Contains(page, want) {
			t.Errorf("html lacks %s:\n%s", want, page)
		}
	}
	for _, not := range []string{"<y>", ".secret", "B-dir", `href="../"`, "http:", "https:", "<script"} {
		if strings.Contains(page, not) {
			t.Errorf("html holds %s", not)
		}
	}
	if field(p, "content-length") != "" && field(p, "content-length") != itoa(len(page)) {
		t.Errorf("content-length %s, body %d", field(p, "content-length"), len(page))
	}
	sub := browseAsk(t, s, root, "/a-dir/", nil)
	if !strings.Contains(string(sub.first), `<a href="../">../</a>`) || !strings.Contains(string(sub.first), "Index of /a-dir/") {
		t.Errorf("sub: %s", sub.first)
	}

	p = browseAsk(t, s, root, "/?sort=size", map[string]string{"accept": "text/plain"})
	// Tabs as padding: text/tabwriter aligns left whatever the flag.
	want := "Name\t\tSize\tModified\n----\t\t----\t--------\n"
	if field(p, "content-type") != "text/plain; charset=utf-8" || !strings.HasPrefix(string(p.first), want) ||
		!strings.Contains(string(p.first), "c.txt\t\t30 B\tMay 6, 2024 at 07:08:09\n") {
		t.Errorf("plain: %q", p.first)
	}

	// Without its trailing slash, a directory is redirected to it, even
	// with disable_canonical_uris (Caddy's listing needs it).
	p = browseAsk(t, s, root, "/a-dir?x=1", nil)
	if p.status != 308 || field(p, "location") != "/a-dir/?x=1" {
		t.Errorf("redirect: %d %q", p.status, field(p, "location"))
	}
	// Caddy's redirect is to the decoded path, cleaned, with the bytes
	// outside ASCII escaped (Go's http.Redirect).
	os.Mkdir(filepath.Join(root, "dir space"), 0o755)
	os.Mkdir(filepath.Join(root, "ü"), 0o755)
	for target, want := range map[string]string{"/dir%20space": "/dir space/", "/%C3%BC?a=%20": "/%c3%bc/?a=%20", "/a-dir?": "/a-dir/"} {
		if p := browseAsk(t, s, root, target, nil); p.status != 308 || field(p, "location") != want {
			t.Errorf("%s: %d %q, want %q", target, p.status, field(p, "location"), want)
		}
	}
	if csp := field(browseAsk(t, s, root, "/", nil), "content-security-policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") {
		t.Errorf("page CSP %q", csp)
	}
	for _, target := range []string{"/B-dir/", "/missing/", "/.secret"} {
		if p := browseAsk(t, s, root, target, nil); p.status != 404 {
			t.Errorf("%s: %d", target, p.status)
		}
	}
	// An index file is served rather than a listing.
	os.WriteFile(filepath.Join(root, "a-dir", "index.html"), []byte("index"), 0o644)
	if p := browseAsk(t, s, root, "/a-dir/", nil); p.status != 200 || string(p.first) != "index" {
		t.Errorf("index: %d %q", p.status, p.first)
	}
	// Without browse, a directory without an index is not there.
	if p := browseAsk(t, New(Options{}), root, "/", nil); p.status != 404 {
		t.Errorf("no browse: %d", p.status)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
