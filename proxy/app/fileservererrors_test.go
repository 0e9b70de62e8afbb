package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestFileServerErrorsReachHandleErrors: a file that is not there (or is
// hidden) is an error, as in Caddy: file_server's 404 and try_files'
// "=404" are rendered by the site's handle_errors, here as Caddy's
// documentation example does (rewrite to /{err.status_code}.html,
// file_server), the page served with the error's status; without
// handle_errors they stay a bare 404. Every backend, both protocols.
func TestFileServerErrorsReachHandleErrors(t *testing.T) {
	root := siteTree(t, map[string]string{"index.html": "home", "404.html": "not here", "secret.key": "KEY"})
	site := fmt.Sprintf(`	root * %s
	handle_errors {
		root * %[1]s
		rewrite * /{err.status_code}.html
		file_server
	}
	handle /spa/* {
		try_files {path} =404
		file_server
	}
	file_server {
		hide *.key
	}`, root)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		bare, bareCls := startSite(t, backend, fmt.Sprintf("\troot * %s\n\tfile_server", root))
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				base := fmt.Sprintf("https://localhost:%d", port)
				for _, x := range []exchange{
					{method: "GET", path: "/", status: 200, body: "home"},
					{method: "GET", path: "/missing.txt", status: 404, body: "not here"},
					{method: "GET", path: "/secret.key", status: 404, body: "not here"},
					{method: "GET", path: "/spa/route", status: 404, body: "not here"},
					{method: "HEAD", path: "/missing.txt", status: 404, body: "", want: map[string]string{"Content-Length": "8"}},
				} {
					x.run(t, c, base)
				}
				x := exchange{method: "GET", path: "/missing.txt", status: 404, body: ""}
				x.run(t, bareCls[proto], fmt.Sprintf("https://localhost:%d", bare))
			})
		}
	})
}
