package app

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/fileserver"
)

// siteTree writes files (name to content) under a new directory beside
// a secret that no request may read, and returns the root.
func siteTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside.txt", filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(root, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("app.js", filepath.Join(root, "link.js")); err != nil {
		t.Fatal(err)
	}
	return root
}

// caddyETag is Caddy's entity tag for the file at p.
func caddyETag(t *testing.T, p string) (etag, lastModified string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return `"` + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "-" + strconv.FormatInt(fi.Size(), 36) + `"`,
		fi.ModTime().UTC().Format(http.TimeFormat)
}

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// TestFileServer: Caddy's root and file_server over HTTP/2 and HTTP/1.1
// on every poller backend: index files and canonical redirects, content
// types, Caddy's ETag with 304 and 412, Last-Modified, ranges (one, many,
// unsatisfiable, If-Range), HEAD, 405, hidden files, precompressed
// sidecars with Vary, a file larger than a chunk, and every way out of
// the root refused without reading outside it.
func TestFileServer(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 12000) // 192000 bytes: several chunks
	js := "console.log('app');\n"
	root := siteTree(t, map[string]string{
		"index.html": "<h1>home</h1>", "app.js": js, "app.js.gz": gzipped(js), "app.js.zst": "ZSTD-BYTES",
		"style.css": "body{}", "big.txt": big, "blob": "raw", "sub/index.html": "sub index",
		"docs/readme.txt": "readme", "tls.key": "KEY", ".git/config": "[core]", "empty.txt": "",
	})
	// The file_server is in a file the Caddyfile imports, in the root:
	// Caddy hides its configuration files.
	imported := filepath.Join(root, "site.caddy")
	os.WriteFile(imported, []byte("file_server {\n\thide *.key .git\n\tprecompressed zstd gzip\n}\n"), 0o644)
	site := fmt.Sprintf("\troot * %s\n\timport %s", root, imported)
	etag, lastMod := caddyETag(t, filepath.Join(root, "index.html"))
	gzETag, _ := caddyETag(t, filepath.Join(root, "app.js.gz"))
	bigETag, _ := caddyETag(t, filepath.Join(root, "big.txt"))
	html := map[string]string{"Content-Type": "text/html; charset=utf-8", "Etag": etag, "Last-Modified": lastMod,
		"Vary": "Accept-Encoding", "Accept-Ranges": "bytes", "Content-Length": "13"}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/", status: 200, body: "<h1>home</h1>", want: html},
					{method: "GET", path: "/index.html", status: 200, body: "<h1>home</h1>", want: html},
					{method: "GET", path: "/?q=1", status: 200, body: "<h1>home</h1>"},
					{method: "GET", path: "/sub", status: 308, body: `<a href="/sub/">Permanent Redirect</a>.` + "\n\n", want: map[string]string{"Location": "/sub/"}},
					{method: "GET", path: "/sub?a=b", status: 308, body: `<a href="/sub/?a=b">Permanent Redirect</a>.` + "\n\n", want: map[string]string{"Location": "/sub/?a=b"}},
					{method: "GET", path: "/sub/", status: 200, body: "sub index"},
					{method: "GET", path: "/style.css/", status: 308, body: `<a href="/style.css">Permanent Redirect</a>.` + "\n\n", want: map[string]string{"Location": "/style.css"}},
					{method: "GET", path: "/style.css", status: 200, body: "body{}", want: map[string]string{"Content-Type": "text/css; charset=utf-8"}},
					{method: "GET", path: "/blob", status: 200, body: "raw", want: map[string]string{"Content-Type": ""}},
					{method: "GET", path: "/empty.txt", status: 200, body: "", want: map[string]string{"Content-Length": "0"}},
					{method: "GET", path: "/docs/", status: 404, body: ""}, // no index, browse off
					{method: "GET", path: "/missing", status: 404, body: ""},
					{method: "GET", path: "/tls.key", status: 404, body: ""},
					{method: "GET", path: "/.git/config", status: 404, body: ""},
					{method: "GET", path: "/site.caddy", status: 404, body: ""},
					{method: "GET", path: "/link.js", status: 200, body: js}, // a link inside the root
					{method: "POST", path: "/index.html", status: 405, body: "", want: map[string]string{"Allow": "GET, HEAD", "Vary": "Accept-Encoding"}},
					{method: "POST", path: "/sub", status: 308, body: "", want: map[string]string{"Location": "/sub/"}},
					{method: "HEAD", path: "/big.txt", status: 200, body: "", want: map[string]string{"Content-Length": "192000", "Etag": bigETag}},
					// Conditional requests.
					{method: "GET", path: "/", header: map[string]string{"If-None-Match": etag}, status: 304, body: "",
						want: map[string]string{"Etag": etag, "Content-Type": ""}},
					{method: "GET", path: "/", header: map[string]string{"If-None-Match": `"other", W/` + etag}, status: 304},
					{method: "GET", path: "/", header: map[string]string{"If-Modified-Since": lastMod}, status: 304, body: ""},
					{method: "GET", path: "/", header: map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": lastMod}, status: 200, body: "<h1>home</h1>"},
					{method: "GET", path: "/", header: map[string]string{"If-Match": `"other"`}, status: 412, body: "",
						want: map[string]string{"Etag": etag, "Last-Modified": lastMod, "Content-Type": "text/html; charset=utf-8"}},
					{method: "GET", path: "/app.js", header: map[string]string{"If-None-Match": gzETag, "Accept-Encoding": "gzip"}, status: 304,
						want: map[string]string{"Content-Encoding": "", "Etag": gzETag}},
					{method: "GET", path: "/", header: map[string]string{"If-Match": etag}, status: 200, body: "<h1>home</h1>"},
					// Ranges.
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=0-9"}, status: 206, body: "0123456789",
						want: map[string]string{"Content-Range": "bytes 0-9/192000", "Content-Length": "10"}},
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=-3"}, status: 206, body: "def"},
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=191990-"}, status: 206, body: "6789abcdef"},
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=192000-"}, status: 416,
						body: "invalid range: failed to overlap\n", want: map[string]string{"Content-Range": "bytes */192000", "Etag": ""}},
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=5-4"}, status: 416,
						body: "invalid range\n", want: map[string]string{"Content-Range": ""}},
					{method: "GET", path: "/big.txt", header: map[string]string{"Range": "bytes=0-3", "If-Range": bigETag}, status: 206, body: "0123"},
					{method: "GET", path: "/index.html", header: map[string]string{"Range": "bytes=0-3", "If-Range": `"stale"`}, status: 200, body: "<h1>home</h1>"},
					// Precompressed sidecars, by the client's preference and
					// then the directive's order.
					{method: "GET", path: "/app.js", header: map[string]string{"Accept-Encoding": "gzip"}, status: 200, body: gzipped(js),
						want: map[string]string{"Content-Encoding": "gzip", "Vary": "Accept-Encoding", "Etag": gzETag,
							"Content-Type": "text/javascript; charset=utf-8"}},
					{method: "GET", path: "/app.js", header: map[string]string{"Accept-Encoding": "gzip, zstd"}, status: 200, body: "ZSTD-BYTES",
						want: map[string]string{"Content-Encoding": "zstd"}},
					{method: "GET", path: "/app.js", header: map[string]string{"Accept-Encoding": "zstd;q=0.5, gzip"}, status: 200, body: gzipped(js)},
					{method: "GET", path: "/app.js", header: map[string]string{"Accept-Encoding": "identity"}, status: 200, body: js,
						want: map[string]string{"Content-Encoding": "", "Vary": "Accept-Encoding"}},
					// No way out of the root: dot segments, encoded or not,
					// stop at the root; links out of it are not there; NUL
					// and backslashes are refused.
					{method: "GET", path: "/%2e%2e/outside.txt", status: 404, body: ""},
					{method: "GET", path: "/sub/..%2f..%2foutside.txt", status: 404, body: ""},
					{method: "GET", path: "/%2E%2E%2F%2E%2E%2Foutside.txt", status: 404, body: ""},
					{method: "GET", path: "/out", status: 404, body: ""},
					{method: "GET", path: "/abs", status: 404, body: ""},
					{method: "GET", path: "/a%00b", status: 400, body: ""},
					{method: "GET", path: "/..%5coutside.txt", status: 400, body: ""},
				} {
					x.run(t, c, base)
				}
				// The whole of a file larger than a chunk.
				resp, err := c.Get(base + "/big.txt")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != big {
					t.Errorf("big.txt: %d, %d bytes, same=%v", resp.StatusCode, len(b), string(b) == big)
				}
				// Several ranges: multipart/byteranges, as net/http writes it.
				req, _ := http.NewRequest("GET", base+"/big.txt", nil)
				req.Header.Set("Range", "bytes=0-1, 16-17, 191999-")
				resp, err = c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				if resp.StatusCode != 206 || mt != "multipart/byteranges" {
					t.Fatalf("several ranges: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				mr := multipart.NewReader(resp.Body, params["boundary"])
				var parts []string
				for {
					p, err := mr.NextPart()
					if err != nil {
						break
					}
					pb, _ := io.ReadAll(p)
					parts = append(parts, p.Header.Get("Content-Range")+"="+string(pb))
				}
				resp.Body.Close()
				if got := strings.Join(parts, " "); got != "bytes 0-1/192000=01 bytes 16-17/192000=01 bytes 191999-191999/192000=f" {
					t.Errorf("several ranges: %s", got)
				}
			})
		}
	})
}

