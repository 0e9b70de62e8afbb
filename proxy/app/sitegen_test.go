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

	origin string // the upstream that answers (HTTP/1.1 and h2c)
	dead   string // an upstream that refuses connections
	root   string // a directory of files, templates among them

	named      []string // the named matchers' definitions, @m0 ...
	directives int
	respNamed  int // response matchers defined so far, @r0 ...
	// abort: the site may abort (or reset) a request. Besides abort,
	// a request made a HEAD (the method directive, or reverse_proxy's
	// method) gets the origin's length with no body, a head pollproxy
	// does not send to a GET: it resets the stream (HTTP/1.1: closes),
	// where Caddy sends the head and then closes (nocontent_test.go's
	// TestMethodHeadProxied).
	abort bool

	// The named routes (&(r0) ...) invoked so far, written outside the
	// site, and the names defined (or being written).
	namedRoutes []string
	defined     map[string]bool
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

// The opcodes added after the table's first 32 places, so that the
// bytes of earlier inputs keep their meaning.
const (
	opVars = 32 + iota
	opMap
	opInvoke
	opTemplates
	opPHPFastCGI
	opProxyMore
	opRespondClose
	opLast
)

// opTable weighs the opcodes as real Caddyfiles do: header, respond and
// reverse_proxy are the directives most sites have, and the directives
// past the first 20 places repeat them.
var opTable = func() []int {
	t := make([]int, opCount, 32)
	for op := range t {
		t[op] = op
	}
	t = append(t, opHeader, opHeader, opHeader, opRespond, opRespond,
		opReverseProxy, opReverseProxy, opRequestHeader, opEncode, opHandle, opEnd)
	for op := opVars; op < opLast; op++ {
		t = append(t, op)
	}
	return t
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

// site decodes the whole input into the site's directives. The named
// routes they invoke are outside the site: namedRouteBlocks.
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

// namedRouteBlocks are the named routes (&(name) { ... }) the site
// invokes, for the Caddyfile's top level.
func (g *siteGen) namedRouteBlocks() string { return strings.Join(g.namedRoutes, "") }

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
		m := g.matcher()
		to := pickFrom(g, methodsTo)
		g.abort = g.abort || to == "HEAD" // a GET made a HEAD may be reset: see abort
		fmt.Fprintf(w, "%smethod%s %s\n", in, m, to)
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
	case opVars:
		m := g.matcher()
		switch g.pick(3) {
		case 0:
			fmt.Fprintf(w, "%svars%s %s %s\n", in, m, pickFrom(g, varNames), pickFrom(g, varValues))
		case 1:
			fmt.Fprintf(w, "%svars%s {\n", in, m)
			for range 1 + g.pick(3) {
				fmt.Fprintf(w, "%s\t%s %s\n", in, pickFrom(g, varNames), pickFrom(g, varValues))
			}
			w.WriteString(in + "}\n")
		default:
			// What reads the variables and the map's outputs.
			fmt.Fprintf(w, "%s%s\n", in, strings.ReplaceAll(pickFrom(g, varUses), "@m", m))
		}
	case opMap:
		fmt.Fprintf(w, "%smap%s %s %s {\n", in, g.matcher(), pickFrom(g, mapSources), pickFrom(g, mapDests))
		for range 1 + g.pick(4) {
			fmt.Fprintf(w, "%s\t%s", in, pickFrom(g, mapKeys))
			for range 1 + g.pick(2) {
				w.WriteString(" " + pickFrom(g, mapOutputs))
			}
			w.WriteString("\n")
		}
		w.WriteString(in + "}\n")
	case opInvoke:
		m := g.matcher()
		fmt.Fprintf(w, "%sinvoke%s %s\n", in, m, g.namedRoute())
	case opTemplates:
		fmt.Fprintf(w, "%stemplates%s%s\n", in, g.matcher(), strings.ReplaceAll(pickFrom(g, templateOptions), "\n", "\n"+in))
		switch g.pick(3) {
		case 0:
			fmt.Fprintf(w, "%srespond%s `%s`%s\n", in, g.matcher(), pickFrom(g, templateBodies), pickFrom(g, templateStatuses))
		case 1:
			// The files under root, index.html a template.
			fmt.Fprintf(w, "%sroot * %s\n%sfile_server%s\n", in, g.root, in, g.matcher())
		}
	case opPHPFastCGI:
		g.fastCGI(w, depth, g.matcher())
	case opProxyMore:
		g.proxyMore(w, depth, g.matcher())
	case opRespondClose:
		fmt.Fprintf(w, "%srespond%s %s {\n%s\t%s\n%s}\n", in, g.matcher(), pickFrom(g, responds), in,
			strings.ReplaceAll(pickFrom(g, respondCloses), "\n", "\n\t"+in), in)
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

// namedRoute reads which named route an invoke calls: one of three,
// whose body is written (outside the site) the first time one is
// invoked, or one never defined. A body may invoke the route it is in,
// or one that invokes it: pollproxy must refuse that, naming a line.
func (g *siteGen) namedRoute() string {
	i := g.pick(4)
	if i == 3 {
		return "undefined"
	}
	name := fmt.Sprintf("r%d", i)
	if g.defined[name] {
		return name
	}
	if g.defined == nil {
		g.defined = map[string]bool{}
	}
	g.defined[name] = true
	// A named route's matchers are its own: they are hoisted to the top
	// of its block, not of the site.
	named := g.named
	g.named = nil
	var body strings.Builder
	g.routes(&body, 1, placeNested)
	var b strings.Builder
	b.WriteString("\n&(" + name + ") {\n")
	for _, n := range g.named {
		b.WriteString("\t" + n + "\n")
	}
	b.WriteString(body.String() + "}\n")
	g.named = named
	g.namedRoutes = append(g.namedRoutes, b.String())
	return name
}

// fastCGI writes a php_fastcgi, or a reverse_proxy with transport
// fastcgi, to an upstream that refuses connections or to the HTTP
// origin (which does not speak FastCGI: its answer to the records is an
// HTTP/1.1 400), with options from the tables.
func (g *siteGen) fastCGI(w *strings.Builder, depth int, m string) {
	in := indent(depth)
	up := g.dead
	if g.pick(2) == 0 {
		up = g.origin
	}
	n := g.pick(4)
	if g.pick(2) == 0 {
		fmt.Fprintf(w, "%sphp_fastcgi%s %s", in, m, up)
		if n == 0 {
			w.WriteString("\n")
			return
		}
		w.WriteString(" {\n")
		for range n {
			fmt.Fprintf(w, "%s\t%s\n", in, g.rooted(pickFrom(g, phpOptions)))
		}
		w.WriteString(in + "}\n")
		return
	}
	fmt.Fprintf(w, "%sreverse_proxy%s %s {\n%s\ttransport fastcgi {\n", in, m, up, in)
	for range n {
		fmt.Fprintf(w, "%s\t\t%s\n", in, g.rooted(pickFrom(g, fastCGIOptions)))
	}
	fmt.Fprintf(w, "%s\t}\n%s}\n", in, in)
}

// rooted puts the site's file root in an option that names ROOT.
func (g *siteGen) rooted(opt string) string { return strings.ReplaceAll(opt, "ROOT", g.root) }

// proxyMore writes a reverse_proxy with what the first table of options
// lacks: HTTP/2 to the origin (h2c:// or transport http's versions),
// method and rewrite, to the origin or the dead upstream.
func (g *siteGen) proxyMore(w *strings.Builder, depth int, m string) {
	in := indent(depth)
	up := g.origin
	if g.pick(4) == 0 {
		up = g.dead
	}
	if g.pick(2) == 0 {
		up = "h2c://" + up
	}
	fmt.Fprintf(w, "%sreverse_proxy%s %s {\n", in, m, up)
	live := !strings.HasSuffix(up, g.dead)
	// An h2c origin resets a stream it finds malformed (Go's does for a
	// path with a bad escape, which pollproxy forwards as it came), and
	// pollproxy passes the origin's reset on (a 502 would hide the code
	// a gRPC client acts on), where Caddy answers 502.
	g.abort = g.abort || live && strings.HasPrefix(up, "h2c://")
	for range 1 + g.pick(3) {
		opt := pickFrom(g, proxyMoreOptions)
		g.abort = g.abort || opt == "method HEAD" || live && strings.Contains(opt, "versions h2c") // see abort
		fmt.Fprintf(w, "%s\t%s\n", in, strings.ReplaceAll(opt, "\n", "\n\t"+in))
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
	kind := g.pick(13)
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
	case 11:
		return "vars " + pickFrom(g, varMatches)
	case 12:
		return "vars_regexp " + pickFrom(g, varRegexps)
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

// The tables of the directives added later (vars, map, invoke,
// templates, FastCGI, HTTP/2 to origins, respond's close).
var (
	varNames  = []string{"tier", "level", "who", "{path}", "a.b", "http.vars.x", "root", `""`, "{kind}"}
	varValues = []string{"gold", "{header.X-Who}", "{vars.tier}", "{http.vars.level}", `""`, "{kind}", "{re.g.1}", "007",
		"1.50", "true", "{query.k}", "/s/404", "{vars.who}{vars.who}", "{http.request.uri}"}
	varUses = []string{
		`respond@m "{vars.tier} {http.vars.level} {kind} {num}"`, "header@m X-V {vars.tier}", "request_header@m X-Kind {kind}",
		`respond@m "{kind}" {num}`, "rewrite@m {kind}", "redir@m {vars.to}", `error@m "{kind}" {vars.level}`,
	}
	varMatches = []string{"tier gold", "level silver bronze", "{kind} apple", "{path} /a", `who ""`, "nope", "{vars.tier} gold",
		"tier gold silver", "level /s/404", "{num} 007"}
	varRegexps = []string{"g tier ^(go)ld$", "who ^(z+)$", "{kind} ^(a)", "tier (", "{path} ^/s/(?P<n>\\d+)", "tier .*",
		"lv level ^/s/", "{kind} ^apple$"}

	mapSources = []string{"{path}", "{host}", "{header.X-A}", "{query.k}", "{vars.tier}", "{method}", "literal", "{kind}"}
	mapDests   = []string{"{kind}", "{kind} {num}", "{vars.to}", "{path}", "kind", "{}", "{kind} {kind}", "{http.vars.level}"}
	mapKeys    = []string{"/a", "~^/b/(.*)$", "~(", "default", `~^/s/(?P<n>\d+)`, `""`, "GET", "127.0.0.1", "/api/users", "~.*"}
	mapOutputs = []string{"apple", "-", `"b-$1"`, "{path}", "{header.X-A}", "${n}", "007", "1.50", "true", "{kind}", "{num}",
		"/s/503", "https://{host}/x", `""`, "$9"}

	templateOptions = []string{"", " {\n\tmime text/css text/html text/plain\n}", " {\n\tbetween [[ ]]\n}", " {\n\troot /\n}",
		" {\n\tmime\n}", " {\n\tbetween <<\n}", " {\n\textensions\n}", " nope"}
	templateBodies = []string{
		`{{.Req.URL.Path}} {{.Host}} {{.RemoteIP}}`, `{{ nope`, `x{{httpError 410}}`, `{{httpError 99}}`,
		`{{.RespHeader.Set "Content-Length" "3"}}abcdef`, `{{.RespHeader.Set "X-T" "t"}}x`, `{{.RespHeader.Del "Content-Type"}}y`,
		`{{include "index.html"}}`, `{{include "/etc/hostname"}}`, `{{readFile "../../x"}}`, `{{placeholder "http.request.uri"}}`,
		`{{range until 3000}}abcdefghij{{end}}`, `{{markdown "# hi *there*"}}`, ``, `{{template "x"}}`,
		`{{.Req.Header.Get "X-A"}}`, `{{(splitFrontMatter "---\nx: [\n---\nb").Body}}`, `[[.Host]] {{.Host}}`,
		`{{listFiles "/"}}`, `{{httpInclude "/"}}`, `{{env "HOME"}}{{ph "vars.tier"}}`, `{{.Cookie "c"}}`, `{{index .Args 5}}`,
	}
	templateStatuses = []string{"", " 200", " 404", " 500", " 204", " 103"}

	phpOptions = []string{"root ROOT", "split .php", "index off", "index index.html", "env A b", "try_files {path} index.php",
		"capture_stderr", "read_timeout 1s", "dial_timeout 100ms", "resolve_root_symlink", "split", "header_up X-A a",
		"lb_retries 1", "method POST", "transport http", "root", "write_timeout 1s", "try_files", "env"}
	fastCGIOptions = []string{"root ROOT", "split .php", "env A b", "env SCRIPT_FILENAME /x", "capture_stderr", "read_timeout 1s",
		"dial_timeout 100ms", "resolve_root_symlink", "split", "root", "write_timeout 0", "nope"}
	proxyMoreOptions = []string{
		"transport http {\n\tversions h2c 2\n}", "transport http {\n\tversions h2c\n}", "transport http {\n\tversions 2\n}",
		"transport http {\n\tversions 1.1 2\n}", "transport http {\n\tversions 3\n}", "transport http {\n\tversions\n}",
		"transport http {\n\tversions 1.1\n}", "method POST", "method {query.m}", "method get", "method", "method HEAD",
		"rewrite /s/404", "method GET\nrewrite /nobody", "header_up X-A a", "flush_interval -1", "lb_retries 1",
		"method {vars.tier}", "header_down -Content-Length",
	}
	respondCloses = []string{"close", "close", "body \"bye\"\nclose", "close", "close extra", "close\nclose", "body"}
)
