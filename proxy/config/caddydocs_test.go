package config

import (
	"strings"
	"testing"
)

// The configuration examples of Caddy's documentation (caddyserver.com/docs:
// the reverse_proxy, handle, handle_path, route, redir, respond, header,
// uri, rewrite, basic_auth, forward_auth, handle_errors, error, intercept,
// encode, vars, map, templates, invoke, tls and log directive pages, the
// request matchers page, and the global options page: its general, TLS,
// server and log options), each as
// the Caddyfile a Caddy user would write. Every one validates, or fails
// with "NAME is not supported by pollproxy" on the line that uses NAME.

// docSite is an example given as directives (Caddy's "caddy-d" blocks),
// in the site block they go in; the example starts on line 2.
func docSite(directives string) string { return "example.com {\n" + directives + "\n}\n" }

// docMatcher is an example that defines a named matcher: a site that
// defines it and responds through it, so it is used as Caddy would use it.
func docMatcher(def string) string {
	name := strings.Fields(def)[0]
	return docSite(def + "\nrespond " + name + " \"matched\"")
}

// docGlobal is an example of global options alone, followed by a site
// that uses them, as a Caddy user would write it.
func docGlobal(options string) string { return options + "\nexample.com {\n\trespond \"Hello\"\n}\n" }

// docTLSOption is an example of global options alone, which Caddy takes
// as a whole Caddyfile: with a site, which pollproxy wants; the options
// start on line 2.
func docTLSOption(options string) string {
	return "{\n" + options + "\n}\n\nexample.com {\n\trespond ok\n}\n"
}

// docExample is one example: its page, the Caddyfile and "" (it
// validates) or the error it gives, with its line (a prefix when it ends
// in "*").
type docExample struct {
	page, caddyfile, want string
}

