package oracle

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// browseTree is the directory both servers list: files of known sizes
// and times (two of the same size and time, so that the sorts' order of
// equals is compared too), directories, hidden entries, names that need
// escaping, a link to a directory and a broken link, all under the root.
func browseTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "www")
	base := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)
	files := []struct {
		name string
		size int
		at   time.Duration
	}{
		{"readme.md", 120, 0}, {"Zeta.txt", 5, time.Hour}, {"alpha.txt", 5, time.Hour}, {"big.bin", 40000, 2 * time.Hour},
		{".secret", 3, 3 * time.Hour}, {"a <b> & \"c\".html", 7, -time.Hour}, {"dir space/x.txt", 1, 0},
		{"docs/guide.txt", 2, 0}, {"private/key.pem", 9, 0}, {"ünï.txt", 11, 30 * time.Minute}, {"colon:name", 4, 0},
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	for _, f := range files {
		p := filepath.Join(root, f.name)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(strings.Repeat("x", f.size)), 0o644))
		must(os.Chtimes(p, base.Add(f.at), base.Add(f.at)))
	}
	must(os.Symlink("docs", filepath.Join(root, "docs-link")))
	must(os.Symlink("gone.txt", filepath.Join(root, "broken-link")))
	for i, d := range []string{"empty", "dir space", "docs", "private", "."} {
		at := base.Add(time.Duration(-i-2) * time.Hour)
		must(os.Chtimes(filepath.Join(root, d), at, at))
	}
	return root
}

// browseRequests are sent to both servers, over HTTP/1.1 and HTTP/2.
func browseRequests() []request {
	js := [2]string{"Accept", "application/json"}
	var out []request
	for _, path := range []string{"/", "/?sort=name", "/?sort=namedirfirst&order=desc", "/?sort=size", "/?sort=size&order=desc",
		"/?sort=time", "/?sort=time&order=desc", "/?sort=name&order=desc&limit=3&offset=1", "/?limit=2", "/?offset=4",
		"/?offset=100", "/?limit=0&offset=-1", "/?sort=bogus", "/?order=sideways", "/?sort=size&order=", "/docs/",
		"/empty/", "/dir%20space/", "/docs-link/", "/?layout=grid"} {
		out = append(out, request{method: "GET", path: path, header: [][2]string{js}})
	}
	return append(out,
		request{method: "GET", path: "/", header: [][2]string{js, {"Cookie", "sort=time; order=desc"}}},
		request{method: "GET", path: "/?sort=name", header: [][2]string{js, {"Cookie", "sort=time; order=desc"}}},
		request{method: "GET", path: "/", header: [][2]string{{"Accept", "text/html, application/json;q=0.9"}}},
		request{method: "GET", path: "/", header: [][2]string{{"Accept", "TEXT/PLAIN"}}},
		request{method: "GET", path: "/?sort=size", header: [][2]string{{"Accept", "text/plain"}}},
		request{method: "GET", path: "/", header: [][2]string{{"Accept", "text/html"}}},
		request{method: "GET", path: "/", header: [][2]string{js, {"If-Modified-Since", "Tue, 04 Mar 2025 07:06:07 GMT"}}},
		request{method: "GET", path: "/", header: [][2]string{js, {"If-Modified-Since", "Tue, 04 Mar 2025 07:06:06 GMT"}}},
		request{method: "HEAD", path: "/", header: [][2]string{js}},
		request{method: "POST", path: "/", header: [][2]string{js}, body: "x=1"},
		request{method: "GET", path: "/docs", header: [][2]string{js}},
		request{method: "GET", path: "/docs?sort=size", header: [][2]string{js}},
		request{method: "POST", path: "/docs", header: [][2]string{js}},
		request{method: "GET", path: "/dir%20space", header: [][2]string{js}},
		request{method: "GET", path: "/private/", header: [][2]string{js}},
		request{method: "GET", path: "/.secret", header: [][2]string{js}},
		request{method: "GET", path: "/missing/", header: [][2]string{js}},
		request{method: "GET", path: "/readme.md/", header: [][2]string{js}},
	)
}