// TestTryFiles: Caddy's try_files and file matcher: a single-page app's
// fallback, a directory candidate, =404, a query on a candidate, the
// file matcher in a named matcher, and file_server's pass_thru, with
// every stat off the loop.
func TestTryFiles(t *testing.T) {
	up := echoOrigin(t, "api")
	root := siteTree(t, map[string]string{"index.html": "SPA", "app.js": "js", "docs/index.html": "docs", "page.html": "page",
		"pt/here.txt": "here"})
	site := fmt.Sprintf(`	root * %s
	handle /api/* {
		reverse_proxy %s
	}
	handle /strict/* {
		try_files {path} =404
		file_server
	}
	handle /q/* {
		try_files {path} /index.html?from={path}
		reverse_proxy %[2]s
	}
	handle /pt/* {
		route {
			file_server {
				pass_thru
			}
			respond "next {path}"
		}
	}
	@html file {path}.html
	handle @html {
		respond "html {http.request.uri}"
	}
	handle {
		try_files {path} {path}/ /index.html
		file_server
	}`, root, up)
	siteExchanges(t, site, []exchange{
		{method: "GET", path: "/app/settings", status: 200, body: "SPA"},
		{method: "GET", path: "/app.js", status: 200, body: "js"},
		// {path}/ rewrote it to the directory; as in Caddy, the
		// last element is unchanged, so the canonical redirect
		// still applies.
		{method: "GET", path: "/docs", status: 308, body: `<a href="/docs/">Permanent Redirect</a>.` + "\n\n", want: map[string]string{"Location": "/docs/"}},
		{method: "GET", path: "/docs/", status: 200, body: "docs"},
		{method: "GET", path: "/", status: 200, body: "SPA"},
		{method: "GET", path: "/api/hello?x=1", status: 200, body: "api /api/hello?x=1"},
		{method: "GET", path: "/strict/nothing", status: 404, body: ""},
		// {path} in the query is query-escaped, as Caddy's rewrite does.
		{method: "GET", path: "/q/x?a=1", status: 200, body: "api /index.html?from=%2Fq%2Fx"},
		{method: "GET", path: "/page", status: 200, body: "html /page"},
		// pass_thru: a missing file goes to the next handler.
		{method: "GET", path: "/pt/here.txt", status: 200, body: "here"},
		{method: "GET", path: "/pt/missing", status: 200, body: "next /pt/missing"},
		{method: "GET", path: "/pt/", status: 200, body: "next /pt/"},
	})
}

