package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestFileServerBrowse: file_server browse over HTTP/2 and HTTP/1.1 on
// every poller backend: a directory without an index file listed as JSON
// or HTML (names escaped, hidden files left out), sorted and cut by the
// query with the cookies that keep the choice, the redirect to the
// trailing slash, HEAD, and a listing larger than a chunk.
func TestFileServerBrowse(t *testing.T) {
	root := siteTree(t, map[string]string{
		"files/b.txt": "bb", "files/a.txt": "a", "files/c.txt": "ccc", "files/.secret": "hidden",
		"files/<i>&.txt": "x", "files/sub/x.txt": "x", "index.html": "home",
	})
	many := filepath.Join(root, "many")
	os.Mkdir(many, 0o755)
	for i := range 3000 { // about 300 KiB of JSON: many chunks and frames
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("file-%04d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site := fmt.Sprintf("\troot * %s\n\tfile_server browse {\n\t\thide .secret\n\t}", root)
	asJSON := map[string]string{"Accept": "application/json"}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				list := func(path string, header map[string]string) ([]string, *http.Response) {
					t.Helper()
					x := exchange{method: "GET", path: path, header: header, status: 200, body: "*",
						want: map[string]string{"Content-Type": "application/json; charset=utf-8", "Vary": "Accept, Accept-Encoding"}}
					x.run(t, c, base) // the status and fields; then the body, parsed
					req, _ := http.NewRequest("GET", base+path, nil)
					for k, v := range header {
						req.Header.Set(k, v)
					}
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					var items []struct {
						Name  string `json:"name"`
						URL   string `json:"url"`
						IsDir bool   `json:"is_dir"`
					}
					b, _ := io.ReadAll(resp.Body)
					if err := json.Unmarshal(b, &items); err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(b)) {
						t.Errorf("%s: content-length %s, body %d", path, cl, len(b))
					}
					var names []string
					for _, it := range items {
						names = append(names, it.Name)
					}
					return names, resp
				}
				names, _ := list("/files/", asJSON)
				if got := strings.Join(names, " "); got != "sub/ <i>&.txt a.txt b.txt c.txt" {
					t.Errorf("listing: %s", got)
				}
				names, resp := list("/files/?sort=size&order=desc&limit=2", asJSON)
				if got := strings.Join(names, " "); got != "c.txt b.txt" {
					t.Errorf("size desc limit 2: %s", got)
				}
				if got := resp.Header.Values("Set-Cookie"); strings.Join(got, "|") != "sort=size; HttpOnly; Secure; SameSite=Lax|order=desc; HttpOnly; Secure; SameSite=Lax" {
					t.Errorf("set-cookie %q", got)
				}
				names, _ = list("/files/?offset=1", map[string]string{"Accept": "application/json", "Cookie": "sort=name; order=desc"})
				if got := strings.Join(names, " "); got != "c.txt b.txt a.txt <i>&.txt" {
					t.Errorf("cookie name desc, offset 1: %s", got)
				}
				if names, _ = list("/many/", asJSON); len(names) != 3000 || names[2999] != "file-2999.txt" {
					t.Errorf("many: %d items", len(names))
				}
				for _, x := range []exchange{
					{method: "GET", path: "/files", status: 308, body: `<a href="/files/">Permanent Redirect</a>.` + "\n\n",
						want: map[string]string{"Location": "/files/"}},
					{method: "GET", path: "/files/sub?sort=time", header: asJSON, status: 308, body: "*",
						want: map[string]string{"Location": "/files/sub/?sort=time"}},
					{method: "GET", path: "/files/", status: 200, body: "<!DOCTYPE html>*",
						want: map[string]string{"Content-Type": "text/html; charset=utf-8", "Vary": "Accept, Accept-Encoding"}},
					{method: "GET", path: "/files/.secret", status: 404, body: ""},
					{method: "GET", path: "/files/sub/x.txt", status: 200, body: "x"},
					{method: "GET", path: "/", status: 200, body: "home"}, // an index file still comes first
				} {
					x.run(t, c, base)
				}
				// The page: escaped names linked, the hidden file not there.
				resp, err := c.Get(base + "/files/")
				if err != nil {
					t.Fatal(err)
				}
				page, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				for _, want := range []string{`<a href="./%3Ci%3E&amp;.txt">&lt;i&gt;&amp;.txt</a>`, `<a href="./sub/">sub/</a>`, `<a href="../">../</a>`} {
					if !strings.Contains(string(page), want) {
						t.Errorf("page lacks %s", want)
					}
				}
				if strings.Contains(string(page), ".secret") || strings.Contains(string(page), "<i>") {
					t.Errorf("page holds a hidden or unescaped name:\n%s", page)
				}
				// HEAD: the head of GET's answer, no body.
				req, _ := http.NewRequest("HEAD", base+"/files/", nil)
				resp, err = c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || len(b) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len(page)) {
					t.Errorf("HEAD: %d, %d bytes, content-length %q (page %d)", resp.StatusCode, len(b), resp.Header.Get("Content-Length"), len(page))
				}
			})
		}
	})
}