var caddyDocExamples = []docExample{
	// reverse_proxy
	{"reverse_proxy", "example.com {\n\treverse_proxy localhost:9005\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy node1:80 node2:80 node3:80\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy /api/* node1:80 node2:80 node3:80 {\n\t\tlb_policy cookie api_sticky\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy node1:80 node2:80 node3:80 {\n\t\thealth_uri /healthz\n\t\tlb_try_duration 5s\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy localhost:8080 {\n\t\ttransport http {\n\t\t\tdial_timeout 2s\n\t\t\tresponse_header_timeout 30s\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy https://example.com\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy 10.0.0.1:443 {\n\t\ttransport http {\n\t\t\ttls_insecure_skip_verify\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy 10.0.0.1:443 {\n\t\ttransport http {\n\t\t\ttls_trust_pool file /path/to/cert.pem\n\t\t\ttls_server_name app.example.com\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\thandle_path /prefix/* {\n\t\treverse_proxy localhost:9000\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\thandle_path /old-prefix/* {\n\t\trewrite /new-prefix{path}\n\t\treverse_proxy localhost:9000\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy localhost:8080 {\n\t\t@accel header X-Accel-Redirect *\n\t\thandle_response @accel {\n\t\t\troot /path/to/private/files\n\t\t\trewrite {rp.header.X-Accel-Redirect}\n\t\t\tmethod GET\n\t\t\tfile_server\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy localhost:8080 {\n\t\t@error status 500 503\n\t\thandle_response @error {\n\t\t\troot /path/to/error/pages\n\t\t\trewrite /{rp.status_code}.html\n\t\t\tfile_server\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy {\n\t\tdynamic a example.com 9000\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy {\n\t\tdynamic srv _api._tcp.example.com\n\t}\n}\n", ""},
	{"reverse_proxy", "example.com {\n\treverse_proxy node1:80 node2:80 node3:80 {\n\t\thealth_uri /health\n\t\thealth_upstream 127.0.0.1:53336\n\t\thealth_headers {\n\t\t\tFull-Upstream {http.reverse_proxy.active.target_upstream}\n\t\t}\n\t}\n}\n", ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\tlb_policy header X-Upstream {\n\t\tfallback first\n\t}\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_up Some-Header \"the value\"\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_down +Some-Header \"first value\"\n\theader_down +Some-Header \"second value\"\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_up -Some-Header\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_up -Some-*\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_up -*\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy localhost:9000 {\n\theader_up Some-Header \"^prefix-([A-Za-z0-9]*)$\" \"replaced-$1-suffix\"\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy https://example.com {\n\theader_up Host {upstream_hostport}\n}"), ""},
	{"reverse_proxy", docSite("reverse_proxy https://example.com {\n\theader_up Host {hostport}\n}"), ""},

	// vars
	{"vars", docSite("vars id 123"), ""},
	{"vars", docSite("vars {\n\tfoo bar\n\tabc true\n\tnum 1\n}"), ""},
	{"vars", docSite("vars /api/* {\n\tfoo bar\n}\nrespond {vars.foo}"), ""},

	// templates
	{"templates", docSite("templates"), ""},
	{"templates", docSite("root * /srv\ntemplates\nfile_server"), ""},
	{"templates", docSite("header Content-Type text/plain\ntemplates\nrespond \"Current year is: {{now | date \\\"2006\\\"}}\""), ""},
	{"templates", docSite("templates {\n\tbetween <% %>\n}"), ""},

	// invoke
	{"invoke", "&(app-proxy) {\n\treverse_proxy app-01:8080 app-02:8080 app-03:8080\n}\n\nexample.com {\n\tinvoke app-proxy\n}\n\nwww.example.com {\n\tinvoke app-proxy\n}\n", ""},
	{"invoke", "&(app-proxy) {\n\treverse_proxy app-01:8080 app-02:8080 app-03:8080 {\n\t\tlb_policy least_conn\n\t\thealth_uri /healthz\n\t\thealth_interval 5s\n\t}\n}\n\nexample.com {\n\tinvoke app-proxy\n}\n\napi.example.com {\n\tinvoke app-proxy\n}\n", ""},

	// map
	{"map", docSite("map {host}             {my_placeholder}  {magic_number} {\n\texample.com        \"some value\"      3\n\tfoo.example.com    \"another value\"\n\t~(.*)\\.example\\.com$ \"${1} subdomain\" 5\n\n\t~.*\\.net$          -                 7\n\t~.*\\.xyz$          -                 15\n\n\tdefault            \"unknown domain\"  42\n}\nrespond \"{my_placeholder} {magic_number}\""), ""},

	// handle
	{"handle", "example.com {\n\thandle /foo/* {\n\t\tfile_server\n\t}\n\n\thandle {\n\t\treverse_proxy 127.0.0.1:8080\n\t}\n}\n", ""},
	{"handle", "example.com {\n\thandle_path /foo/* {\n\t\t# The path has the \"/foo\" prefix stripped\n\t}\n\n\thandle /bar/* {\n\t\t# The path still retains \"/bar\"\n\t}\n}\n", ""},
	{"handle", "example.com {\n\thandle /foo* {\n\t\thandle /foo/bar* {\n\t\t\t# This block only matches paths under /foo/bar\n\t\t}\n\n\t\thandle {\n\t\t\t# This block matches everything else under /foo/\n\t\t}\n\t}\n\n\thandle {\n\t\t# This block matches everything else (acts as a fallback)\n\t}\n}\n", ""},

	// handle_path
	{"handle_path", "example.com {\n\t# Serve your API, stripping the /api prefix\n\thandle_path /api/* {\n\t\treverse_proxy localhost:9000\n\t}\n\n\t# Serve your static site\n\thandle {\n\t\troot /srv\n\t\tfile_server\n\t}\n}\n", ""},

	// route
	{"route", "example.com {\n\tfile_server /specific.html\n\tredir https://anothersite.com{uri}\n}\n", ""},
	{"route", "example.com {\n\troute {\n\t\tfile_server /specific.html\n\t\tredir https://anothersite.com{uri}\n\t}\n}\n", ""},
	{"route", "example.com {\n\troot /srv\n\troute {\n\t\treverse_proxy /api* localhost:9000\n\n\t\ttry_files {path} /index.html\n\t\tfile_server\n\t}\n}\n", ""},

	// redir
	{"redir", "www.example.com {\n\tredir https://example.com\n}\n", ""},
	{"redir", "www.example.com {\n\tredir https://example.com{uri}\n}\n", ""},
	{"redir", "www.example.com {\n\tredir https://example.com{uri} permanent\n}\n", ""},
	{"redir", "example.com {\n\tredir /about-us /about\n\treverse_proxy localhost:9000\n}\n", ""},

	// respond
	{"respond", "example.com {\n\trespond /health-check 200\n\trespond \"Hello, world!\"\n}\n", ""},
	{"respond", "example.com {\n\trespond /secret/* \"Access denied\" 403 {\n\t\tclose\n\t}\n}\n", ""},
	{"respond", "example.com {\n\theader Content-Type text/html\n\trespond <<HTML\n\t\t<html>\n\t\t\t<head><title>Foo</title></head>\n\t\t\t<body>Foo</body>\n\t\t</html>\n\t\tHTML 200\n}\n", ""},

	// header
	{"header", docSite("header Custom-Header \"My value\""), ""},
	{"header", docSite("header -Hidden"), ""},
	{"header", docSite("header Location http:// https://"), ""},
	{"header", docSite("header {\n\t# disable FLoC tracking\n\tPermissions-Policy interest-cohort=()\n\n\t# enable HSTS\n\tStrict-Transport-Security max-age=31536000;\n\n\t# disable clients from sniffing the media type\n\tX-Content-Type-Options nosniff\n\n\t# clickjacking protection\n\tX-Frame-Options DENY\n}"), ""},
	{"header", docSite("route {\n\theader           Cache-Control max-age=3600\n\theader /static/* Cache-Control max-age=31536000\n}"), ""},
	{"header", docSite("header ?Cache-Control \"max-age=3600\"\nreverse_proxy upstream:443"), ""},
	{"header", docSite("@GET method GET\nheader @GET Cache-Control \"max-age=3600\" {\n\tmatch status 2xx\n}\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header {\n\t-Cache-Control\n\t-CDN-Cache-Control\n\tmatch status 500\n}\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header {\n\tCache-Control \"max-age=3600\"\n\tVary \"Sec-CH-Prefers-Color-Scheme\"\n\tmatch {\n\t\theader Accept-CH \"*Sec-CH-Prefers-Color-Scheme*\"\n\t\theader Critical-CH \"Sec-CH-Prefers-Color-Scheme\"\n\t}\n}\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header >Access-Control-Allow-Origin \"\\*\" \"allowed-partner.com\"\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header Access-Control-Allow-Origin \"allowed-partner.com\" {\n\tmatch header Access-Control-Allow-Origin *\n}\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header /no-cache* >Cache-Control no-cache\nreverse_proxy upstream:443"), ""},
	{"header", docSite("header >Set-Cookie (.*) \"$1; SameSite=None;\""), ""},

	// uri
	{"uri", docSite("uri strip_prefix /api"), ""},
	{"uri", docSite("uri strip_suffix .php"), ""},
	{"uri", docSite("uri replace /docs/ /v1/docs/"), ""},
	{"uri", docSite("uri path_regexp /{2,} /"), ""},
	{"uri", docSite("uri query foo bar"), ""},
	{"uri", docSite("uri query -foo"), ""},
	{"uri", docSite("uri query foo>bar"), ""},
	{"uri", docSite("uri query +foo bar"), ""},
	{"uri", docSite("uri query foo ^(ba)r $1z"), ""},
	{"uri", docSite("uri query {\n\t+foo bar\n\t-baz\n\tqux test\n\trenamethis>renamed\n}"), ""},

	// rewrite
	{"rewrite", "example.com {\n\trewrite /index.html\n}\n", ""},
	{"rewrite", "api.example.com {\n\trewrite /api{uri}\n\treverse_proxy localhost:8080\n}\n", ""},
	{"rewrite", "example.com {\n\trewrite ?a=b\n}\n", ""},
	{"rewrite", "example.com {\n\trewrite /api/* ?{query}&a=b\n}\n", ""},
	{"rewrite", "example.com {\n\trewrite /index.php?{query}&p={path}\n}\n", ""},

	// basic_auth ("hiccup" is Bob's password, as the page says)
	{"basic_auth", "example.com {\n\tbasic_auth {\n\t\t# Username \"Bob\", password \"hiccup\"\n\t\tBob $2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG\n\t}\n\trespond \"Welcome, {http.auth.user.id}\" 200\n}\n", ""},
	{"basic_auth", "example.com {\n\troot /srv\n\n\tbasic_auth /secret/* {\n\t\t# Username \"Bob\", password \"hiccup\"\n\t\tBob $2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG\n\t}\n\n\tfile_server\n}\n",
		""},
	{"basic_auth", "example.com {\n\troot /srv\n\n\tbasic_auth /secret/* argon2id {\n\t\t# Username \"Bob\", password \"hiccup\"\n\t\tBob $argon2id$v=19$m=47104,t=1,p=1$zJPvVe48N64JUa9MFlVhiw$b5Tznu0PxnA4TciY6qYe2BFPxncF1ePQaeNukHhH1cU\n\t}\n\n\tfile_server\n}\n",
		"Caddyfile:4: basic_auth: argon2id is not supported by pollproxy (want bcrypt)"},
	// encode
	{"encode", docSite("encode gzip"), ""},
	{"encode", docSite("encode zstd gzip"), ""},
	{"encode", docSite("encode"), ""},
	{"encode", "example.com {\n\troot /srv\n\tencode\n\tfile_server\n}\n", ""},

	// request matchers
	{"matchers", docSite("reverse_proxy localhost:9000"), ""},
	{"matchers", docSite("reverse_proxy * localhost:9000"), ""},
	{"matchers", docSite("reverse_proxy /api/* localhost:9000"), ""},
	{"matchers", docSite("@postfoo {\n\tmethod POST\n\tpath /foo/*\n}\nreverse_proxy @postfoo localhost:9000"), ""},
	{"matchers", docSite("root * /home/www/mysite"), ""},
	{"matchers", docSite("redir /old.html /new.html"), ""},
	{"matchers", "example.com {\n\t@websockets {\n\t\theader Connection *Upgrade*\n\t\theader Upgrade    websocket\n\t}\n\treverse_proxy @websockets localhost:6001\n\n\treverse_proxy localhost:8080\n}\n", ""},
	{"matchers", docSite("@post method POST\nreverse_proxy @post localhost:6001"), ""},
	{"matchers", docMatcher("@not-found `{err.status_code} == 404`"), ""},
	{"matchers", docMatcher("@private-ipv4 client_ip 192.168.0.0/16 172.16.0.0/12 10.0.0.0/8 127.0.0.1/8"), ""},
	{"matchers", "example.com {\n\t@denied not client_ip private_ranges\n\tabort @denied\n\n\trespond \"Hello, you must be from a private network!\"\n}\n", ""},
	{"matchers", docMatcher("@my-friends `client_ip('12.23.34.45', '23.34.45.56')`"), ""},
	{"matchers", docMatcher("@mutable `{method}.startsWith(\"P\")`"), ""},
	{"matchers", docMatcher("@methods expression {method}.startsWith(\"P\")"), ""},
	{"matchers", docMatcher("@404 expression {err.status_code} == 404"), ""},
	// CEL reads \w in a string literal as an escape it lacks: these two fail
	// in Caddy as well (caddyserver/caddy#6501), here with CEL's own error.
	{"matchers", docMatcher("@user expression path_regexp('^/user/(\\w*)') || path_regexp('^/(\\w*)')"), "Caddyfile:2: expression: expression path_regexp('^/user/(\\w*)') || path_regexp('^/(\\w*)'): a backslash in a CEL string starts a CEL escape, in Caddy as here (write \\\\w, or a raw string r'^/(\\w+)'): ERROR: <input>:1:18: Syntax error: *"},
	{"matchers", docMatcher("@user `path_regexp('^/user/(\\w*)') || path_regexp('^/(\\w*)')`"), "Caddyfile:2: expression: expression path_regexp('^/user/(\\w*)') || path_regexp('^/(\\w*)'): a backslash in a CEL string starts a CEL escape, in Caddy as here (write \\\\w, or a raw string r'^/(\\w+)'): ERROR: <input>:1:18: Syntax error: *"},
	{"matchers", docSite("@api <<CEL\n\t{method} == \"GET\"\n\t&& {path}.startsWith(\"/api/\")\n\tCEL\nrespond @api \"Hello, API!\""), ""},
	{"matchers", docMatcher("@file file"), ""},
	{"matchers", docMatcher("@html file {\n\ttry_files {path}.html {path} \n}"), ""},
	{"matchers", docMatcher("@html-or-error file {path}.html {path} =404"), ""},
	{"matchers", docMatcher("@file `file()`"), ""},
	{"matchers", docMatcher("@upgrade header Connection *Upgrade*"), ""},
	// forward_auth
	{"forward_auth", "auth.example.com {\n\treverse_proxy authelia:9091\n}\n\napp1.example.com {\n\tforward_auth authelia:9091 {\n\t\turi /api/authz/forward-auth\n\t\tcopy_headers Remote-User Remote-Groups Remote-Name Remote-Email\n\t}\n\n\treverse_proxy app1:8080\n}\n", ""},
	{"forward_auth", "app1.example.com {\n\troute {\n\t\treverse_proxy /outpost.goauthentik.io/* http://outpost.company:9000\n\n\t\tforward_auth http://outpost.company:9000 {\n\t\t\turi /outpost.goauthentik.io/auth/caddy\n\t\t\tcopy_headers X-Authentik-Username X-Authentik-Groups X-Authentik-Entitlements X-Authentik-Email X-Authentik-Name X-Authentik-Uid X-Authentik-Jwt X-Authentik-Meta-Jwks X-Authentik-Meta-Outpost X-Authentik-Meta-Provider X-Authentik-Meta-App X-Authentik-Meta-Version\n\t\t\ttrusted_proxies private_ranges\n\t\t}\n\n\t\treverse_proxy localhost:1234\n\t}\n}\n", ""},
	{"forward_auth", docSite("forward_auth unix//run/tailscale.nginx-auth.sock {\n\turi /auth\n\theader_up Remote-Addr {remote_host}\n\theader_up Remote-Port {remote_port}\n\theader_up Original-URI {uri}\n\tcopy_headers {\n\t\tTailscale-User>X-Webauth-User\n\t\tTailscale-Name>X-Webauth-Name\n\t\tTailscale-Login>X-Webauth-Login\n\t\tTailscale-Tailnet>X-Webauth-Tailnet\n\t\tTailscale-Profile-Picture>X-Webauth-Profile-Picture\n\t}\n}\nreverse_proxy localhost:8080"), ""},
	{"forward_auth", docSite("forward_auth authelia:9091 {\n\tcopy_headers Remote-User\n}"), "Caddyfile:2: forward_auth: the 'uri' subdirective is required"},
	// oauth2-proxy's documentation for Caddy: its 401 turned into the sign-in redirect
	{"forward_auth", "example.com {\n\thandle /oauth2/* {\n\t\treverse_proxy oauth2-proxy.internal:4180 {\n\t\t\theader_up X-Real-IP {remote_host}\n\t\t\theader_up X-Forwarded-Uri {uri}\n\t\t}\n\t}\n\thandle {\n\t\tforward_auth oauth2-proxy.internal:4180 {\n\t\t\turi /oauth2/auth\n\t\t\theader_up X-Real-IP {remote_host}\n\t\t\t@error status 401\n\t\t\thandle_response @error {\n\t\t\t\tredir * /oauth2/sign_in?rd={scheme}://{host}{uri}\n\t\t\t}\n\t\t}\n\t\treverse_proxy app.internal:8080\n\t}\n}\n", ""},

	// handle_errors and error
	{"handle_errors", docSite("handle_errors {\n\trespond \"{err.status_code} {err.status_text}\"\n}\nreverse_proxy localhost:8080"), ""},
	{"handle_errors", docSite("handle_errors {\n\t@5xx expression `{err.status_code} >= 500 && {err.status_code} < 600`\n\trespond @5xx \"It's a 5xx error.\"\n\trespond \"It's not a 5xx error.\"\n}\nreverse_proxy localhost:8080"), ""},
	{"handle_errors", docSite("handle_errors 404 410 {\n\trespond \"It's a 404 or 410 error!\"\n}\nhandle_errors 5xx {\n\trespond \"It's a 5xx error.\"\n}\nhandle_errors {\n\trespond \"It's another error\"\n}\nreverse_proxy localhost:8080"), ""},
	{"handle_errors", docSite("handle_errors {\n\trewrite * /{err.status_code}.html\n\tfile_server\n}\nreverse_proxy localhost:8080"), ""},
	{"handle_errors", docSite("handle_errors 40x {\n\trespond \"no\"\n}\nreverse_proxy localhost:8080"), "Caddyfile:2: handle_errors: bad status value \"40x\" (want a code such as 404 or a class such as 5xx)"},
	{"error", "example.com {\n\troot * /srv\n\n\t# Trigger errors for certain paths\n\terror /private* \"Unauthorized\" 403\n\terror /hidden* \"Not found\" 404\n\n\t# Handle the error by serving an HTML page\n\thandle_errors {\n\t\trewrite * /{err.status_code}.html\n\t\tfile_server\n\t}\n\n\tfile_server\n}\n",
		""},
	{"error", docSite("error \"Unauthorized\" 401 {\n\tmessage \"twice\"\n}"), "Caddyfile:3: error: message already specified"},

	// intercept
	{"intercept", docSite("reverse_proxy localhost:8080\nintercept {\n\t@accel header X-Accel-Redirect *\n\thandle_response @accel {\n\t\troot * /path/to/private/files\n\t\trewrite * {resp.header.X-Accel-Redirect}\n\t\tmethod * GET\n\t\tfile_server\n\t}\n}"),
		""},
	{"intercept", docSite("reverse_proxy localhost:8080\nintercept {\n\t@404 status 404\n\thandle_response @404 {\n\t\trespond \"custom 404 for {resp.header.X-App}\" 404\n\t}\n\t@teapot status 418\n\treplace_status @teapot 200\n}"), ""},
	{"intercept", docSite("respond 404\nintercept {\n\thandle_response @missing {\n\t\trespond \"x\"\n\t}\n}"), "Caddyfile:4: intercept: response matcher @missing is not defined in this intercept"},

	{"matchers", docMatcher("@foo {\n\theader Foo bar\n\theader Foo baz\n}"), ""},
	{"matchers", docMatcher("@not_foo header !Foo"), ""},
	{"matchers", docMatcher("@websockets `header({'Connection':'*Upgrade*','Upgrade':'websocket'}) || header({':protocol': 'websocket'})`"), ""},
	{"matchers", docMatcher("@login header_regexp login Cookie login_([a-f0-9]+)"), ""},
	{"matchers", docMatcher("@login header_regexp Cookie login_([a-f0-9]+)"), ""},
	{"matchers", docMatcher("@login `header_regexp('login', 'Cookie', 'login_([a-f0-9]+)')`"), ""},
	{"matchers", docMatcher("@sub host sub.example.com"), ""},
	{"matchers", docMatcher("@site host example.com www.example.com"), ""},
	{"matchers", docMatcher("@app `host('app1.example.com', 'app2.example.com')`"), ""},
	{"matchers", docMatcher("@get method GET"), ""},
	{"matchers", docMatcher("@put-delete method PUT DELETE"), ""},
	{"matchers", docMatcher("@read `method('GET', 'HEAD', 'OPTIONS')`"), ""},
	{"matchers", docMatcher("@not-assets {\n\tnot path /css/* /js/*\n}"), ""},
	{"matchers", docMatcher("@with-neither {\n\tnot path /api/*\n\tnot method POST\n}"), ""},
	{"matchers", docMatcher("@without-both {\n\tnot {\n\t\tpath /api/*\n\t\tmethod POST\n\t}\n}"), ""},
	{"matchers", docMatcher("@without-both `!path('/api*') && !method('POST')`"), ""},
	{"matchers", docMatcher("@without-both `!(path('/api*') || method('POST'))`"), ""},
	{"matchers", docMatcher("@assets path /js/* /css/* /images/*"), ""},
	{"matchers", docMatcher("@favicon path /favicon.ico"), ""},
	{"matchers", docMatcher("@extensions path *.js *.css"), ""},
	{"matchers", docMatcher("@assets `path('/js/*', '/css/*', '/images/*')`"), ""},
	{"matchers", docMatcher("@static path_regexp static \\.([a-f0-9]{6})\\.(css|js)$"), ""},
	{"matchers", docMatcher("@static path_regexp \\.([a-f0-9]{6})\\.(css|js)$"), ""},
	{"matchers", docMatcher("@static `path_regexp('\\.([a-f0-9]{6})\\.(css|js)$') && file()`"), "Caddyfile:2: expression: expression path_regexp('\\.([a-f0-9]{6})\\.(css|js)$') && file(): a backslash in a CEL string*"},
	{"matchers", docMatcher("@http2 protocol http/2+"), ""},
	{"matchers", docMatcher("@http2 `protocol('http/2+')`"), ""},
	{"matchers", docMatcher("@search query q=*"), ""},
	{"matchers", docMatcher("@sorted query sort=asc sort=desc"), ""},
	{"matchers", docMatcher("@search-sort `query({'sort': ['asc', 'desc'], 'q': '*'})`"), ""},
	{"matchers", docMatcher("@private-ipv4 remote_ip 192.168.0.0/16 172.16.0.0/12 10.0.0.0/8 127.0.0.1/8"), ""},
	{"matchers", "example.com {\n\t@denied not remote_ip private_ranges\n\tabort @denied\n\n\trespond \"Hello, you must be from a private network!\"\n}\n", ""},
	{"matchers", docMatcher("@my-friends `remote_ip('12.23.34.45', '23.34.45.56')`"), ""},
	{"matchers", "example.com {\n\tvars combined_header \"{header.Foo}_{header.Bar}\"\n\t@special vars {vars.combined_header} \"123_456\"\n\thandle @special {\n\t\trespond \"You sent Foo=123 and Bar=456!\"\n\t}\n\thandle {\n\t\trespond \"Foo and Bar were not special.\"\n\t}\n}\n", ""},
	{"matchers", docMatcher("@magic `vars({'magic_number': ['3', '5']})`"), ""},
	{"matchers", docMatcher("@magic vars_regexp magic {magic_number} ^(4.*)"), ""},
	{"matchers", docMatcher("@magic vars_regexp {magic_number} ^(4.*)"), ""},
	{"matchers", docMatcher("@magic `vars_regexp('magic_number', '^(4.*)')`"), ""},

	// tls (the directive's page)
	{"tls", "example.com {\n\ttls cert.pem key.pem\n}\n", ""},
	{"tls", "example.com {\n\ttls internal\n}\n", ""},
	{"tls", "https:// {\n\ttls internal {\n\t\ton_demand\n\t}\n}\n", ""},
	{"tls", "example.com {\n\ttls {\n\t\tissuer internal {\n\t\t\tca foo\n\t\t}\n\t}\n}\n", ""},
	{"tls", "example.com {\n\ttls your@email.com\n}\n", ""},
	{"tls", "*.example.com {\n\ttls {\n\t\tdns cloudflare {env.CLOUDFLARE_API_TOKEN}\n\t}\n}\n", "Caddyfile:3: tls: dns is not supported by pollproxy"},
	{"tls", "https:// {\n\ttls {\n\t\tget_certificate http http://localhost:9007/certs\n\t}\n}\n", ""},
	{"tls", docSite("tls {\n\tget_certificate tailscale\n}"), "Caddyfile:3: tls: get_certificate tailscale is not supported by pollproxy"},
	{"tls", "example.com {\n\ttls {\n\t\tclient_auth {\n\t\t\tmode                 require_and_verify\n\t\t\ttrusted_ca_cert_file ../caddy.ca.cer\n\t\t\ttrusted_ca_cert_file ../root.ca.cer\n\t\t}\n\t}\n}\n", ""},
	{"tls", docSite("tls {\n\tprotocols tls1.3\n}"), ""},
	{"tls", docSite("tls {\n\tprotocols tls1.2 tls1.3\n\tciphers TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\n\tcurves x25519 secp256r1\n\talpn h2 http/1.1\n}"), ""},
	{"tls", docSite("tls {\n\tkey_type p384\n\treuse_private_keys\n\trenewal_window_ratio 0.5\n}"), ""},
	{"tls", docSite("tls {\n\tca https://acme-staging-v02.api.letsencrypt.org/directory\n\tca_root /path/to/root.pem\n\teab GD-VvWydSVFuss_GhBwYQQ MjXU3MH-Z0WQ7piMAnVsCpD1shgMiWx6ggPWiTmydgUaj7dWWWfQfA\n}"), ""},
	{"tls", docSite("tls {\n\tclient_auth {\n\t\tmode request\n\t}\n}"), ""},
	{"tls", docSite("tls {\n\tclient_auth {\n\t\ttrust_pool file /path/to/ca.pem {\n\t\t\tpem_file /path/to/other.pem\n\t\t}\n\t}\n}"), ""},
	{"tls", docSite("tls {\n\tclient_auth {\n\t\tverifier leaf file /path/to/client.pem\n\t}\n}"), ""},
	{"tls", docSite("tls {\n\tclient_auth {\n\t\ttrust_pool pki_root local\n\t}\n}"), "Caddyfile:4: tls: client_auth: trust_pool pki_root: pki_root CA pool requires that a PKI app is configured: the pki global option, or a site whose certificate comes from the local CA"},
	{"tls", docSite("tls {\n\tissuer acme {\n\t\tdir https://acme.example.com/directory\n\t\ttest_dir https://acme-staging.example.com/directory\n\t\temail you@example.com\n\t\ttimeout 2m\n\t\tdisable_http_challenge\n\t\tdisable_tlsalpn_challenge\n\t\talt_http_port 8080\n\t\talt_tlsalpn_port 8443\n\t\teab KEY_ID MAC_KEY\n\t\ttrusted_roots /path/to/root.pem\n\t\tpreferred_chains {\n\t\t\troot_common_name \"ISRG Root X2\"\n\t\t}\n\t}\n}"), ""},
	{"tls", docSite("tls {\n\tissuer acme {\n\t\tdns cloudflare TOKEN\n\t}\n}"), "Caddyfile:4: tls: issuer acme: dns is not supported by pollproxy"},
	{"tls", docSite("tls {\n\tissuer zerossl API_KEY\n}"), ""},
	{"tls", docSite("tls {\n\tissuer internal {\n\t\tlifetime 1d\n\t\tsign_with_root\n\t}\n}"), ""},
	{"tls", docSite("tls {\n\tissuer acme\n\tissuer internal\n}"), ""},
	{"tls", docSite("tls {\n\tload /path/to/certs\n}"), ""},
	{"tls", docSite("tls force_automate"), ""},
	{"tls", docSite("tls {\n\tinsecure_secrets_log /var/log/caddy/sslkeylog.log\n}"), ""},

	// TLS global options (the global options page)
	{"options", "{\n\tshutdown_delay 30s\n}\n\nexample.com {\n\thandle /health-check {\n\t\t@goingDown vars {http.shutting_down} true\n\t\trespond @goingDown \"Bye-bye in {http.time_until_shutdown}\" 503\n\t\trespond 200\n\t}\n\thandle {\n\t\trespond \"Hello, world!\"\n\t}\n}\n",
		""},
	{"options", docTLSOption("\tdebug"), ""},
	{"options", docTLSOption("\tstorage_clean_interval 7d"), ""},
	{"options", docTLSOption("\tpersist_config off"), ""},
	{"options", docTLSOption("\temail admin@example.com"), ""},
	{"options", docTLSOption("\tdefault_sni example.com"), ""},
	{"options", docTLSOption("\tfallback_sni example.com"), ""},
	{"options", docTLSOption("\tlocal_certs"), ""},
	{"options", docTLSOption("\tskip_install_trust"), ""},
	{"options", docTLSOption("\tacme_ca https://acme-staging-v02.api.letsencrypt.org/directory"), ""},
	{"options", docTLSOption("\tacme_ca_root /path/to/ca/root.pem"), ""},
	{"options", docTLSOption("\tacme_eab {\n\t\tkey_id GD-VvWydSVFuss_GhBwYQQ\n\t\tmac_key MjXU3MH-Z0WQ7piMAnVsCpD1shgMiWx6ggPWiTmydgUaj7dWWWfQfA\n\t}"), ""},
	{"options", docTLSOption("\tacme_dns cloudflare {env.CLOUDFLARE_API_TOKEN}"), "Caddyfile:2: acme_dns is not supported by pollproxy"},
	{"options", "{\n\ton_demand_tls {\n\t\task http://localhost:9123/ask\n\t}\n}\n\nhttps:// {\n\ttls {\n\t\ton_demand\n\t}\n}\n", ""},
	{"options", docTLSOption("\tkey_type ed25519"), ""},
	{"options", docTLSOption("\tcert_issuer acme {\n\t\temail you@example.com\n\t}\n\tcert_issuer zerossl API_KEY"), ""},
	{"options", docTLSOption("\trenew_interval 30m"), ""},
	{"options", docTLSOption("\tcert_lifetime 30d"), ""},
	{"options", docTLSOption("\tocsp_interval 2h"), ""},
	{"options", docTLSOption("\tocsp_stapling off"), ""},
	{"options", docTLSOption("\tpreferred_chains smallest"), ""},
	{"options", docTLSOption("\tpreferred_chains {\n\t\troot_common_name \"ISRG Root X2\"\n\t}"), ""},
	{"options", docTLSOption("\tpki {\n\t\tca local {\n\t\t\tname \"My Local CA\"\n\t\t}\n\t}"), ""},
	{"options", docTLSOption("\tpki {\n\t\tca local {\n\t\t\troot_cn \"My Local CA - 2024 ECC Root\"\n\t\t}\n\t}"), ""},
	{"options", docTLSOption("\tpki {\n\t\tca local {\n\t\t\tintermediate_cn \"My Local CA - ECC Intermediate\"\n\t\t}\n\t}"), ""},
	{"options", docTLSOption("\tpki {\n\t\tca local {\n\t\t\tintermediate_lifetime 30d\n\t\t}\n\t}"), ""},
	{"options", docTLSOption("\tpki {\n\t\tca local {\n\t\t\troot {\n\t\t\t\tformat pem_file\n\t\t\t\tcert /path/to/root.pem\n\t\t\t\tkey /path/to/root.key\n\t\t\t}\n\t\t\tintermediate {\n\t\t\t\tformat pem_file\n\t\t\t\tcert /path/to/intermediate.pem\n\t\t\t\tkey /path/to/intermediate.key\n\t\t\t}\n\t\t}\n\t}"), ""},
	{"options", "{\n\tauto_https off\n}\n\nexample.com {\n\trespond ok\n}\n", ""},

	// global options: the general and server options (caddyfile/options)
	// and the log directive (directives/log), each as written there; an
	// example of global options alone is given a site (docGlobal).
	{"log", docGlobal("{\n\tlog default {\n\t\toutput stdout\n\t\tformat json\n\t\tinclude http.log.access admin.api\n\t}\n}\n"), "Caddyfile:5: log: include admin.api is not supported by pollproxy (its loggers carry only access logs, http.log.access...)"},
	{"options", docGlobal("{\n\tgrace_period 10s\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers :443 {\n\t\tlistener_wrappers {\n\t\t\thttp_redirect\n\t\t\ttls\n\t\t}\n\t}\n\n\tservers :80 {\n\t\tprotocols h1 h2c\n\t}\n}\n"), ""},
	{"servers", "{\n\t# This will NOT match the server, bind address missing\n\tservers :8080 {\n\t\tname private\n\t}\n\n\t# This will work because it's an exact match\n\tservers 192.168.1.2:8080 {\n\t\tname public\n\t}\n}\n\n:8080 {\n\tbind 127.0.0.1\n}\n\n:8080 {\n\tbind 192.168.1.2\n}\n", "Caddyfile:14: bind is not supported by pollproxy\nCaddyfile:18: bind is not supported by pollproxy"},
	{"servers", "{\n\tservers :443 {\n\t\tname https\n\t}\n\n\tservers :80 {\n\t\tname http\n\t}\n}\n\nexample.com {\n}\n\nhttp:// {\n}\n", ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\thttp_redirect\n\t\t\ttls\n\t\t}\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\tproxy_protocol {\n\t\t\t\ttimeout 2s\n\t\t\t\tallow 192.168.86.1/24 192.168.86.1/24\n\t\t\t\tdeny 10.0.0.0/8\n\t\t\t\tfallback_policy reject\n\t\t\t}\n\t\t\ttls\n\t\t}\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\ttimeouts {\n\t\t\tread_body   10s\n\t\t\tread_header 5s\n\t\t\twrite       30s\n\t\t\tidle        10m\n\t\t}\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tkeepalive_interval 30s\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tkeepalive_idle 1m\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tkeepalive_count 5\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\t0rtt off\n\t}\n}\n"), "Caddyfile:3: servers: 0rtt is not supported by pollproxy: it configures HTTP/3 (QUIC), which pollproxy does not serve"},
	{"servers", docGlobal("{\n\tservers {\n\t\ttrusted_proxies static 12.34.56.0/24 1200:ab00::/32\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\ttrusted_proxies static private_ranges\n\t\ttrusted_proxies_strict\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\ttrusted_proxies_unix\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\ttrusted_proxies static private_ranges\n\t\tclient_ip_headers X-Forwarded-For X-Real-IP\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tmetrics\n}\n"), ""},
	{"servers", docGlobal("{\n\tmetrics {\n\t\tper_host\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tmetrics {\n\t\tper_host\n\t\tobserve_catchall_hosts\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tmetrics {\n\t\totlp\n\t}\n}\n"), "Caddyfile:3: metrics: otlp is not supported by pollproxy"},
	{"servers", docGlobal("{\n\tservers {\n\t\ttrace\n\t}\n}\n"), "Caddyfile:3: servers: trace is not supported by pollproxy: it logs each handler a request runs through at DEBUG level, and pollproxy's loggers carry access logs only"},
	{"servers", docGlobal("{\n\tservers {\n\t\tmax_header_size 5MB\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tenable_full_duplex\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tlog_credentials\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers :80 {\n\t\tprotocols h1 h2c\n\t}\n}\n"), ""},
	{"servers", docGlobal("{\n\tservers {\n\t\tstrict_sni_host on\n\t}\n}\n"), ""},
	{"log", "example.com {\n\tlog\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\toutput file /var/log/access.log\n\t}\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\toutput file /var/log/access.log {\n\t\t\troll_at 00:00\n\t\t\troll_size 1gb\n\t\t\troll_keep 5\n\t\t\troll_keep_for 720h\n\t\t}\n\t}\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\tformat filter {\n\t\t\trequest>headers>User-Agent delete\n\t\t}\n\t}\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\tformat filter {\n\t\t\trequest>headers>Cookie cookie {\n\t\t\t\treplace session REDACTED\n\t\t\t\tdelete secret\n\t\t\t}\n\t\t}\n\t}\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\tformat filter {\n\t\t\trequest>remote_ip ip_mask 16 32\n\t\t\trequest>client_ip ip_mask 16 32\n\t\t}\n\t}\n}\n", ""},
	{"log", "example.com {\n\tlog {\n\t\tformat append {\n\t\t\tserver_id {env.SERVER_ID}\n\t\t\twrap filter {\n\t\t\t\trequest>headers>Cookie delete\n\t\t\t}\n\t\t}\n\t}\n}\n", ""},
	{"log", "(subdomain-log) {\n\tlog {\n\t\thostnames {args[0]}\n\t\toutput file /var/log/{args[0]}.log\n\t}\n}\n\n*.example.com {\n\timport subdomain-log foo.example.com\n\t@foo host foo.example.com\n\thandle @foo {\n\t\trespond \"foo\"\n\t}\n\n\timport subdomain-log bar.example.com\n\t@bar host bar.example.com\n\thandle @bar {\n\t\trespond \"bar\"\n\t}\n}\n", ""},
	// format transform is a plugin's encoder (caddyserver/transform-encoder):
	// stock Caddy refuses it as well ("module not registered").
	{"log-plugin", "{\n\tlog access-formatted {\n\t\tinclude http.log.access.foo\n\t\toutput file /var/log/access-foo.log\n\t\tformat transform \"{common_log}\"\n\t}\n\n\tlog access-json {\n\t\tinclude http.log.access.foo\n\t\toutput file /var/log/access-foo.json\n\t\tformat json\n\t}\n}\n\nfoo.example.com {\n\tlog foo\n}\n", "Caddyfile:5: log: format transform is not supported by pollproxy (want json, console, filter or append)"},
	{"log", "example.com {\n\tlog {\n\t\tsampling {\n\t\t\tinterval   1s\n\t\t\tfirst      5\n\t\t\tthereafter 10\n\t\t}\n\t}\n}\n", ""},
	{"log", docSite("log {\n\toutput stderr\n}"), ""},
	{"log", docSite("log {\n\toutput stdout\n}"), ""},
	{"log", docSite("log {\n\toutput discard\n}"), ""},
	{"log", docSite("log {\n\tformat console\n}"), ""},
	{"log", docSite("log {\n\tformat json\n}"), ""},
}

