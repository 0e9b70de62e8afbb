package app

import (
	"fmt"
	"strings"
)

// siteGen turns fuzz bytes into the directives of one site, as Caddyfile
// text: a small bytecode in which each byte picks a directive, a matcher
// or an argument from the tables below. Every byte string decodes to
// some site (bytes past the end read as 0, which closes the open block),
// so the fuzzing engine's mutations (a byte changed, a run of bytes
// copied) become a directive changed or repeated, a block nested or
// closed, a matcher added. The text may still be invalid (a directive
// where Caddy takes none): the parser must then name a line.
//
// A directive is its opcode byte, then a matcher byte (for those that
// take one), then its argument bytes. A named matcher's definition is
// hoisted to the top of the site.
type siteGen struct {
	in  []byte
	pos int

	origin string // the upstream that answers
	dead   string // an upstream that refuses connections

	named      []string // the named matchers' definitions, @m0 ...
	directives int
	respNamed  int  // response matchers defined so far, @r0 ...
	abort      bool // the site may abort (or reset) a request
}

// Limits that keep a site small enough to compile and serve in
// milliseconds.
const (
	genMaxDepth      = 4
	genMaxDirectives = 48
)

func (g *siteGen) next() byte {
	if g.pos >= len(g.in) {
		return 0
	}
	b := g.in[g.pos]
	g.pos++
	return b
}

func (g *siteGen) pick(n int) int { return int(g.next()) % n }

func pickFrom[T any](g *siteGen, table []T) T { return table[g.pick(len(table))] }

// The opcodes. A byte picks opTable[b % len(opTable)], where each
// opcode's value is its first place.
const (
	opEnd = iota
	opHeader
	opRequestHeader
	opRespond
	opRedir
	opURI
	opRewrite
	opEncode
	opHandle
	opRoute
	opHandlePath
	opError
	opAbort
	opReverseProxy
	opLog
	opHandleErrors
	opMethod
	opRequestBody
	opHeaderBlock
	opIntercept
	opHeaderRun
	opCount
)

// opTable weighs the opcodes as real Caddyfiles do: header, respond and
// reverse_proxy are the directives most sites have, and the directives
// past the first 20 places repeat them.
var opTable = func() []int {
	t := make([]int, opCount, 32)
	for op := range t {
		t[op] = op
	}
	return append(t, opHeader, opHeader, opHeader, opRespond, opRespond,
		opReverseProxy, opReverseProxy, opRequestHeader, opEncode, opHandle, opEnd)
}()

// Where a list of routes is: the site's top (log and handle_errors
// belong only there), a nested block, or a handle_response (where
// copy_response belongs).
type genPlace int

const (
	placeTop genPlace = iota
	placeNested
	placeResponse
)

// site decodes the whole input into the site's directives.
func (g *siteGen) site() string {
	var body strings.Builder
	g.routes(&body, 1, placeTop)
	var out strings.Builder
	for _, n := range g.named {
		out.WriteString("\t" + n + "\n")
	}
	out.WriteString(body.String())
	return out.String()
}

// routes writes directives at depth until an end opcode.
func (g *siteGen) routes(w *strings.Builder, depth int, place genPlace) {
	for g.directives < genMaxDirectives {
		op := pickFrom(g, opTable)
		if op == opEnd {
			return
		}
		g.directives++
		g.directive(w, op, depth, place)
	}
}

func indent(depth int) string { return strings.Repeat("\t", depth) }

// block writes " {", the routes inside and the closing brace.
func (g *siteGen) block(w *strings.Builder, depth int, place genPlace) {
	w.WriteString(" {\n")
	g.routes(w, depth+1, place)
	w.WriteString(indent(depth) + "}\n")
}

