package oracle

// directiveSources are sites for the directives and matchers Caddy has
// beyond routing and proxying (vars, map, named routes, templates ...)
// and the rest of its placeholder table, one behaviour each.
func directiveSources() []*source {
	return []*source{
		{name: "directives/vars-map", caddyfile: `vm.test {
	map {path} {kind} {num} {
		/a        apple   007
		~^/b/(.*)$ "b-$1" -
		/c        -       1.50
		default   other   0
	}
	vars {
		tier gold
		who  {header.X-Who}
	}
	vars /v/set level silver
	@silver vars level silver
	@gold vars_regexp g tier ^(go)ld$
	@cel ` + "`vars({'level': ['bronze', 'silver']}) && vars_regexp('who', '^(z+)$')`" + `
	@kinda vars {kind} apple
	respond @cel "cel {re.cel.1}"
	respond @silver "silver {vars.level} {vars.tier}"
	respond @kinda "kind apple {num} {http.vars.who}"
	handle /rw/* {
		rewrite * /a
		reverse_proxy UP {
			header_up X-Kind "{kind}:{num}:{unmapped}"
		}
	}
	respond @gold "gold {re.g.1} {kind} [{num}] {vars.who} {vars.none} {unmapped}"
}`, requests: []request{get("/a"), get("/b/x", "X-Who", "ann"), get("/c"), get("/d"), get("/v/set"),
			get("/v/set", "X-Who", "zz"), get("/rw/q")}},
		{name: "directives/placeholder-table", caddyfile: `pt.test {
	root /new/* WWW
	rewrite /old/* /new{path}?{query}
	respond /new/* "{orig_method} {orig_uri} {orig_path} {orig_dir} {orig_file} {orig_query} [{orig_?query}] {http.request.orig_uri.path.1} {uri} {file} {dir} {file.base} {file.ext} [{?query}] {%query} {%path} {http.request.remote.host/8,16} {http.request.tls.server_name} {tls_version} {http.request.tls.proto_mutual} {system.os} {server_port} {http.request.local} {http.request.local.host} {http.request.local.port} {http.vars.root}"
	respond "{file} {dir} {http.request.uri.path.file.ext} {uri} [{?query}] [{vars.root}]"
}`, requests: []request{get("/old/dir/x.tar.gz?a=1&b=c%20d"), get("/new/"), get("/x.html?q=1"), get("/")}},
		{name: "directives/respond-close", caddyfile: "close.test {\n\trespond /bye \"bye\" 403 {\n\t\tclose\n\t}\n\trespond \"hi\"\n}",
			requests: []request{get("/bye"), get("/")}},
		{name: "directives/header-down-at-name", caddyfile: "hd.test {\n\treverse_proxy UP {\n\t\t@ok status 200\n\t\theader_down @ok X-Origin-Field changed\n\t\theader_down @ok Set\n\t\theader_up @ok ^a b\n\t}\n}",
			requests: []request{get("/"), get("/x", "X-Origin-Field", "a")}},
		{name: "directives/proxy-rewrite-method", caddyfile: `rm.test {
	handle /auth/* {
		reverse_proxy UP {
			method GET
			rewrite /verify?orig={uri}
		}
	}
	handle /m/* {
		reverse_proxy UP {
			method {header.X-Method}
			rewrite /new{path}
		}
	}
	reverse_proxy UP {
		method post
	}
}`, requests: []request{get("/auth/x?a=1"), get("/m/y?q=2", "X-Method", "put"), get("/other"),
			{method: "POST", path: "/auth/p", body: "payload"}}},
		{name: "directives/templates", caddyfile: `tpl.test {
	templates
	header /t/* Content-Type "text/html; charset=utf-8"
	respond /t/a "{{.Req.URL.Path}} {{.Host}} {{upper \"x\"}} {{ph \"method\"}} [{{.Cookie \"c\"}}] {{.RemoteIP}} {{stripHTML \"<b>bold</b>\"}}"
	respond /t/b "{{ broken"
	respond /t/c "x{{httpError 404}}"
	respond /t/d "{{.RespHeader.Set \"X-T\" \"set\"}}{{markdown \"# Head\\n\\n` + "```go\\nfunc main() {}\\n```" + `\"}}"
	respond /plain "{{kept}}"
}`, requests: []request{get("/t/a", "Cookie", "c=v"), get("/t/b"), get("/t/c"), get("/t/d"), get("/plain"), {method: "HEAD", path: "/t/a"}}},
		{name: "directives/file-expression", caddyfile: "fc.test {\n\troot * WWW\n\t@exists `file()`\n\t@html `file('{path}.html') && method('GET')`\n\t@sub `file({'try_files': ['{path}/index.html']})`\n\trespond @exists \"exists {file_match.relative} {http.matchers.file.type} {http.matchers.file.absolute} [{http.matchers.file.remainder}]\"\n\trespond @html \"html\"\n\trespond @sub \"sub\"\n\t@dir file {path}/\n\trespond @dir \"dir {file_match.relative} {file_match.type} {file_match.absolute}\"\n\trespond \"none\"\n}",
			requests: []request{get("/a.txt"), get("/specific"), get("/sub"), get("/sub/"), get("/missing")}},
		{name: "directives/proxy-rewrite-method-h2c", caddyfile: "rmh.test {\n\treverse_proxy h2c://UP {\n\t\tmethod GET\n\t\trewrite /verify{uri}\n\t}\n}",
			requests: []request{get("/x?a=1"), {method: "POST", path: "/p", body: "payload"}}},
		{name: "directives/invoke", caddyfile: `&(api) {
	@v1 path /v1/*
	header X-Api yes
	respond @v1 "v1 {path}"
	uri strip_prefix /api
	reverse_proxy UP
}

&(tag) {
	header X-Tag tagged
	vars from named
}

inv.test {
	invoke tag
	invoke /api/* api
	invoke /v1/* api
	respond "site {vars.from}"
}`, requests: []request{get("/api/x"), get("/v1/y"), get("/other")}},
	}
}