// browseOwn are the fields each server has its own value for.
var browseOwn = map[string]bool{"resp date": true, "resp server": true, "resp alt-svc": true}

// TestOracleBrowse lists one directory tree through file_server browse
// with stock Caddy and with pollproxy (on every poller backend) and
// compares every answer: status, fields (Content-Type, Vary,
// Last-Modified, Set-Cookie, Location) and, but for the HTML page (each
// server's own), the body: the JSON listing and the text/plain one
// exactly, mod_time to the nanosecond. The page's body and its
// Content-Security-Policy are each server's own. A second site sets the sort in
// the Caddyfile, reveals links and disables canonical URIs.
func TestOracleBrowse(t *testing.T) {
	bin := buildCaddy(t)
	root := browseTree(t)
	https, plain := servertest.FreePort(t), servertest.FreePort(t)
	hosts := []string{"browse.test", "sorted.test"}
	certs := certificate(t, hosts)
	block := fmt.Sprintf("https://browse.test:%d {\n\ttls CERTFILE KEYFILE\n\troot * %s\n\tfile_server browse {\n\t\thide .secret private\n\t}\n}\n"+
		"https://sorted.test:%d {\n\ttls CERTFILE KEYFILE\n\troot * %s\n\tfile_server {\n\t\tdisable_canonical_uris\n\t\tbrowse {\n\t\t\treveal_symlinks\n\t\t\tsort time desc\n\t\t\tfile_limit 6\n\t\t}\n\t}\n}\n",
		https, root, https, root)
	global := fmt.Sprintf("\tadmin off\n\thttp_port %d\n\thttps_port %d\n\tdefault_bind 127.0.0.1\n\tstorage file_system STORAGE\n", plain, https)
	p := &plan{https: https, http: plain, sites: []site{{label: "browse", host: hosts[0]}, {label: "sorted", host: hosts[1]}},
		caddy:     "{\n" + global + "\tskip_install_trust\n}\n" + block,
		pollproxy: "{\n" + global + "}\n" + block}

	caddyAnswers := func() map[string]map[string]string {
		out, exited, stop := startCaddy(t, bin, certs.Replace(p.caddy))
		defer stop()
		if err := ready(p, exited); err != nil {
			t.Fatalf("Caddy: %v\n%s", err, out)
		}
		return askBrowse(p)
	}()
	// The comparison means something only if Caddy listed the tree.
	for k, want := range map[string]string{"browse h2 GET / [Accept: application/json]": `[{"name":"dir space/"`,
		"sorted h1 GET / [Accept: application/json]": `[{"name":"`, "browse h1 GET /docs [Accept: application/json]": "<a href"} {
		if got := caddyAnswers[k]["body"]; !strings.HasPrefix(got, want) {
			t.Fatalf("Caddy's %s: %q, want %s...", k, got, want)
		}
	}

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		in, log := startPollproxy(t, backend, certs.Replace(p.pollproxy))
		defer in.Close()
		if err := ready(p, nil); err != nil {
			t.Fatalf("pollproxy: %v\n%s", err, log)
		}
		ours := askBrowse(p)
		compareAnswers(t, caddyAnswers, ours, func(f string, want, got map[string]string) bool {
			page := strings.HasPrefix(want["resp content-type"], "text/html") && want["status"] == "200"
			// Caddy's HTTP/1.1 answers without a length (a body written
			// after the head) are chunked; pollproxy knows the length of
			// every listing.
			return browseOwn[f] || page && (f == "body" || f == "resp content-length" || f == "resp content-security-policy") ||
				f == "resp content-length" && want[f] == "" && got[f] != ""
		})
	})
}

// askBrowse sends every request to both sites over HTTP/1.1 and HTTP/2.
func askBrowse(p *plan) map[string]map[string]string {
	c := newClients(p)
	defer c.close()
	out := map[string]map[string]string{}
	for _, s := range p.sites {
		base := fmt.Sprintf("https://%s:%d", s.host, p.https)
		for _, r := range browseRequests() {
			for proto, cl := range map[string]*http.Client{"h1": c.h1, "h2": c.h2} {
				out[s.label+" "+proto+" "+r.String()] = sendPlain(cl, base, r)
			}
		}
	}
	return out
}