func (g *siteGen) directive(w *strings.Builder, op, depth int, place genPlace) {
	in := indent(depth)
	nested := depth >= genMaxDepth
	switch op {
	case opHeader:
		fmt.Fprintf(w, "%sheader%s %s\n", in, g.matcher(), pickFrom(g, responseOps))
	case opRequestHeader:
		fmt.Fprintf(w, "%srequest_header%s %s\n", in, g.matcher(), pickFrom(g, requestOps))
	case opRespond:
		fmt.Fprintf(w, "%srespond%s %s\n", in, g.matcher(), pickFrom(g, responds))
	case opRedir:
		fmt.Fprintf(w, "%sredir%s %s\n", in, g.matcher(), pickFrom(g, redirs))
	case opURI:
		fmt.Fprintf(w, "%suri%s %s\n", in, g.matcher(), pickFrom(g, uris))
	case opRewrite:
		fmt.Fprintf(w, "%srewrite%s %s\n", in, g.matcher(), pickFrom(g, rewrites))
	case opEncode:
		fmt.Fprintf(w, "%sencode%s %s\n", in, g.matcher(), strings.ReplaceAll(pickFrom(g, encodes), "\n", "\n"+in))
	case opHandle, opRoute:
		name := map[int]string{opHandle: "handle", opRoute: "route"}[op]
		m := g.matcher()
		if nested {
			fmt.Fprintf(w, "%srespond%s %q\n", in, m, name)
			return
		}
		w.WriteString(in + name + m)
		g.block(w, depth, g.inner(place))
	case opHandlePath:
		p := pickFrom(g, handlePaths)
		if nested {
			fmt.Fprintf(w, "%srespond %s \"handle_path\"\n", in, p)
			return
		}
		w.WriteString(in + "handle_path " + p)
		g.block(w, depth, g.inner(place))
	case opError:
		fmt.Fprintf(w, "%serror%s %s\n", in, g.matcher(), pickFrom(g, errorsTable))
	case opAbort:
		g.abort = true
		fmt.Fprintf(w, "%sabort%s\n", in, g.matcher())
	case opReverseProxy:
		g.reverseProxy(w, depth, g.matcher())
	case opLog:
		if place != placeTop {
			fmt.Fprintf(w, "%slog_skip%s\n", in, g.matcher())
			return
		}
		fmt.Fprintf(w, "%slog%s\n", in, strings.ReplaceAll(pickFrom(g, logs), "\n", "\n"+in))
	case opHandleErrors:
		codes := pickFrom(g, errorCodes)
		if place != placeTop || nested {
			fmt.Fprintf(w, "%serror%s %s\n", in, g.matcher(), pickFrom(g, errorsTable))
			return
		}
		w.WriteString(in + "handle_errors" + codes)
		g.block(w, depth, placeNested)
	case opMethod:
		fmt.Fprintf(w, "%smethod%s %s\n", in, g.matcher(), pickFrom(g, methodsTo))
	case opRequestBody:
		fmt.Fprintf(w, "%srequest_body%s {\n%s\tmax_size %s\n%s}\n", in, g.matcher(), in, pickFrom(g, bodyLimits), in)
	case opHeaderBlock:
		// One header directive with several edits, perhaps only for
		// some responses.
		fmt.Fprintf(w, "%sheader%s {\n", in, g.matcher())
		if m := pickFrom(g, headerMatches); m != "" {
			fmt.Fprintf(w, "%s\tmatch %s\n", in, m)
		}
		for range 1 + g.pick(4) {
			fmt.Fprintf(w, "%s\t%s\n", in, pickFrom(g, responseOps))
		}
		w.WriteString(in + "}\n")
	case opHeaderRun:
		// A run of header directives, as the security and CORS parts of
		// a site write them: two to eight, each with its own matcher.
		for range 2 + g.pick(7) {
			fmt.Fprintf(w, "%sheader%s %s\n", in, g.matcher(), pickFrom(g, responseOps))
		}
	case opIntercept:
		switch {
		case place == placeResponse:
			// copy_response belongs in a handle_response only.
			w.WriteString(in + pickFrom(g, copies) + "\n")
			return
		case nested:
			fmt.Fprintf(w, "%srespond \"intercept\"\n", in)
			return
		}
		fmt.Fprintf(w, "%sintercept%s {\n", in, g.matcher())
		g.responseHandlers(w, depth+1)
		w.WriteString(in + "}\n")
	}
}