// TestTryFilesRootEntry: as in Caddy, a try_files entry that names the
// root ("/") never matches, since the root joined without a trailing slash
// must not be a directory; and "{path}" never matches a directory. So the
// request goes on unchanged: file_server's 308 for a directory without its
// slash, its 404 for a missing file.
func TestTryFilesRootEntry(t *testing.T) {
	root := siteTree(t, map[string]string{"index.html": "root", "sub/index.html": "sub", "a.txt": "a"})
	siteExchanges(t, fmt.Sprintf("\troot * %s\n\ttry_files {path} /\n\tfile_server", root), []exchange{
		{method: "GET", path: "/sub", status: 308, want: map[string]string{"Location": "/sub/"}, body: "*"},
		{method: "GET", path: "/missing", status: 404, body: ""},
		{method: "GET", path: "/sub/", status: 200, body: "sub"},
		{method: "GET", path: "/a.txt", status: 200, body: "a"},
		{method: "GET", path: "/", status: 200, body: "root"},
	})
}

// TestFileServerPoolFull: with every worker of the file pool held and
// its queue full, a file request is refused at once with 503 and
// Retry-After — nothing waits for room — while a request on the same
// connection, so the same loop, that needs no disk is answered.
func TestFileServerPoolFull(t *testing.T) {
	root := siteTree(t, map[string]string{"index.html": "home"})
	site := fmt.Sprintf("\trespond /ping pong\n\troot * %s\n\tfile_server", root)
	pool := fileserver.Shared()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for _, c := range cls {
			exchange{method: "GET", path: "/", status: 200, body: "home"}.run(t, c, base)
		}
		defer fillPool(t, pool)()
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				exchange{method: "GET", path: "/", status: 503, body: "", want: map[string]string{"Retry-After": "1"}}.run(t, c, base)
				exchange{method: "GET", path: "/ping", status: 200, body: "pong"}.run(t, c, base)
			})
		}
	})
}

