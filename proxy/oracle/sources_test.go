package oracle

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// source is one Caddyfile the oracle serves, with the requests it sends
// to each of its sites.
type source struct {
	name      string
	caddyfile string
	// namedUpstreams: each upstream answers with its name, so which one
	// the balancer picked is compared (only where the policy is
	// deterministic for every request sent).
	namedUpstreams bool
	requests       []request // replaces the common requests when set
	extra          []request // sent besides the common requests
}

func (s *source) requestsFor() []request {
	if s.requests != nil {
		return s.requests
	}
	return append(append([]request(nil), commonRequests...), s.extra...)
}

func get(path string, header ...string) request {
	r := request{method: "GET", path: path}
	for i := 0; i+1 < len(header); i += 2 {
		r.header = append(r.header, [2]string{header[i], header[i+1]})
	}
	return r
}

// commonRequests go to every site: the root, an index, a directory with
// and without its slash, a missing file, queries, encodings, a HEAD,
// bodies with and without a length, a CORS preflight, field names with _
// and ., cookies, hop-by-hop fields, and each of the origin's answer
// shapes.
var commonRequests = []request{
	get("/"),
	get("/index.html"),
	get("/sub"),
	get("/sub/"),
	get("/missing.txt"),
	get("/api/users?id=3&name=a%20b&plus=a+b"),
	get("/page.css", "Accept-Encoding", "gzip"),
	get("/data.json", "Accept-Encoding", "zstd, gzip;q=0.5"),
	{method: "HEAD", path: "/page.css", header: [][2]string{{"Accept-Encoding", "gzip"}}},
	{method: "POST", path: "/api/form", body: "a=1&b=2", header: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}},
	{method: "PUT", path: "/upload", body: "a body without a length", chunked: true},
	{method: "OPTIONS", path: "/api/x", header: [][2]string{{"Origin", "https://app.test"}, {"Access-Control-Request-Method", "PUT"}}},
	get("/fields", "X_Forwarded_For", "evil", "Foo.Bar", "dotted", "X-Forwarded-For", "10.1.2.3", "Cookie", "sess=abc; theme=dark"),
	{method: "GET", path: "/conn", h1only: true, header: [][2]string{{"Connection", "keep-alive, X-Hop"}, {"X-Hop", "secret"}}},
	get("/status404"),
	get("/status500"),
	get("/redirect"),
	get("/cookie"),
	get("/nocache"),
	get("/notype", "Accept-Encoding", "gzip"),
	get("/chunked.txt", "Accept-Encoding", "gzip"),
	get("/accel"),
	get("/a//b/../c?x=1&x=2"),
}

// docPaths are the paths Caddy's documentation examples route on, sent
// to their sites besides the common requests.
var docPaths = []request{
	get("/prefix/users?q=1"), get("/old-prefix/users"), get("/foo/bar"), {method: "POST", path: "/foo/bar", body: "x"},
	get("/about-us"), get("/health-check"), get("/docs/intro"), get("/index.php?p=1"), get("/secret/x"),
	get("/admin/x"), get("/blog/post"), get("/item/42"), get("/assets/app.js"), get("/oauth2/auth"),
	get("/private/x"), get("/hidden/x"), get("/no-cache/page"), get("/static/a1b2c3.css"),
	get("/user/bob"), get("/specific.html"), get("/outpost.goauthentik.io/auth/caddy"), get("/api/things"),
	get("/me", "Cookie", "login_0a1b"), get("/x", "Foo", "123", "Bar", "456"), get("/search?q=go&sort=asc"),
	get("/old.html"), get("/js/app.js"), get("/favicon.ico"),
}

// shippedSources are the Caddyfiles the project ships: Caddyfile*,
// anything under dist/, and every Caddyfile with a site block in docs/
// and README.md (indented or fenced blocks).
func shippedSources(root string) ([]*source, error) {
	var out []*source
	files, _ := filepath.Glob(filepath.Join(root, "Caddyfile*"))
	dist, _ := filepath.Glob(filepath.Join(root, "dist", "*"))
	for _, f := range append(files, dist...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		if hasSite(string(b)) {
			out = append(out, &source{name: rel, caddyfile: string(b), extra: docPaths})
		}
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range append(docs, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		for i, block := range codeBlocks(string(b)) {
			if hasSite(block) {
				out = append(out, &source{name: fmt.Sprintf("%s#%d", rel, i), caddyfile: block, extra: docPaths})
			}
		}
	}
	return out, nil
}

// hasSite tells whether text is a Caddyfile with at least one site block.
func hasSite(text string) bool {
	nodes, err := parseTree(text)
	if err != nil {
		return false
	}
	for i, n := range nodes {
		if !n.block || (i == 0 && len(n.toks) == 0) || strings.HasPrefix(n.word(0), "(") {
			continue
		}
		addr := n.word(0)
		if strings.Contains(addr, ".") || strings.Contains(addr, ":") || strings.HasPrefix(addr, "localhost") {
			return true
		}
	}
	return false
}

// codeBlocks are a markdown file's fenced and indented code blocks.
func codeBlocks(md string) []string {
	var out []string
	var cur []string
	fenced, indented := false, false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n")+"\n")
		}
		cur = nil
	}
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			if fenced {
				flush()
			}
			fenced = !fenced
		case fenced:
			cur = append(cur, l)
		case strings.HasPrefix(l, "    ") || (indented && strings.TrimSpace(l) == ""):
			indented = true
			cur = append(cur, strings.TrimPrefix(l, "    "))
		default:
			if indented {
				flush()
			}
			indented = false
		}
	}
	flush()
	return out
}

