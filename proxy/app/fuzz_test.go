package app

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/config"
)

// FuzzSites builds a site from the fuzz input (siteGen: random nesting of
// handle, route, handle_path, header, request_header, respond (with
// close), redir, uri, rewrite, encode, log, handle_errors, error, abort,
// reverse_proxy with header_up, header_down, handle_response, method and
// HTTP/2 (h2c://, transport http's versions), intercept, vars, map,
// invoke of named routes, templates (over respond, files and the
// origin), php_fastcgi and transport fastcgi (to a dead upstream and to
// the HTTP origin), with path, method, header, query, not, expression,
// vars, vars_regexp ... matchers), makes a running
// instance serve it (a reload: parsed and compiled by the real
// configuration code, served on a real loop and listener with a real
// loopback origin), and sends the input's requests (random methods,
// paths, fields, bodies) over HTTP/1.1 and h2c. It fails when:
//
//   - the process panics, or a loop logs or counts a recovered panic
//     (pollproxy_panics_total);
//   - an answer is malformed: a status line or :status outside 100-599,
//     framing that does not match the body (Content-Length, chunks, DATA
//     against content-length, a body where none may be), fields HTTP/2
//     forbids, bytes after the end;
//   - a request gets no answer (a reset or close before it) from a site
//     with no abort, or the input's answers take longer than inputBudget;
//   - the site beside the fuzzed one no longer answers a plain request;
//   - a refused configuration's error names no line of the file.
//
// The backend is picked by the input too: every backend the machine has
// is fuzzed.
//
// It finds the CORS preflight crash (five header directives and a
// respond in one handle: respWriter.WriteHeader sliced past its inline
// array of four response edits and the loop panicked, taking the process
// down). The seeds hold four header lines (the CORS preflight, the
// security fields), which worked; with that fix reverted and no fuzz
// cache, six runs of CI's 10s (two workers on a loaded two-core machine,
// about 200 inputs a second) reported the crash in three, 0.5 to 6s into
// fuzzing, from a mutation that adds a fifth edit. Inputs that widen
// coverage multiply fast and dilute the seeds; longer runs find it
// surely. It also found the bugs its regression tests name
// (respond1xx_test.go, interceptabort_test.go, nocontent_test.go,
// copyheaders_test.go, templates_test.go's TestTemplatesProxiedNoBody,
// proxy/config's framingedit_test.go and TestErrors' heredocs), with
// their inputs in testdata/fuzz/FuzzSites.
func FuzzSites(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.site, s.reqs, uint8(0))
	}
	env := newFuzzEnv(f)
	for _, b := range env.backends {
		env.server(b)
	}
	capMinimizing("50x")
	f.Fuzz(func(t *testing.T, site, reqs []byte, backend uint8) {
		name := env.backends[int(backend)%len(env.backends)]
		s := env.servers[name]
		g := &siteGen{in: site, origin: env.origin, dead: env.dead, root: env.root}
		if !env.load(t, s, name, g.site(), g.namedRouteBlocks()) {
			return
		}
		deadline := time.Now().Add(inputBudget)
		rs := decodeRequests(reqs)
		var h1 *h1Conn
		var h2 *h2Conn
		defer func() {
			if h1 != nil {
				h1.Close()
			}
			if h2 != nil {
				h2.Close()
			}
		}()
		for i, r := range rs {
			var status int
			var err error
			if r.h2 {
				if h2 != nil && h2.gone {
					h2.Close()
					h2 = nil
				}
				if h2 == nil {
					if h2, err = dialH2(s.site, deadline); err != nil {
						t.Fatalf("dial: %v", err)
					}
				}
				var a h2Answer
				a, err = h2.roundTrip(r, s.site)
				status = a.status
			} else {
				if h1 == nil {
					if h1, err = dialH1(s.site, deadline); err != nil {
						t.Fatalf("dial: %v", err)
					}
				}
				var a h1Answer
				a, err = h1.roundTrip(r, s.site)
				status = a.status
				if err != nil || a.last {
					h1.Close()
					h1 = nil
				}
			}
			switch {
			case err == nil:
			case (errors.Is(err, errNoAnswer) || errors.Is(err, errReset)) && g.abort:
			default:
				t.Fatalf("%s: %v (status %d)\n%s", describe(rs, i), err, status, numbered(s.last))
			}
		}
		s.checkAlive(t, deadline)
		if p := s.newPanics(t); p != "" {
			t.Fatalf("a loop recovered from a panic: %s\nrequests: %s\n%s", p, describe(rs, -1), numbered(s.last))
		}
	})
}

