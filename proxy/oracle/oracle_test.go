package oracle

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// batch is a group of sources served together by one Caddy process and
// one pollproxy instance per backend.
type batch struct {
	name string
	srcs []*source
	// everyBackend: pollproxy serves the batch on every poller backend,
	// not only the best one (the routes do not depend on the backend; the
	// cases and the shipped files are served on each all the same).
	everyBackend bool
}

func batches(t *testing.T) []batch {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out []batch
	shipped, err := shippedSources(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shipped {
		out = append(out, batch{s.name, []*source{s}, true})
	}
	docs, err := docExampleSources(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(docs); i += 40 {
		out = append(out, batch{fmt.Sprintf("caddydocs-%d", i/40), docs[i:min(i+40, len(docs))], false})
	}
	out = append(out, batch{"generated", generatedSources(30), false},
		batch{"generated2", moreGeneratedSources(20), false}, batch{"cases", caseSources(), true}, batch{"directives", directiveSources(), true})
	return out
}

// TestOracle serves every Caddyfile the project ships, Caddy's
// documentation examples, generated sites and the cases of cases_test.go
// with stock Caddy and with pollproxy on every poller backend, sends both
// the same requests over HTTP/1.1 and HTTP/2 (and plain HTTP for the
// redirects) with the same origin behind them, and fails on any
// difference that pending does not list.
func TestOracle(t *testing.T) {
	bin := buildCaddy(t)
	t.Cleanup(func() {
		// Only a full run has seen every case a pending entry names.
		if t.Failed() || flag.Lookup("test.run").Value.String() != "" {
			return
		}
		pendingSeen.Lock()
		defer pendingSeen.Unlock()
		reported := map[string]bool{}
		for _, p := range pending {
			if !pendingSeen.seen[p.what] && !reported[p.what] {
				reported[p.what] = true
				t.Errorf("pending difference no longer seen, remove it from pending: %s", p.what)
			}
		}
	})
	for _, b := range batches(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			runBatch(t, bin, b)
		})
	}
}

func runBatch(t *testing.T, bin string, b batch) {
	var srcs []*source
	for _, s := range b.srcs {
		if _, err := config.Parse("Caddyfile", []byte(s.caddyfile)); err != nil {
			t.Logf("not compared: %s: pollproxy refuses it: %v", s.name, err)
			continue
		}
		srcs = append(srcs, s)
	}
	o := newOrigin(t)
	www := documentTree(t)
	https, http := servertest.FreePort(t), servertest.FreePort(t)
	p, err := build(srcs, o, https, http, closedPort(t), www)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.skipped {
		t.Logf("not compared: %s", s)
	}
	certs := certificate(t, p.names)
	caddy := runCaddy(t, bin, p, o, certs)
	t.Logf("%d sites, %d requests each server", len(p.sites), len(caddy))
	backends := netpoll.Available()
	if !b.everyBackend && len(backends) > 1 {
		backends = backends[:1]
	}
	polltest.ForEachBackend(t, backends, func(t *testing.T, backend string) {
		pp := runPollproxy(t, backend, p, o, certs)
		for _, d := range compare(copyAnswers(caddy), pp, o.stickyValues()) {
			if !tolerated(d) {
				t.Errorf("%v", d)
			}
		}
	})
}

func copyAnswers(a answers) answers {
	out := answers{}
	for k, v := range a {
		c := map[string]string{}
		for f, x := range v {
			c[f] = x
		}
		out[k] = c
	}
	return out
}

// closedPort is a loopback port nothing listens on: an upstream that is
// down.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// documentTree writes the files every root points at: an index, a
// directory with its own, text, CSS, and the pages Caddy's examples name.
func documentTree(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"index.html":       "<!doctype html><title>root</title>root index\n",
		"sub/index.html":   "<!doctype html><title>sub</title>sub index\n",
		"a.txt":            "a text file\n",
		"page.css":         "body { color: black }\n/* " + longText + " */\n",
		"specific.html":    "specific\n",
		"404.html":         "a 404 page\n",
		"500.html":         "a 500 page\n",
		"403.html":         "a 403 page\n",
		"accel-target":     "the accel target\n",
		"private/x":        "private\n",
		"assets/app.js":    "// " + longText + "\n",
		"new-prefix/users": "new prefix users\n",
		"documentation/x":  "documentation\n",
		".git/config":      "hidden\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