// docExampleSources are the examples of Caddy's documentation that
// proxy/config's TestCaddyDocExamples holds and pollproxy accepts, and
// the sites proxy/app's TestCaddyDocRouting builds from them (with the
// requests that test sends), read from those files' source so the two
// lists stay one.
func docExampleSources(root string) ([]*source, error) {
	var out []*source
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "proxy/config/caddydocs_test.go"), nil, 0)
	if err != nil {
		return nil, err
	}
	list := findComposite(f, "caddyDocExamples")
	if list == nil {
		return nil, fmt.Errorf("caddydocs_test.go: no caddyDocExamples")
	}
	for i, e := range list.Elts {
		el, ok := e.(*ast.CompositeLit)
		if !ok || len(el.Elts) != 3 {
			continue
		}
		page, _ := evalString(el.Elts[0])
		text, ok1 := evalString(el.Elts[1])
		want, ok2 := evalString(el.Elts[2])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("caddydocs_test.go: example %d is not a string the oracle can read", i)
		}
		// A servers or log global block is the listener's or the
		// process's, which a batch shares: two examples' would clash (in
		// Caddy, "duplicate listener addresses"). Those examples are
		// compared with Caddy in accepted_test.go instead.
		if want == "" && !strings.Contains(text, "\n\tservers") && !strings.HasPrefix(text, "{\n\tlog") {
			out = append(out, &source{name: fmt.Sprintf("caddydocs/%s#%d", page, i), caddyfile: text, extra: docPaths})
		}
	}
	f, err = parser.ParseFile(fset, filepath.Join(root, "proxy/app/caddydocs_routing_test.go"), nil, 0)
	if err != nil {
		return nil, err
	}
	sites := findComposite(f, "sites")
	if sites == nil {
		return nil, fmt.Errorf("caddydocs_routing_test.go: no sites")
	}
	for i, e := range sites.Elts {
		el, ok := e.(*ast.CompositeLit)
		if !ok || len(el.Elts) != 3 {
			continue
		}
		name, _ := evalString(el.Elts[0])
		body, ok := evalString(el.Elts[1])
		if !ok {
			return nil, fmt.Errorf("caddydocs_routing_test.go: site %d is not a string the oracle can read", i)
		}
		src := &source{name: fmt.Sprintf("caddydocs-routing/%d %s", i, name), caddyfile: "example.com {\n" + body + "\n}\n"}
		if xs, ok := el.Elts[2].(*ast.CompositeLit); ok {
			for _, x := range xs.Elts {
				if r, ok := evalExchange(x); ok {
					src.extra = append(src.extra, r)
				}
			}
		}
		out = append(out, src)
	}
	return out, nil
}

// findComposite finds the composite literal assigned to name.
func findComposite(f *ast.File, name string) *ast.CompositeLit {
	var found *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if id.Name == name && i < len(n.Values) {
					found, _ = n.Values[i].(*ast.CompositeLit)
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == name && i < len(n.Rhs) {
					found, _ = n.Rhs[i].(*ast.CompositeLit)
				}
			}
		}
		return found == nil
	})
	return found
}