// inner is the place of a block opened at place.
func (g *siteGen) inner(place genPlace) genPlace {
	if place == placeTop {
		return placeNested
	}
	return place
}

// reverseProxy writes a reverse_proxy to the origin (or, picked
// sometimes, to an upstream that refuses connections), with a block of
// options when the next byte asks for one.
func (g *siteGen) reverseProxy(w *strings.Builder, depth int, m string) {
	in := indent(depth)
	up := g.origin
	if g.pick(8) == 0 {
		up = g.dead
	}
	fmt.Fprintf(w, "%sreverse_proxy%s %s", in, m, up)
	n := g.pick(6)
	if n == 0 {
		w.WriteString("\n")
		return
	}
	w.WriteString(" {\n")
	for range n {
		switch g.pick(6) {
		case 0:
			fmt.Fprintf(w, "%s\theader_up %s\n", in, pickFrom(g, requestOps))
		case 1:
			fmt.Fprintf(w, "%s\theader_down %s\n", in, pickFrom(g, responseOps))
		case 2:
			fmt.Fprintf(w, "%s\t%s\n", in, pickFrom(g, proxyOptions))
		default:
			if depth+1 < genMaxDepth {
				g.responseHandlers(w, depth+1)
			}
		}
	}
	w.WriteString(in + "}\n")
}

// responseHandlers writes, inside a reverse_proxy or intercept block, a
// response matcher and a handle_response or replace_status that uses it
// (or none).
func (g *siteGen) responseHandlers(w *strings.Builder, depth int) {
	in := indent(depth)
	m := ""
	if def := pickFrom(g, responseMatchers); def != "" {
		m = fmt.Sprintf(" @r%d", g.respNamed)
		fmt.Fprintf(w, "%s@r%d %s\n", in, g.respNamed, def)
		g.respNamed++
	}
	if g.pick(4) == 0 {
		fmt.Fprintf(w, "%sreplace_status%s %s\n", in, m, pickFrom(g, replaceStatus))
		return
	}
	w.WriteString(in + "handle_response" + m)
	g.block(w, depth, placeResponse)
}

// matcher reads a directive's matcher: none, *, a path, a new named
// matcher (hoisted to the site's top) or the last one again. The result
// starts with a space when not empty.
func (g *siteGen) matcher() string {
	switch g.pick(8) {
	case 3:
		return " *"
	case 4:
		return " " + pickFrom(g, inlinePaths)
	case 5, 6:
		name := fmt.Sprintf("@m%d", len(g.named))
		g.named = append(g.named, name+" "+g.matcherDef())
		return " " + name
	case 7:
		if len(g.named) > 0 {
			return fmt.Sprintf(" @m%d", len(g.named)-1)
		}
	}
	return ""
}

// matcherDef is a named matcher's definition: one line, or a block of
// up to four.
func (g *siteGen) matcherDef() string {
	n := 1 + g.pick(4)
	if n == 1 {
		return g.matcherLine(0)
	}
	var b strings.Builder
	b.WriteString("{\n")
	for range n {
		b.WriteString("\t\t" + g.matcherLine(0) + "\n")
	}
	b.WriteString("\t}")
	return b.String()
}