func TestCaddyDocExamples(t *testing.T) {
	for i, x := range caddyDocExamples {
		_, err := Parse("Caddyfile", []byte(x.caddyfile))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != x.want && !(strings.HasSuffix(x.want, "*") && strings.HasPrefix(got, x.want[:len(x.want)-1])) {
			t.Errorf("%s example %d:\n%s\ngot  %q\nwant %q", x.page, i, x.caddyfile, got, x.want)
		}
	}
}

// TestCaddyDocCoverage: of the server options' and the log's examples,
// at least 80% and 90% validate, and every other one fails only with
// "not supported by pollproxy" and its line.
func TestCaddyDocCoverage(t *testing.T) {
	for page, min := range map[string]float64{"servers": 0.8, "log": 0.9} {
		n, ok := 0, 0
		for i, x := range caddyDocExamples {
			if x.page != page {
				continue
			}
			n++
			if x.want == "" {
				ok++
				continue
			}
			for _, line := range strings.Split(strings.TrimSuffix(x.want, "*"), "\n") {
				if !strings.HasPrefix(line, "Caddyfile:") || !strings.Contains(line, " is not supported by pollproxy") {
					t.Errorf("%s example %d fails with %q, not with what pollproxy does not support", page, i, line)
				}
			}
		}
		if n == 0 || float64(ok) < min*float64(n) {
			t.Errorf("%s: %d of %d examples validate, want at least %.0f%%", page, ok, n, 100*min)
		}
		t.Logf("%s: %d of %d examples validate", page, ok, n)
	}
}