// evalString evaluates the string expressions these tables use: literals,
// +, docSite, docMatcher, fmt.Sprintf over origins, and identifiers (an
// origin variable names an upstream of its own).
func evalString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		a, ok1 := evalString(e.X)
		b, ok2 := evalString(e.Y)
		return a + b, ok1 && ok2 && e.Op == token.ADD
	case *ast.Ident:
		return e.Name + ".upstream:9000", true
	case *ast.KeyValueExpr:
		return evalString(e.Value)
	case *ast.CallExpr:
		var args []string
		for _, a := range e.Args {
			s, ok := evalString(a)
			if !ok {
				return "", false
			}
			args = append(args, s)
		}
		switch fn := exprName(e.Fun); {
		case fn == "docSite" && len(args) == 1:
			return "example.com {\n" + args[0] + "\n}\n", true
		case fn == "docGlobal" && len(args) == 1:
			return args[0] + "\nexample.com {\n\trespond \"Hello\"\n}\n", true
		case fn == "docMatcher" && len(args) == 1:
			name := strings.Fields(args[0])[0]
			return "example.com {\n" + args[0] + "\nrespond " + name + " \"matched\"\n}\n", true
		case fn == "docTLSOption" && len(args) == 1:
			return "{\n" + args[0] + "\n}\n\nexample.com {\n\trespond ok\n}\n", true
		case fn == "fmt.Sprintf" && len(args) > 0:
			vals := make([]any, len(args)-1)
			for i, a := range args[1:] {
				vals[i] = a
			}
			return fmt.Sprintf(args[0], vals...), true
		}
	}
	return "", false
}

func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprName(e.X) + "." + e.Sel.Name
	}
	return ""
}

// evalExchange reads the method, path and header of one of
// TestCaddyDocRouting's exchanges.
func evalExchange(e ast.Expr) (request, bool) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return request{}, false
	}
	var r request
	for _, f := range cl.Elts {
		kv, ok := f.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch exprName(kv.Key) {
		case "method":
			r.method, _ = evalString(kv.Value)
		case "path":
			r.path, _ = evalString(kv.Value)
		case "header":
			if m, ok := kv.Value.(*ast.CompositeLit); ok {
				for _, h := range m.Elts {
					if hkv, ok := h.(*ast.KeyValueExpr); ok {
						k, _ := evalString(hkv.Key)
						v, _ := evalString(hkv.Value)
						r.header = append(r.header, [2]string{k, v})
					}
				}
			}
		}
	}
	return r, r.method != "" && r.path != ""
}

// generatedSources are sites combined from the directives pollproxy
// implements, from a fixed seed: header, request_header, respond, redir,
// error, handle, handle_path, route, uri, rewrite, encode, handle_errors
// and reverse_proxy with header_up and header_down.
func generatedSources(n int) []*source {
	parts := []string{
		"header X-Gen-A gen-a",
		"header -Server",
		"header ?Cache-Control \"max-age=60\"",
		"header >X-Origin-Field replaced",
		"header /api/* X-Api yes",
		"header +Vary Origin",
		"header {\n\tX-Frame-Options DENY\n\tX-Content-Type-Options nosniff\n\tdefer\n}",
		"respond /health 200",
		"respond /hello \"hello {path} {query.x} {method}\" 201",
		"redir /old /new 301",
		"redir /go https://elsewhere.test{uri}",
		"redir /html-redir /target html",
		"handle /api/* {\n\treverse_proxy UP {\n\t\theader_up X-Api-Up 1\n\t}\n}",
		"handle_path /static/* {\n\treverse_proxy UP\n}",
		"route /r/* {\n\turi strip_prefix /r\n\theader X-Route 1\n\treverse_proxy UP\n}",
		"uri replace /old-name /new-name",
		"uri strip_prefix /strip",
		"uri query +added yes",
		"uri query -drop",
		"rewrite /rw /rewritten?{query}",
		"rewrite /q-only ?{query}&extra=1",
		"encode gzip",
		"encode zstd gzip",
		"encode {\n\tgzip\n\tminimum_length 100\n}",
		"handle_errors {\n\trespond \"{err.status_code} handled\"\n}",
		"handle_errors 5xx {\n\theader X-Err {err.status_code}\n\trespond \"server error {err.status_code}\"\n}",
		"error /forbidden \"nope\" 403",
		"error /gone 410",
		"request_header X-Req-Added yes",
		"request_header -X-Remove-Me",
		"@post method POST\nrespond @post \"posted {method}\" 200",
		"@json path *.json\nheader @json Cache-Control \"public, max-age=10\"",
		"reverse_proxy /dead/* DEAD",
	}
	terminals := []string{
		"reverse_proxy UP {\n\theader_up Host {upstream_hostport}\n\theader_down X-Down added\n}",
		"reverse_proxy UP {\n\theader_up X-Real-IP {remote_host}\n\theader_up -Cookie\n\theader_down -X-Origin-Field\n}",
		"reverse_proxy UP {\n\theader_up X-Path {path}\n\theader_up X-Query {query}\n\theader_up X-Uri {uri}\n\theader_up X-Scheme {scheme}\n}",
		"reverse_proxy UP {\n\theader_up X-Cookie {cookie.sess}\n\theader_up X-Header {header.X-Test}\n\theader_up X-Q {query.id}\n}",
		"respond \"fallback {method} {uri}\"",
		"reverse_proxy UP",
	}
	extra := []request{
		get("/health"), get("/hello?x=1"), get("/old"), get("/go?a=b"), get("/html-redir"),
		get("/api/x.json", "Accept-Encoding", "gzip"), get("/static/app.js", "Accept-Encoding", "gzip, zstd"),
		get("/r/page.css"), get("/old-name/x"), get("/strip/a?drop=1&keep=2"), get("/rw?z=1"), get("/q-only?a=1"),
		get("/forbidden"), get("/gone"), get("/dead/x"), get("/dead/x.txt", "Accept-Encoding", "gzip"),
		get("/t", "X-Test", "a value", "X-Remove-Me", "x", "Cookie", "sess=s1"),
		{method: "POST", path: "/p", body: "x=1"},
	}
	return combine("generated", 33, n, parts, terminals, extra)
}