// inputBudget bounds the exchanges of one input: an answer that takes
// longer is a hang, whatever the site. It stays under the 10s after
// which the fuzzing engine calls an input deadlocked and says no more.
const inputBudget = 6 * time.Second

// capMinimizing limits how long the fuzzing engine minimizes an input
// (one that widened coverage, or a failing one), unless the command line
// chose with -fuzzminimizetime: the default, 60s of a worker's time per
// input, spent on runs that each reload the site, would take the whole
// of a short fuzzing budget (CI's 10s) away from fuzzing.
func capMinimizing(limit string) {
	set := false
	flag.Visit(func(fl *flag.Flag) { set = set || fl.Name == "test.fuzzminimizetime" })
	if !set {
		flag.Set("test.fuzzminimizetime", limit)
	}
}

// describe names request i of rs (all when i < 0) for a failure message.
func describe(rs []fuzzRequest, i int) string {
	var b strings.Builder
	for j, r := range rs {
		if i >= 0 && j != i {
			continue
		}
		proto := "HTTP/1.1"
		if r.h2 {
			proto = "h2c"
		}
		fmt.Fprintf(&b, "request %d: %s %s %.200q over %s, %d body bytes", j, r.method, r.target, r.fields, proto, len(r.body))
		if r.chunked && !r.h2 {
			b.WriteString(" chunked")
		}
		b.WriteString("; ")
	}
	return b.String()
}

// fuzzSeed is one input of the seed corpus.
type fuzzSeed struct {
	name       string
	site, reqs []byte
}

// Matcher bytes (siteGen.matcher).
const (
	mNone  = 0
	mAll   = 3
	mPath  = 4
	mNamed = 5
)

// at is the byte that picks v from table.
func at(table []string, v string) byte {
	i := slices.Index(table, v)
	if i < 0 {
		panic("fuzz seed: " + v + " is in no table")
	}
	return byte(i)
}

