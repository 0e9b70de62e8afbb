package oracle

// pendingDifference is a known difference between Caddy and pollproxy
// that is being fixed: the oracle tolerates it in the cases and fields
// named (globs: * matches anything) until the fix lands. A full run fails
// when no entry of one `what` tolerated anything any more, so the entries
// go with the fix.
type pendingDifference struct {
	what     string
	caseName string
	field    string
	// values, when set: globs of Caddy's and pollproxy's values, (none)
	// for a field one of them does not send.
	values [2]string
}

// pend is one entry: what, the case and field globs, and optionally
// globs of Caddy's and pollproxy's values.
func pend(what, caseName, field string, values ...string) pendingDifference {
	d := pendingDifference{what: what, caseName: caseName, field: field}
	copy(d.values[:], values)
	return d
}

// pending is the table the fixes empty. Case names are "SOURCE SITE
// PROTO REQUEST"; fields are "status", "body", "resp NAME" (a response
// field), "originN NAME", "originN request" (what the origin received).
var pending = []pendingDifference{
	// Being fixed (issue 33's list).
	pend("Via on proxied responses: Caddy adds it, pollproxy only to the request", "*", "resp via", "1.1 PROXY", "(none)"),
	pend("Content-Length: 0 added to a bodiless request pollproxy forwards", "*", "origin* content-length", "(none)", "0"),
	pend("the HTTP->HTTPS redirect carries an HTML body and a Content-Type", "* http GET /redirected/path?q=1", "body"),
	pend("the HTTP->HTTPS redirect carries an HTML body and a Content-Type", "* http GET /redirected/path?q=1", "resp content-type"),
	pend("the HTTP->HTTPS redirect carries an HTML body and a Content-Type", "* http GET /redirected/path?q=1", "resp content-length"),
	pend("request fields whose names hold _ or . are forwarded", "*", "origin* *_*"),
	pend("request fields whose names hold _ or . are forwarded", "*", "origin* *.*"),
	pend("header_up -* sends the request without Host", "cases/header-up-delete-all *", "origin* host"),
	pend("header_up -* sends the request without Host", "caddydocs/reverse_proxy#20 *", "origin* host"),
	pend("lb_policy cookie: another cookie value, without HttpOnly", "cases/lb-cookie *", "resp set-cookie"),
	pend("lb_policy cookie: another cookie value, without HttpOnly", "caddydocs/reverse_proxy#2 *", "resp set-cookie"),
	pend("header_up Connection {header.Connection} sends an empty Connection", "cases/connection-placeholder *", "origin* connection"),
	pend("lb_policy query hashes the raw first value", "cases/lb-query *", "*"),
	pend("uri strip_suffix / sends an empty request-target for /", "cases/uri-strip-suffix-slash * GET /", "*"),
	pend("try_files {path} / serves the root index for a directory and a missing file", "cases/try-files-path-slash *", "*"),
	pend("encode: pollproxy's own 502 never reaches handle_errors", "cases/encode-upstream-down-handle-errors *", "*"),
	pend("log: the error directive never reaches handle_errors", "cases/log-error-handle-errors *", "*"),
	pend("encode is dropped for a reverse_proxy with handle_response", "cases/encode-handle-response *", "*"),

	// Found by the oracle, for the wrappers' and the routes' owners.
	pend("encode: the error directive never reaches handle_errors (empty answer)", "cases/error-routes-encode *", "*"),
	pend("handle_errors with status blocks only: an error none matches is answered 200, Caddy answers its status", "cases/handle-errors-status-only * GET /gone", "*"),
	pend("handle_errors with status blocks only: an error none matches is answered 200, Caddy answers its status", "generated/* GET /gone", "status", "410", "200"),
	pend("root set outside handle_errors does not reach the error routes (Caddy's vars, root among them, carry over): Caddy's documented handle_errors { rewrite * /{err.status_code}.html; file_server } finds no page", "caddydocs/error#106 *", "*"),
	pend("uri strip_prefix/strip_suffix/replace do not clean the path first (Caddy: CleanPath, slashes merged)", "* GET /a//b/../c?x=1&x=2", "origin1 request"),
	pend("uri strip_prefix/strip_suffix/replace do not clean the path first (Caddy: CleanPath, slashes merged)", "* GET /a//b/../c?x=1&x=2", "body"),
	pend("uri strip_prefix/strip_suffix/replace do not clean the path first (Caddy: CleanPath, slashes merged)", "* GET /a//b/../c?x=1&x=2", "resp content-length"),
	pend("uri strip_prefix/strip_suffix/replace do not clean the path first (Caddy: CleanPath, slashes merged)", "* GET /a//b/../c?x=1&x=2", "origin1 x-path"),
	pend("uri strip_prefix/strip_suffix/replace do not clean the path first (Caddy: CleanPath, slashes merged)", "* GET /a//b/../c?x=1&x=2", "origin1 x-uri"),
	pend("a proxied response without Content-Type gets none; Caddy (Go's server) sniffs one", "* GET /notype*", "resp content-type", "text/html; charset=utf-8", "(none)"),
	pend("deferred header edits (defer, ?, >) also apply to pollproxy's own error answers; Caddy's skip them", "cases/deferred-headers-on-errors *", "resp *"),
	pend("deferred header edits (defer, ?, >) also apply to pollproxy's own error answers; Caddy's skip them", "generated/* GET /dead/*", "resp *"),
	pend("deferred header edits (defer, ?, >) also apply to pollproxy's own error answers; Caddy's skip them", "generated/* GET /forbidden", "resp *"),
	pend("deferred header edits (defer, ?, >) also apply to pollproxy's own error answers; Caddy's skip them", "generated/* GET /gone", "resp *"),
	pend("rewrite: placeholder values in the query are not query-escaped (Caddy: url.QueryEscape of each, {query} as it came); {path} goes in encoded as sent", "cases/rewrite-query-placeholders *", "*"),
	pend("{query.k} is the first value; Caddy's is every value joined with ','", "cases/placeholders * GET /r/*", "origin1 x-q"),
	pend("basic_auth's 401 does not reach handle_errors; Caddy's is an error its handle_errors renders (with its WWW-Authenticate)", "generated2/* GET /private/x*", "*"),
	pend("a bodiless request sent as POST (method POST) goes without Content-Length: 0; Caddy (Go's transport) sends it for POST, PUT and PATCH", "generated2/* GET /to-post", "origin1 content-length", "0", "(none)"),
	pend("lb_policy uri_hash and header: another hash (a per-process maphash seed), so other upstreams than Caddy's, and other ones after each restart", "cases/lb-header-uri *", "*"),
}

// deliberate are the differences pollproxy keeps on purpose, case by
// case (the normalisations in compare_test.go are the others); each is
// in docs/caddyfile.md with its reason.
var deliberateDifferences = []pendingDifference{
	pend("a HEAD answer of pollproxy's own without a body says Content-Length: 0, the GET's length; Caddy's (Go's) says none", "* HEAD *", "resp content-length", "(none)", "0"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "caddydocs/intercept#* GET /accel", "resp *"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "caddydocs/intercept#* GET /status404", "*"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "generated2/* GET */status404", "resp *"),
	pend("intercept's handle_response: Caddy's new answer keeps the intercepted response's fields, Content-Length too, so its body is cut at the old length; pollproxy's carries its own fields", "generated2/* GET */status404", "body error"),
}
