package app

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// spaIndex is a built front end's page: its script asks the API and
// writes the answer, and the route the browser is on, into the DOM.
const spaIndex = `<!doctype html>
<html><head><link rel="stylesheet" href="/assets/app.css"></head>
<body><pre id="out">PENDING</pre><script src="/assets/app.js"></script></body></html>
`

const spaScript = `(async () => {
	const r = await fetch("/api/hello");
	const css = getComputedStyle(document.body).marginLeft;
	document.getElementById("out").textContent =
		"RESULT route=" + location.pathname + " api=" + r.status + ":" + (await r.text()) + " css=" + css + " END";
})();
`

var spaResult = regexp.MustCompile(`RESULT (.*) END`)

// TestSinglePageAppInBrowser: the common layout end to end in headless
// Chromium — a built front end served by file_server with try_files
// {path} /index.html, /api/* to an app — opened on a client-side route:
// the page, its script and its stylesheet come from the files, and the
// script's answer from the app, over HTTP/2 and HTTP/1.1 on every poller
// backend.
func TestSinglePageAppInBrowser(t *testing.T) {
	chromium := testenv.Tool(t, "chromium", "chromium")
	app := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the app at %s", r.URL.Path)
	}))
	root := siteTree(t, map[string]string{"index.html": spaIndex, "assets/app.js": spaScript,
		"assets/app.css": "body { margin-left: 7px; }"})
	site := fmt.Sprintf(`	root * %s
	handle /api/* {
		reverse_proxy %s
	}
	handle {
		try_files {path} /index.html
		file_server
	}`, root, app)
	// A browser per backend is the cost here: -short runs one.
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		port, _ := startSite(t, backend, site)
		for _, mode := range []struct {
			name  string
			flags []string
		}{{"h2", nil}, {"h1", []string{"--disable-http2"}}} {
			t.Run(mode.name, func(t *testing.T) {
				got := dumpDOM(t, chromium, fmt.Sprintf("https://localhost:%d/app/settings", port), spaResult,
					append([]string{"--ignore-certificate-errors"}, mode.flags...)...)
				if want := "route=/app/settings api=200:hello from the app at /api/hello css=7px"; got != want {
					t.Errorf("page: %q, want %q", got, want)
				}
			})
		}
	})
}