// fuzzSeeds are meaningful sites and requests: the shapes real
// Caddyfiles have, for the fuzzer to start from.
func fuzzSeeds() []fuzzSeed {
	get := func(h2 bool, method, target string, fields ...string) []byte {
		flags := byte(0)
		if h2 {
			flags = 1
		}
		b := []byte{flags, at(reqMethods, method), at(reqTargets, target), 0, byte(len(fields) / 2)}
		for i := 0; i < len(fields); i += 2 {
			b = append(b, at(reqNames, fields[i]), at(reqValues, fields[i+1]))
		}
		return append(b, 0) // no body
	}
	join := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	return []fuzzSeed{
		{
			// A CORS preflight answered by the site: four header lines (five
			// took the process down).
			name: "cors",
			site: []byte{
				opHandle, mNamed, 0, 1, at(matchMethods, "OPTIONS"),
				opHeader, mNone, at(responseOps, "Access-Control-Allow-Origin *"),
				opHeader, mNone, at(responseOps, `Access-Control-Allow-Methods "GET, POST, OPTIONS"`),
				opHeader, mNone, at(responseOps, "Access-Control-Allow-Headers *"),
				opHeader, mNone, at(responseOps, "Access-Control-Max-Age 86400"),
				opRespond, mNone, at(responds, "204"),
				opEnd,
				opReverseProxy, mNone, 1, 0,
			},
			reqs: join(get(false, "OPTIONS", "/api/users", "oRiGiN", "https://example.com", "Access-Control-Request-Method", "OPTIONS"),
				get(true, "GET", "/api/users", "oRiGiN", "https://example.com")),
		},
		{
			// The security fields many sites set, in front of a proxy.
			name: "security",
			site: []byte{
				opHeader, mNone, at(responseOps, "Strict-Transport-Security max-age=31536000"),
				opHeader, mNone, at(responseOps, "X-Content-Type-Options nosniff"),
				opHeader, mNone, at(responseOps, "X-Frame-Options DENY"),
				opHeader, mNone, at(responseOps, "Referrer-Policy no-referrer"),
				opReverseProxy, mNone, 1, 0,
			},
			reqs: join(get(true, "GET", "/"), get(false, "GET", "/static/app.css")),
		},
		{
			// A proxy with compression, an access log and field edits
			// both ways.
			name: "proxy",
			site: []byte{
				opLog, at(logs, ""),
				opEncode, mNone, at(encodes, "gzip"),
				opReverseProxy, mNone, 1, 2, 0, at(requestOps, "X_Forwarded_For evil"), 1, at(responseOps, "-Server"),
			},
			reqs: join(get(false, "GET", "/", "Accept-Encoding", "gzip", "x_forwarded_for", "1.2.3.4"),
				get(true, "GET", "/big", "Accept-Encoding", "gzip, zstd")),
		},
		{
			// An error page for what a route refuses.
			name: "errors",
			site: []byte{
				opHandle, mPath, at(inlinePaths, "/api/*"),
				opError, mNone, at(errorsTable, `"nope" 503`),
				opEnd,
				opRespond, mNone, at(responds, `"hi" 200`),
				opHandleErrors, at(errorCodes, " 5xx"),
				opRespond, mNone, at(responds, `"{err.status_code}" {err.status_code}`),
				opEnd,
			},
			reqs: join(get(false, "GET", "/api/users"), get(true, "POST", "/api/")),
		},
		{
			// handle_path and URI edits in front of a proxy, a redirect
			// beside them.
			name: "paths",
			site: []byte{
				opHandlePath, at(handlePaths, "/api/*"),
				opURI, mNone, at(uris, "strip_suffix /"),
				opReverseProxy, mNone, 1, 0,
				opEnd,
				opRedir, mPath, at(inlinePaths, "/x/"), at(redirs, "https://{host}{uri} permanent"),
				opRewrite, mPath, at(inlinePaths, "/index.html"), at(rewrites, "/s/404"),
				opRespond, mNone, at(responds, `"hi" 200`),
			},
			reqs: join(get(false, "GET", "/api/"), get(true, "GET", "/x/"), get(false, "HEAD", "/index.html")),
		},
		{
			// A proxy whose error answers a handle_response replaces.
			name: "handle_response",
			site: []byte{
				opReverseProxy, mNone, 1, 1, 3, at(responseMatchers, "status 4xx 5xx"), 1,
				opHeader, mNone, at(responseOps, "X-A a"),
				opIntercept, at(copies, "copy_response 202"),
				opEnd,
			},
			reqs: join(get(false, "GET", "/s/503"), get(true, "GET", "/s/404")),
		},
		{
			// A route that aborts what an expression matches.
			name: "abort",
			site: []byte{
				opRoute, mNamed, 0, 5, at(expressions, "int({query.n}) > 2"),
				opHeader, mNone, at(responseOps, "X-A a"),
				opAbort, mNone,
				opEnd,
				opRespond, mNone, at(responds, "200"),
			},
			reqs: join(get(true, "GET", "/a?n=3"), get(false, "GET", "/a?n=3"), get(false, "GET", "/")),
		},
		{
			// map with a regexp key and a default, vars set inline and in
			// a block, and the vars and vars_regexp matchers reading them.
			name: "vars_map",
			site: []byte{
				opMap, mNone, at(mapSources, "{path}"), at(mapDests, "{kind} {num}"), 2,
				at(mapKeys, "/a"), 1, at(mapOutputs, "apple"), at(mapOutputs, "007"),
				at(mapKeys, "~^/b/(.*)$"), 1, at(mapOutputs, `"b-$1"`), at(mapOutputs, "-"),
				at(mapKeys, "default"), 1, at(mapOutputs, "{path}"), at(mapOutputs, "1.50"),
				opVars, mNone, 1, 1, at(varNames, "tier"), at(varValues, "gold"), at(varNames, "who"), at(varValues, "{header.X-Who}"),
				opVars, mNamed, 0, 11, at(varMatches, "tier gold"), 2, at(varUses, `respond@m "{vars.tier} {http.vars.level} {kind} {num}"`),
				opRespond, mNamed, 0, 12, at(varRegexps, "g tier ^(go)ld$"), at(responds, `"hi" 200`),
			},
			reqs: join(get(false, "GET", "/a/b/c"), get(true, "GET", "/api/users")),
		},
		{
			// A named route invoked twice, invoking another with a
			// matcher, in front of a proxy.
			name: "invoke",
			site: []byte{
				opInvoke, mNone, 0,
				opHeader, mNone, at(responseOps, "X-A a"),
				opInvoke, mPath, at(inlinePaths, "/api/*"), 1,
				opRespond, mNone, at(responds, `"hi" 200`),
				opEnd,
				opEnd,
				opInvoke, mNone, 0,
				opReverseProxy, mNone, 1, 0,
			},
			reqs: join(get(false, "GET", "/api/users"), get(true, "GET", "/")),
		},
		{
			// templates over a respond, a broken template, and the files
			// under root (app.css only with mime text/css).
			name: "templates",
			site: []byte{
				opHandle, mPath, at(inlinePaths, "/api/*"),
				opTemplates, mNone, at(templateOptions, ""), 0, mNone, at(templateBodies, `{{.Req.URL.Path}} {{.Host}} {{.RemoteIP}}`), at(templateStatuses, ""),
				opEnd,
				opHandle, mPath, at(inlinePaths, "/x/"),
				opTemplates, mNone, at(templateOptions, ""), 0, mNone, at(templateBodies, `{{ nope`), at(templateStatuses, " 200"),
				opEnd,
				opTemplates, mNone, at(templateOptions, " {\n\tmime text/css text/html text/plain\n}"), 1, mNone,
			},
			reqs: join(get(false, "GET", "/api/users"), get(true, "GET", "/x/"), get(false, "GET", "/static/app.css")),
		},
		{
			// php_fastcgi to an upstream that refuses, and transport
			// fastcgi to the HTTP origin, which does not speak FastCGI.
			name: "fastcgi",
			site: []byte{
				opPHPFastCGI, mPath, at(inlinePaths, "/api/*"), 0, 1, 1, at(fastCGIOptions, "root ROOT"),
				opPHPFastCGI, mNone, 1, 2, 0, at(phpOptions, "root ROOT"), at(phpOptions, "split .php"),
			},
			reqs: join(get(false, "GET", "/x.php"), get(true, "GET", "/api/users"), get(false, "POST", "/x.php")),
		},
		{
			// HTTP/2 to the origin: transport http's versions h2c 2, an
			// h2c:// upstream with method, and one that refuses.
			name: "h2c",
			site: []byte{
				opProxyMore, mPath, at(inlinePaths, "/s/*"), 1, 1, 0, at(proxyMoreOptions, "transport http {\n\tversions h2c 2\n}"),
				opProxyMore, mPath, at(inlinePaths, "/big"), 0, 0, 0, at(proxyMoreOptions, "flush_interval -1"),
				opProxyMore, mNone, 1, 0, 1, at(proxyMoreOptions, "method POST"), at(proxyMoreOptions, "header_up X-A a"),
			},
			reqs: join(get(false, "GET", "/s/404"), get(true, "GET", "/chunk"), get(false, "GET", "/big")),
		},
		{
			// respond's close, after a plain answer and a body.
			name: "respond_close",
			site: []byte{
				opRespondClose, mPath, at(inlinePaths, "/x/"), at(responds, `"teapot" 418`), at(respondCloses, "close"),
				opRespondClose, mNone, at(responds, "200"), at(respondCloses, "body \"bye\"\nclose"),
			},
			reqs: join(get(false, "GET", "/x/"), get(true, "GET", "/x/"), get(false, "GET", "/")),
		},
		{
			// An error page that sets a variable and maps the path.
			name: "handle_errors_vars",
			site: []byte{
				opHandle, mPath, at(inlinePaths, "/api/*"),
				opError, mNone, at(errorsTable, `"nope" 503`),
				opEnd,
				opRespond, mNone, at(responds, `"hi" 200`),
				opHandleErrors, at(errorCodes, ""),
				opVars, mNone, 0, at(varNames, "level"), at(varValues, "{http.request.uri}"),
				opMap, mNone, at(mapSources, "{path}"), at(mapDests, "{kind}"), 0, at(mapKeys, "/api/users"), 0, at(mapOutputs, "apple"),
				opVars, mNone, 2, at(varUses, `respond@m "{vars.tier} {http.vars.level} {kind} {num}"`),
			},
			reqs: join(get(false, "GET", "/api/users"), get(true, "GET", "/api/")),
		},
	}
}