// moreGeneratedSources are a second set of combinations: auth, abort,
// method, intercept, request_body, path_regexp, nested routes and
// response-matched header edits.
func moreGeneratedSources(n int) []*source {
	parts := []string{
		"basic_auth /private/* {\n\tBob $2a$04$3pX8Ee1cYnOtRB4XyHcOSOmXYQ3zJMiwZ1t1hTzqJxBxm5d1kMPEi\n}",
		"abort /abort-me",
		"method /to-post POST",
		"request_body /upload* {\n\tmax_size 8\n}",
		"uri path_regexp /{2,} /",
		"uri path_regexp ^/re/(\\w+)$ /regexed/$1",
		"route /nested/* {\n\thandle /nested/a {\n\t\trespond \"nested a\"\n\t}\n\thandle {\n\t\trespond \"nested other {path}\"\n\t}\n}",
		"handle /first/* {\n\trespond \"first\"\n}\nhandle /first/second/* {\n\trespond \"second\"\n}",
		"header /status* {\n\tX-Matched 404\n\tmatch status 404\n}",
		"intercept {\n\t@nf status 404\n\thandle_response @nf {\n\t\trespond \"intercepted {resp.status_code}\" 404\n\t}\n}",
		"reverse_proxy /rp404/* UP {\n\t@nf status 404\n\treplace_status @nf 200\n}",
		"redir /perm /permanent?{query} permanent",
		"respond /teapot 418",
		"@hdr header X-Test *\nrespond @hdr \"has {header.X-Test}\"",
		"@q query k=*\nrespond @q \"query {query.k}\"",
		"@notget not method GET HEAD\nrespond @notget \"not get {method}\" 405",
		"handle_errors {\n\trespond \"{err.status_code} {err.status_text}\"\n}",
		"encode zstd",
	}
	terminals := []string{
		"reverse_proxy UP {\n\theader_down Server \"^(.*)$\" \"proxied-$1\"\n\theader_up -User-Agent\n}",
		"reverse_proxy UP {\n\theader_up Host example.internal\n\theader_up X-Forwarded-Host {host}\n}",
		"respond \"end {uri}\" 202",
		"reverse_proxy UP",
	}
	extra := []request{
		get("/private/x"), get("/private/x", "Authorization", "Basic Ym9iOndyb25n"), get("/abort-me"), get("/to-post"),
		{method: "POST", path: "/upload", body: "more than eight bytes"}, {method: "POST", path: "/upload", body: "short"},
		{method: "POST", path: "/upload-chunked", body: "more than eight bytes", chunked: true},
		get("/x//y///z"), get("/re/word"), get("/nested/a"), get("/nested/b"), get("/first/second/x"),
		get("/status404"), get("/rp404/status404"), get("/perm?a=1"), get("/teapot"), get("/h", "X-Test", "yes"),
		get("/q?k=v"), {method: "DELETE", path: "/del"},
	}
	return combine("generated2", 8, n, parts, terminals, extra)
}

// combine makes n sites of 3 to 6 of parts and one of terminals, from
// seed, each sent the common requests and extra.
func combine(name string, seed int64, n int, parts, terminals []string, extra []request) []*source {
	rnd := rand.New(rand.NewSource(seed))
	var out []*source
	for i := 0; i < n; i++ {
		var lines []string
		for _, j := range rnd.Perm(len(parts))[:3+rnd.Intn(4)] {
			lines = append(lines, parts[j])
		}
		lines = append(lines, terminals[rnd.Intn(len(terminals))])
		out = append(out, &source{name: fmt.Sprintf("%s/%d", name, i),
			caddyfile: "gen.test {\n" + strings.Join(lines, "\n") + "\n}\n", extra: extra})
	}
	return out
}