// TestFileServerSlowClient: a client that stops reading a large file
// stops the disk reads: the pool reads a chunk only when the stream took
// the last, so what was read stays within the flow-control window and
// the socket buffers, far below the file; once the client reads again,
// the rest arrives whole.
func TestFileServerSlowClient(t *testing.T) {
	const size = 256 << 20
	root := siteTree(t, map[string]string{"index.html": "home"})
	f, err := os.Create(filepath.Join(root, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size) // sparse: no disk is written
	f.Close()
	site := fmt.Sprintf("\troot * %s\n\tfile_server", root)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				before := fileserver.BytesRead()
				resp, err := c.Get(base + "/huge.bin")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				first := make([]byte, 1<<10)
				if _, err := io.ReadFull(resp.Body, first); err != nil {
					t.Fatal(err)
				}
				// Wait for the reads to stop: the same count over many
				// polls (bounded; the assertion is on bytes, not time).
				last, same := int64(-1), 0
				for i := 0; i < 2000 && same < 50; i++ {
					if n := fileserver.BytesRead(); n == last {
						same++
					} else {
						last, same = n, 0
					}
					time.Sleep(2 * time.Millisecond)
				}
				t.Logf("read while the client stopped: %d KiB", (last-before)>>10)
				if read := last - before; read > 32<<20 {
					t.Errorf("a client that stopped after 1 KiB cost %d MiB of reads of a %d MiB file", read>>20, size>>20)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				if err != nil || n+int64(len(first)) != size {
					t.Errorf("the rest: %d bytes, %v; want %d", n, err, size-len(first))
				}
			})
		}
	})
}

// TestFileServerOffLoop: the disk is never touched on the loop. With
// every worker of the file pool held, a file request and a try_files
// request wait in the pool's queue, and a request on the same HTTP/2
// connection — so the same loop — that needs no disk is answered
// meanwhile; both are answered once the workers are free.
func TestFileServerOffLoop(t *testing.T) {
	root := siteTree(t, map[string]string{"index.html": "home", "a.txt": "a"})
	site := fmt.Sprintf("\trespond /ping pong\n\troot * %s\n\thandle /spa/* {\n\t\ttry_files {path} /index.html\n\t\tfile_server\n\t}\n\tfile_server", root)
	pool := fileserver.Shared()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		c := cls["h2"]
		exchange{method: "GET", path: "/ping", status: 200, body: "pong"}.run(t, c, base) // one connection for all
		release := holdWorkers(t, pool)
		defer release()
		file := getAsync(c, base+"/a.txt")
		spa := getAsync(c, base+"/spa/route")
		for i := 0; pool.Queued() < 2; i++ {
			if i == 10000 {
				t.Fatal("the requests never reached the pool's queue")
			}
			time.Sleep(time.Millisecond) // waiting for a state, bounded; nothing is timed
		}
		exchange{method: "GET", path: "/ping", status: 200, body: "pong"}.run(t, c, base)
		select {
		case got := <-file:
			t.Fatalf("a file answered while every worker was held: %s", got)
		case got := <-spa:
			t.Fatalf("try_files answered while every worker was held: %s", got)
		default:
		}
		release()
		if got := <-file; got != "200 a" {
			t.Errorf("file after the workers were freed: %q", got)
		}
		if got := <-spa; got != "200 home" {
			t.Errorf("try_files after the workers were freed: %q", got)
		}
	})
}

// TestFileServerOptions: root with a matcher, and file_server's own
// root, index, status and disable_canonical_uris, on every backend.
func TestFileServerOptions(t *testing.T) {
	main := siteTree(t, map[string]string{"index.html": "main"})
	alt := siteTree(t, map[string]string{"alt/x.txt": "alt x"})
	opts := siteTree(t, map[string]string{"o/home.htm": "home", "o/dir/home.htm": "dir home", "o/index.html": "not the index"})
	site := fmt.Sprintf(`	root * %s
	root /alt/* %s
	handle /o/* {
		file_server {
			root %s
			index home.htm
			status 203
			disable_canonical_uris
		}
	}
	file_server`, main, alt, opts)
	siteExchanges(t, site, []exchange{
		{method: "GET", path: "/", status: 200, body: "main"},
		{method: "GET", path: "/alt/x.txt", status: 200, body: "alt x"},
		{method: "GET", path: "/o/", status: 203, body: "home"},
		{method: "GET", path: "/o/dir", status: 203, body: "dir home"}, // no canonical redirect
		{method: "GET", path: "/o/home.htm/", status: 203, body: "home"},
	})
}

// siteExchanges runs exchanges against a site over HTTP/2 and HTTP/1.1
// on every poller backend.
func siteExchanges(t *testing.T, site string, xs []exchange) {
	t.Helper()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range xs {
					x.run(t, c, base)
				}
			})
		}
	})
}