// TestFuzzSeedSites pins what the seeds decode to: the seed corpus keeps
// its meaning when the tables grow.
func TestFuzzSeedSites(t *testing.T) {
	want := map[string]string{
		"cors": `	@m0 method OPTIONS
	handle @m0 {
		header Access-Control-Allow-Origin *
		header Access-Control-Allow-Methods "GET, POST, OPTIONS"
		header Access-Control-Allow-Headers *
		header Access-Control-Max-Age 86400
		respond 204
	}
	reverse_proxy 127.0.0.1:9
`,
		"abort": "\t@m0 expression `int({query.n}) > 2`\n\troute @m0 {\n\t\theader X-A a\n\t\tabort\n\t}\n\trespond 200\n",
	}
	root := t.TempDir()
	for _, s := range fuzzSeeds() {
		g := &siteGen{in: s.site, origin: "127.0.0.1:9", dead: "127.0.0.1:10", root: root}
		got := g.site()
		if g.pos != len(s.site) {
			t.Errorf("%s: the site decodes %d of its %d bytes:\n%s", s.name, g.pos, len(s.site), got)
		}
		if w, ok := want[s.name]; ok && got != w {
			t.Errorf("%s decodes to\n%s\nwant\n%s", s.name, got, w)
		}
		if s.name == "abort" && !g.abort {
			t.Errorf("abort: the site is not marked as aborting")
		}
		text := "http://127.0.0.1:8080 {\n" + got + "}\n" + g.namedRouteBlocks()
		if _, err := config.Parse("Caddyfile", []byte(text)); err != nil {
			t.Errorf("%s: %v\n%s", s.name, err, numbered(text))
		}
	}
}