// matcherLine is one line of a matcher set: its type and arguments.
func (g *siteGen) matcherLine(depth int) string {
	kind := g.pick(11)
	switch kind {
	case 0:
		return "path " + pickFrom(g, matchPaths)
	case 1:
		return "method " + pickFrom(g, matchMethods)
	case 2:
		return "header " + pickFrom(g, matchHeaders)
	case 3:
		return "query " + pickFrom(g, matchQueries)
	case 4:
		if depth > 0 {
			return "path " + pickFrom(g, matchPaths)
		}
		return "not " + g.matcherLine(depth+1)
	case 5:
		return "expression `" + pickFrom(g, expressions) + "`"
	case 6:
		return "path_regexp " + pickFrom(g, pathRegexps)
	case 7:
		return "header_regexp " + pickFrom(g, headerRegexps)
	case 8:
		return "protocol " + pickFrom(g, protocols)
	case 9:
		return "remote_ip " + pickFrom(g, remoteIPs)
	default:
		return "host " + pickFrom(g, hosts)
	}
}

// The tables the bytes pick from: real-world values, placeholders, and
// the awkward ones (names with _ and ., statuses pollproxy answers
// itself, edits of framing fields).
var (
	responseOps = []string{
		"Access-Control-Allow-Origin *", `Access-Control-Allow-Methods "GET, POST, OPTIONS"`,
		"Access-Control-Allow-Headers *", "Access-Control-Max-Age 86400", "Vary Origin",
		"X-A a", "+X-A b", "-X-A", "?X-B b", ">X-C c", "-*", "-X-*", "-Server", "Server pollproxy",
		"Content-Type text/html", "Cache-Control no-store",
		"X-A a z", "X-Origin ^(.*)$ [$1]", "Location /moved", `Set-Cookie "a=b; Path=/"`,
		"X_Under u", "X.Dot d", "x-lower v", "Content-Length 3", "-Content-Length", "Connection close",
		"Transfer-Encoding chunked", "-Content-Type", "Content-Encoding gzip",
		"X-Empty \"\"", "Strict-Transport-Security max-age=31536000", "X-Content-Type-Options nosniff",
		"X-Frame-Options DENY", "Referrer-Policy no-referrer",
	}
	requestOps = []string{
		"X-A a", "+X-A b", "-X-A", "-*", "Host example.com", "-Host", "X_Forwarded_For evil", "X.Dot d",
		"X-Remote {remote_host}", "Accept-Encoding identity", "-Accept-Encoding", "Content-Length 5",
		"Connection {header.Connection}", "X-URI {uri}", "Content-Type text/plain", "Transfer-Encoding chunked",
		"-Content-Length", "X-Forwarded-For 1.2.3.4", "Origin ^(.*)$ x$1", "Upgrade websocket", "Expect 100-continue",
		"X-Huge " + strings.Repeat("h", 3000), "X-Q {query.k}", "Cookie c=1", "-X-*",
	}
	responds = []string{
		"204", `"hi" 200`, `"{method} {uri}" 404`, "", `"x" 500`, "103", "100", `"{err.status_code}" {err.status_code}`,
		`"` + strings.Repeat("hello ", 120) + `" 200`, `"json {\"a\": 1}" 200`, "304", "205", `"teapot" 418`, "599",
		`{
		body "from a block"
	}`, `"{http.request.header.Origin}"`, `"{query.k}"`, "200",
	}
	redirs = []string{
		"{scheme}://{host}/x", "https://{host}{uri} permanent", "/y html", "/z 307", "{path}/ 308", "//evil.example", "{query.to}",
		"/a?b=c 301", "https://example.com/{path}",
	}
	uris = []string{
		"strip_prefix /api", "strip_suffix /", "replace a b", "replace / // 1", "query +x 1", "query -q",
		"path_regexp ^/a /b", "strip_prefix /", "replace /s/ /s/5", "query k>kk", "strip_prefix /a/b/c/d",
	}
	rewrites = []string{
		"/index.html", "/x?{query}", "{path}/", "/s/503", "{path}?a=1", "/big", "/chunk", "/nobody", "/early",
		"/s/404", "?k=v", "/{query.k}",
	}
	encodes = []string{
		"", "gzip", "zstd gzip", "{\n\tgzip 5\n\tminimum_length 1\n}",
		"{\n\tmatch {\n\t\tstatus 2xx 4xx\n\t}\n\tminimum_length 1\n}",
		"{\n\tzstd\n\tmatch header Content-Type text/*\n\tminimum_length 1\n}",
	}
	errorsTable = []string{`404`, `"nope" 503`, `500`, `"{path}" 403`, `418`, `"x"`, `"m" 502`}
	logs        = []string{"", " {\n\tformat json\n}", " {\n\tformat console\n}", " access"}
	errorCodes  = []string{"", " 404", " 5xx", " 4xx 500", " 502 504"}
	methodsTo   = []string{"GET", "HEAD", "POST", "PUT", "OPTIONS", "DELETE"}
	bodyLimits  = []string{"10", "1KB", "1MB", "0"}
	handlePaths = []string{"/api/*", "/a*", "/s/*", "/static/*", "/", "/x/*"}
	copies      = []string{"copy_response", "copy_response 202", "copy_response_headers {\n\tinclude X-Origin\n}",
		"copy_response_headers {\n\texclude Content-Type\n}"}
	headerMatches = []string{"", "status 2xx", "status 404 5xx", "header Content-Type text/*", "status 204"}
	proxyOptions  = []string{"flush_interval -1", "lb_policy first", "lb_policy query k", "lb_policy header X-A",
		"lb_policy cookie", "lb_retries 1", "max_fails 1", "unhealthy_status 5xx", "lb_policy round_robin",
		"lb_try_duration 50ms", "trusted_proxies private_ranges"}
	responseMatchers = []string{"", "status 2xx", "status 4xx 5xx", "header X-Origin *", "status 503",
		"{\n\t\tstatus 200\n\t\theader Content-Type text/*\n\t}"}
	replaceStatus = []string{"202", "418", "503", "204", "304"}

	matchPaths = []string{"/api/*", "/", "/a*", "/static/*", "*.php", "/index.html", "/x/", "/API/*", "/s/*", "/big", "*"}
	// inlinePaths are the path matchers a directive takes on its line,
	// where Caddy reads only a token starting with / as one.
	inlinePaths  = []string{"/api/*", "/", "/a*", "/static/*", "/index.html", "/x/", "/API/*", "/s/*", "/big", "/*.php"}
	matchMethods = []string{"OPTIONS", "GET", "POST", "GET HEAD", "put", "DELETE PATCH"}
	matchHeaders = []string{"Origin *", "X-A a", "Accept-Encoding *gzip*", "!X-B", "X_Under *", "Content-Type application/json",
		"Connection *Upgrade*", "Upgrade websocket", "Access-Control-Request-Method *"}
	matchQueries = []string{"q=1", "k=*", "a=b c=d", `"k=a b"`, "n=3"}
	expressions  = []string{
		"{method} == 'OPTIONS'", "path('/api/*') && method('GET', 'POST')", "header({'Origin': '*'})",
		"query({'q': '1'})", "{path}.startsWith('/a')", "!protocol('http/2')", "{header.X-A} == 'a' || {query.k} != ''",
		"path_regexp('^/s/(.*)')", "int({query.n}) > 2", "{http.request.uri.path.0} == 's'",
	}
	pathRegexps   = []string{"^/api/([a-z]+)$", "name ^/s/(.+)", "(?i)^/API", "\\.css$"}
	headerRegexps = []string{"X-A ^(a+)$", "ua User-Agent (curl|Go)", "Origin ^https?://"}
	protocols     = []string{"http", "https", "http/1.1", "http/2", "http/2+", "http/1.1+"}
	remoteIPs     = []string{"127.0.0.1/8", "::1", "10.0.0.0/8", "private_ranges"}
	hosts         = []string{"127.0.0.1", "localhost", "*.example.com"}
)
