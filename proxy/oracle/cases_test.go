package oracle

// caseSources are sites written to show one behaviour each, most of them
// where pollproxy was found to differ from Caddy (the table pending
// names the ones not fixed yet).
func caseSources() []*source {
	return []*source{
		{name: "cases/cors-preflight", caddyfile: `cors.test {
	@pre method OPTIONS
	handle @pre {
		header Access-Control-Allow-Origin https://app.test
		header Access-Control-Allow-Methods "GET, POST, PUT"
		header Access-Control-Allow-Headers "Content-Type, Authorization"
		header Access-Control-Max-Age 86400
		header Vary Origin
		header Access-Control-Allow-Credentials true
		respond 204
	}
	reverse_proxy UP
}`, requests: []request{
			{method: "OPTIONS", path: "/api", header: [][2]string{{"Origin", "https://app.test"}, {"Access-Control-Request-Method", "PUT"}}},
			get("/api", "Origin", "https://app.test"),
		}},
		{name: "cases/h2c-upstream", caddyfile: "h2c.test {\n\treverse_proxy h2c://UP\n}",
			requests: []request{
				get("/"), get("/chunked"), get("/status404"), get("/page.css"), get("/x?y=1", "Te", "trailers", "X-Any", "1"),
				{method: "POST", path: "/form", body: "a=1&b=2", header: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}},
				{method: "PUT", path: "/up", body: "streamed", chunked: true},
				{method: "HEAD", path: "/head"},
			}},
		{name: "cases/h2c-versions", caddyfile: "h2cv.test {\n\treverse_proxy UP {\n\t\ttransport http {\n\t\t\tversions h2c 2\n\t\t}\n\t}\n}",
			requests: []request{get("/"), get("/redirect"), get("/cookie")}},
		{name: "cases/uri-strip-suffix-slash", caddyfile: "strip.test {\n\turi strip_suffix /\n\treverse_proxy UP\n}",
			requests: []request{get("/"), get("/a/"), get("/a"), get("/a/?q=1")}},
		{name: "cases/try-files-path-slash", caddyfile: "files.test {\n\troot * WWW\n\ttry_files {path} /\n\tfile_server\n}",
			requests: []request{get("/"), get("/sub"), get("/sub/"), get("/a.txt"), get("/missing.txt"), get("/sub?x=1")}},
		{name: "cases/header-names", caddyfile: "names.test {\n\treverse_proxy UP\n}",
			requests: []request{
				get("/", "X_Forwarded_For", "evil", "Foo.Bar", "dotted", "X-Real_IP", "1.2.3.4"),
				{method: "POST", path: "/form", body: "x", header: [][2]string{{"X_Custom", "v"}}},
			}},
		{name: "cases/header-up-delete-all", caddyfile: "bare.test {\n\treverse_proxy UP {\n\t\theader_up -*\n\t}\n}",
			requests: []request{get("/"), get("/x?y=1", "X-Any", "1", "Cookie", "a=b")}},
		{name: "cases/lb-cookie", namedUpstreams: true, caddyfile: "sticky.test {\n\treverse_proxy UP1 UP2 UP3 {\n\t\tlb_policy cookie lb {\n\t\t\tfallback first\n\t\t}\n\t}\n}",
			requests: []request{get("/"), get("/x", "Cookie", "lb=nothing-it-knows")}},
		{name: "cases/connection-placeholder", caddyfile: "conn.test {\n\treverse_proxy UP {\n\t\theader_up Connection {header.Connection}\n\t\theader_up Upgrade {header.Upgrade}\n\t}\n}",
			requests: []request{{method: "GET", path: "/", h1only: true, header: [][2]string{{"Connection", "keep-alive"}}}, get("/plain")}},
		{name: "cases/lb-query", namedUpstreams: true, caddyfile: "query.test {\n\treverse_proxy UP1 UP2 UP3 UP4 UP5 {\n\t\tlb_policy query k {\n\t\t\tfallback first\n\t\t}\n\t}\n}",
			requests: []request{get("/?k=a%20b"), get("/?k=a+b"), get("/?k=x&k=y"), get("/?k=hello"), get("/?k=%C3%A9t%C3%A9"), get("/?other=1")}},
		{name: "cases/lb-header-uri", namedUpstreams: true, caddyfile: "hash.test {\n\treverse_proxy /h/* UP1 UP2 UP3 UP4 {\n\t\tlb_policy header X-Key {\n\t\t\tfallback first\n\t\t}\n\t}\n\treverse_proxy UP1 UP2 UP3 UP4 {\n\t\tlb_policy uri_hash\n\t}\n}",
			requests: []request{get("/h/1", "X-Key", "alpha"), get("/h/2", "X-Key", "beta"), get("/h/3"), get("/u/one"), get("/u/two?x=1"), get("/u/three")}},
		{name: "cases/cookie-reading", caddyfile: "cookie.test {\n\treverse_proxy UP {\n\t\theader_up X-Sess {cookie.sess}\n\t}\n}",
			requests: []request{
				get("/", "Cookie", `sess="quoted"`),
				get("/2", "Cookie", "a=1; sess=2; sess=3"),
				get("/3", "Cookie", "a=1", "Cookie", "sess=x"),
				get("/4", "Cookie", "sess=a b"),
				get("/5", "Cookie", "sess=%41%20"),
			}},
		{name: "cases/encode-upstream-down-handle-errors", caddyfile: "down.test {\n\tencode gzip\n\treverse_proxy DEAD\n\thandle_errors {\n\t\trespond \"error {err.status_code}\"\n\t}\n}",
			requests: []request{get("/"), get("/x", "Accept-Encoding", "gzip")}},
		{name: "cases/log-error-handle-errors", caddyfile: "logged.test {\n\tlog {\n\t\toutput discard\n\t}\n\terror /boom \"boom\" 418\n\thandle_errors {\n\t\trespond \"handled {err.status_code} {err.message}\"\n\t}\n\trespond \"ok\"\n}",
			requests: []request{get("/boom"), get("/")}},
		{name: "cases/encode-handle-response", caddyfile: "hr.test {\n\tencode gzip\n\treverse_proxy UP {\n\t\t@nf status 404\n\t\thandle_response @nf {\n\t\t\trespond \"custom 404\" 404\n\t\t}\n\t}\n}",
			requests: []request{get("/page.css", "Accept-Encoding", "gzip"), get("/status404", "Accept-Encoding", "gzip"), get("/")}},
		{name: "cases/error-routes-encode", caddyfile: "errenc.test {\n\tencode gzip\n\terror /e \"bad\" 400\n\thandle_errors {\n\t\trespond \"{err.status_code} " + longText + "\"\n\t}\n}",
			requests: []request{get("/e", "Accept-Encoding", "gzip"), get("/e")}},
		{name: "cases/rewrite-query-placeholders", caddyfile: "rq.test {\n\trewrite /index.php?{query}&p={path}&h={header.X-H}\n\treverse_proxy UP\n}",
			requests: []request{get("/a%20b/c?x=1"), get("/plain", "X-H", "a&b=c d"), get("/q?k=a+b&e=%26")}},
		{name: "cases/rewrite-query-shapes", caddyfile: "rqs.test {\n\trewrite /v/* /echo?q={query}&a=\n\trewrite /u/* /api{uri}?z=1\n\trewrite /i/* /api{uri}\n\trewrite /f/* /frag#x\n\trewrite /k/* /echo?{header.X-H}=1&&p={path.1}&{query}\n\treverse_proxy UP\n}",
			requests: []request{get("/v/x?a=1&b=2"), get("/u/x?a=1"), get("/i/x?a=1&&b="), get("/f/x?a=1"), get("/k/a%20b/c?r=1", "X-H", "k&v=w")}},
		{name: "cases/placeholders", caddyfile: "ph.test {\n\trespond /r \"{path} {query} {query.k} {uri} {method} {host} {scheme} {labels.0} {path.0}\" 200\n\tredir /go /to?from={uri}\n\treverse_proxy UP {\n\t\theader_up X-Uri {uri}\n\t\theader_up X-Q {query.k}\n\t\theader_up X-Host {host}\n\t\theader_up X-Port {port}\n\t\theader_up X-Re \"^(.*)$\" \"re-$1\"\n\t\theader_down X-Origin-Field \"^o(.*)$\" \"O$1\"\n\t}\n}",
			requests: []request{get("/r/a%2Fb?k=a%20b&k=2"), get("/go?x=1"), get("/p/x%20y?k=%41", "X-Re", "v")}},
		{name: "cases/handle-path-encoded", caddyfile: "hp.test {\n\thandle_path /api/* {\n\t\treverse_proxy UP\n\t}\n\thandle_path /Mixed/* {\n\t\trespond \"{path}\"\n\t}\n\trespond 404\n}",
			requests: []request{get("/api/a%20b/c"), get("/API/x"), get("/api"), get("/api/"), get("/mixed/x"), get("/api/%2e%2e/x")}},
		{name: "cases/file-server-errors", caddyfile: "fe.test {\n\troot * WWW\n\thandle_errors {\n\t\troot * WWW\n\t\trewrite * /{err.status_code}.html\n\t\tfile_server\n\t}\n\thandle /spa/* {\n\t\ttry_files {path} =404\n\t\tfile_server\n\t}\n\tfile_server {\n\t\thide .git\n\t}\n}",
			requests: []request{get("/a.txt"), get("/missing.txt"), get("/.git/config"), get("/spa/route"), {method: "HEAD", path: "/missing.txt"}}},
		{name: "cases/handle-errors-status-only", caddyfile: "eso.test {\n\terror /gone 410\n\thandle_errors 5xx {\n\t\trespond \"server error {err.status_code}\"\n\t}\n\trespond \"ok\"\n}",
			requests: []request{get("/gone"), get("/")}},
		{name: "cases/handle-errors-unmatched", caddyfile: "esu.test {\n\theader X-Site kept\n\terror /gone 410\n\terror /nf 404\n\treverse_proxy /down/* DEAD\n\thandle_errors 5xx {\n\t\trespond /svc/* \"server error {err.status_code}\"\n\t}\n\thandle_errors 404 {\n\t\theader X-Handled yes\n\t}\n\trespond \"ok\"\n}",
			requests: []request{get("/gone"), get("/nf"), get("/down/x"), get("/")}},
		{name: "cases/deferred-headers-on-errors", caddyfile: "dh.test {\n\theader ?Cache-Control \"max-age=60\"\n\theader >X-Origin-Field replaced\n\theader {\n\t\tX-Frame-Options DENY\n\t\tdefer\n\t}\n\theader X-Now now\n\terror /forbidden \"nope\" 403\n\treverse_proxy /dead/* DEAD\n\treverse_proxy UP\n}",
			requests: []request{get("/"), get("/forbidden"), get("/dead/x")}},
	}
}