// TestFuzzFoundSites pins what the failing inputs FuzzSites found (kept
// in testdata/fuzz/FuzzSites) decode to: a table edit must not take the
// bug they found out of them.
func TestFuzzFoundSites(t *testing.T) {
	for name, want := range map[string]string{
		"respond_100":                  "\t\trespond 100\n",
		"intercept_abort":              "\tintercept @m0 {\n",
		"copy_response_headers_length": "\t\t\tcopy_response_headers {\n",
		"header_content_length":        "\theader Content-Length 3\n",
		"heredoc_line":                 "\ttemplates {\n\t\tbetween <<\n",
		"proxy_method_head":            "\t\tmethod HEAD\n",
		"fastcgi_http_origin":          "\t\ttransport fastcgi {\n",
		"h2c_origin_reset":             "\treverse_proxy h2c://",
		"templates_head":               "\ttemplates\n",
		"origin_400_unread_body":       "\treverse_proxy 127.0.0.1:9\n",
		"templates_httperror_99":       "{{httpError 99}}",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzSites", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a fuzz input: %q", name, b)
		}
		site, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g := &siteGen{in: []byte(site), origin: "127.0.0.1:9", dead: "127.0.0.1:10"}
		if got := g.site(); !strings.Contains(got, want) {
			t.Errorf("%s decodes to\n%s\nwithout %q", name, got, want)
		}
	}
}
