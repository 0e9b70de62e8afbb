package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestFileExpression: file() in an expression is Caddy's file matcher,
// in its three forms (no argument: {path}; candidates; a map with root,
// try_files and try_policy), asking the disk off the loops as the file
// matcher does, combined with other functions; a placeholder inside a
// CEL string is the text Caddy makes of it; on every backend and
// both protocols.
func TestFileExpression(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		www, other := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(www, "a.txt"), []byte("a"), 0o644)
		os.WriteFile(filepath.Join(www, "page.html"), []byte("p"), 0o644)
		os.MkdirAll(filepath.Join(other, "docs"), 0o755)
		os.WriteFile(filepath.Join(other, "docs", "index.html"), []byte("i"), 0o644)
		port, cls := startSite(t, backend, fmt.Sprintf(`	root * %s
	@exists `+"`file()`"+`
	@html `+"`path('/page') && file('/nope.txt', '/page.html')`"+`
	@other `+"`file({'root': '%s', 'try_files': ['/docs/index.html']}) && path('/docs')`"+`
	respond @exists "exists"
	respond @html "html"
	respond @other "other"
	@inside `+"`file('{path}.html')`"+`
	respond @inside "inside"
	respond "none"`, www, other))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/a.txt", status: 200, body: "exists"},
				{method: "GET", path: "/page", status: 200, body: "html"},
				{method: "GET", path: "/docs", status: 200, body: "other"},
				// Caddy rewrites a placeholder inside a CEL string into
				// the text of a call: no such file.
				{method: "GET", path: "/q", status: 200, body: "none"},
				{method: "GET", path: "/missing", status: 200, body: "none"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
