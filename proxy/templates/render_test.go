package templates

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func input(t *testing.T, root string) *Input {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://example.com:8443/page?x=1", nil)
	req.Host = "example.com:8443"
	req.RemoteAddr = "192.0.2.7:4567"
	req.Header.Set("Cookie", "theme=dark")
	req.Header.Set("X-Name", "ann")
	orig := req.Clone(req.Context())
	orig.URL.Path = "/orig"
	return &Input{Req: req, Orig: orig, ClientIP: "192.0.2.7", Root: root, Header: http.Header{"Content-Type": {"text/html"}},
		Placeholder: func(name string) string { return "[" + name + "]" }}
}

// TestRender: Caddy's template context and functions over a real
// directory: include with args, import, readFile, listFiles, fileExists,
// front matter of each kind, markdown, stripHTML, placeholders, sprig,
// .RespHeader edits, and httpError's status.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"part.html": `part {{index .Args 0}} {{.Req.URL.Path}}`,
		"defs.html": `{{define "greet"}}hello {{.}}{{end}}`,
		"plain.txt": "raw {{not rendered}}",
		"docs/a.md": "",
		"post.md":   "---\ntitle: Hi\ntags: [a, b]\n---\n# Body\n",
		"post.toml": "+++\ntitle = \"T\"\n+++\nbody",
		"post.json": "{\n\"title\": \"J\"\n}\nbody",
		"nofm.md":   "just body",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	for src, want := range map[string]string{
		`{{include "part.html" "one"}}`:                    "part one /page",
		`{{import "defs.html"}}{{template "greet" "bob"}}`: "hello bob",
		`{{readFile "plain.txt"}}`:                         "raw {{not rendered}}",
		`{{listFiles "docs"}}`:                             "[a.md]",
		`{{fileExists "nope"}} {{fileExists "post.md"}}`:   "false true",
		`{{$d := splitFrontMatter (readFile "post.md")}}{{$d.Meta.title}} {{index $d.Meta.tags 1}}|{{$d.Body}}`: "Hi b|\n# Body\n",
		`{{(splitFrontMatter (readFile "post.toml")).Meta.title}}`:                                              "T",
		`{{(splitFrontMatter (readFile "post.json")).Meta.title}}`:                                              "J",
		`{{(splitFrontMatter (readFile "nofm.md")).Body}}`:                                                      "just body",
		`{{markdown "# Title\n\n*x*"}}`:                                                                         "<h1 id=\"title\">Title</h1>\n<p><em>x</em></p>\n",
		`{{stripHTML "<b title='a>b'>bold</b> > x"}}`:                                                           "bold > x",
		`{{ph "host"}} {{placeholder "uri"}}`:                                                                   "[host] [uri]",
		`{{.Host}} {{.RemoteIP}} {{.ClientIP}} {{.Cookie "theme"}}`:                                             "example.com 192.0.2.7 192.0.2.7 dark",
		`{{.Req.Header.Get "X-Name"}} {{.OriginalReq.URL.Path}}`:                                                "ann /orig",
		`{{upper "abc"}} {{"a,b" | splitList "," | join "+"}}`:                                                  "ABC a+b",
		`{{.RespHeader.Set "X-Set" "v"}}done`:                                                                   "done",
		`{{humanize "size" "2048"}}`:                                                                            "2.0 kB",
		`{{pathEscape "a b/c"}}`:                                                                                "a%20b%2Fc",
	} {
		in := input(t, dir)
		r := Render(&Config{}, in, "/page", []byte(src))
		if r.Err != nil || string(r.Body) != want {
			t.Errorf("%s: %q %v, want %q", src, r.Body, r.Err, want)
		}
		if strings.Contains(src, "X-Set") && in.Header.Get("X-Set") != "v" {
			t.Errorf(".RespHeader.Set did not set the field")
		}
	}
	in := input(t, dir)
	r := Render(&Config{}, in, "/page", []byte(`before{{httpError 404}}`))
	if r.Status != 404 || in.Header.Get("Content-Type") != "" {
		t.Errorf("httpError 404: status %d, content-type %q; want 404 and no content-type", r.Status, in.Header.Get("Content-Type"))
	}
	// A status that is no final answer is a 500 (FuzzSites found
	// httpError 99 leaving the client waiting).
	for _, code := range []string{"99", "103", "600", "-1"} {
		r = Render(&Config{}, input(t, dir), "/page", []byte(`{{httpError `+code+`}}`))
		if r.Status != 500 || r.Err == nil {
			t.Errorf("httpError %s: %d %v, want 500 and its error", code, r.Status, r.Err)
		}
	}
	r = Render(&Config{}, input(t, dir), "/page", []byte(`{{broken`))
	if r.Status != 500 || r.Err == nil {
		t.Errorf("a broken template: %d %v, want 500 and its error", r.Status, r.Err)
	}
	r = Render(&Config{Delims: [2]string{"<%", "%>"}}, input(t, dir), "/page", []byte(`{{kept}} <% "x" %>`))
	if string(r.Body) != "{{kept}} x" {
		t.Errorf("between <%% %%>: %q", r.Body)
	}
	r = Render(&Config{}, input(t, dir), "/page", []byte(`{{readFile "../../etc/passwd"}}`))
	if r.Err == nil {
		t.Error("readFile left the root")
	}
	if !(&Config{}).Renders("text/html; charset=utf-8") || (&Config{}).Renders("image/png") || !(&Config{MIME: []string{"application/json"}}).Renders("application/json") {
		t.Error("Renders: wrong types")
	}
}
