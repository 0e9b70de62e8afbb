package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestCaddyDocRouting: a representative set of the routing and matcher
// examples of Caddy's documentation (reverse_proxy, handle_path, redir,
// respond, rewrite, uri, header and the request matcher pages), with
// loopback origins in place of the documented hosts, answer as Caddy
// documents them: over HTTP/2 and HTTP/1.1 on every poller backend.
func TestCaddyDocRouting(t *testing.T) {
	api, app := echoOrigin(t, "api"), echoOrigin(t, "app")
	hsts := "max-age=31536000;"
	sites := []struct {
		name, body string
		xs         []exchange
	}{
		{"reverse_proxy and redir pages", fmt.Sprintf(`	handle_path /prefix/* {
		reverse_proxy %[1]s
	}
	handle_path /old-prefix/* {
		rewrite /new-prefix{path}
		reverse_proxy %[1]s
	}
	redir /about-us /about
	reverse_proxy %[2]s`, api, app), []exchange{
			{method: "GET", path: "/prefix/users?q=1", status: 200, body: "api /users?q=1"},
			{method: "GET", path: "/old-prefix/users", status: 200, body: "api /new-prefix/users"},
			{method: "GET", path: "/about-us", status: 302, want: map[string]string{"Location": "/about"}},
			{method: "GET", path: "/other", status: 200, body: "app /other"},
		}},
		{"redir page", `	redir https://example.com{uri} permanent`, []exchange{
			{method: "GET", path: "/a/b?c=1", status: 301, want: map[string]string{"Location": "https://example.com/a/b?c=1"}},
		}},
		{"respond page and matchers page", "\trespond /health-check 200\n" +
			"\t@denied not remote_ip private_ranges\n\tabort @denied\n" +
			"\t@api <<CEL\n\t\t{method} == \"GET\"\n\t\t&& {path}.startsWith(\"/api/\")\n\t\tCEL\n\trespond @api \"Hello, API!\"\n" +
			"\t@login `header_regexp('login', 'Cookie', 'login_([a-f0-9]+)')`\n\trespond @login \"logged in\"\n" +
			"\trespond \"Hello, world!\"", []exchange{
			{method: "GET", path: "/health-check", status: 200, body: ""},
			{method: "GET", path: "/api/things", status: 200, body: "Hello, API!"},
			{method: "POST", path: "/api/things", status: 200, body: "Hello, world!"},
			{method: "GET", path: "/me", header: map[string]string{"Cookie": "login_0a1b"}, status: 200, body: "logged in"},
			{method: "GET", path: "/me", header: map[string]string{"Cookie": "login_zz"}, status: 200, body: "Hello, world!"},
		}},
		{"rewrite page", fmt.Sprintf("\trewrite /api{uri}\n\treverse_proxy %s", app), []exchange{
			{method: "GET", path: "/users?id=3", status: 200, body: "app /api/users?id=3"},
		}},
		{"rewrite and uri pages", fmt.Sprintf(`	rewrite /api/* ?{query}&a=b
	uri strip_suffix .php
	uri replace /docs/ /v1/docs/
	reverse_proxy %s`, app), []exchange{
			{method: "GET", path: "/api/x?q=1", status: 200, body: "app /api/x?q=1&a=b"},
			{method: "GET", path: "/index.php", status: 200, body: "app /index"},
			{method: "GET", path: "/docs/intro", status: 200, body: "app /v1/docs/intro"},
		}},
		{"header page and matchers page", fmt.Sprintf(`	header {
		# disable FLoC tracking
		Permissions-Policy interest-cohort=()

		# enable HSTS
		Strict-Transport-Security max-age=31536000;

		# disable clients from sniffing the media type
		X-Content-Type-Options nosniff

		# clickjacking protection
		X-Frame-Options DENY
	}
	header -X-Debug-Trace
	header ?Cache-Control "max-age=3600"
	header /no-cache* >Cache-Control no-cache
	@postfoo {
		method POST
		path /foo/*
	}
	reverse_proxy @postfoo %[1]s
	reverse_proxy %[2]s`, api, app), []exchange{
			{method: "GET", path: "/page", status: 200, body: "app /page", want: map[string]string{
				"Strict-Transport-Security": hsts, "Permissions-Policy": "interest-cohort=()", "X-Content-Type-Options": "nosniff",
				"X-Frame-Options": "DENY", "Cache-Control": "max-age=3600", "X-Debug-Trace": ""}},
			{method: "GET", path: "/no-cache/page", status: 200, body: "app /no-cache/page", want: map[string]string{"Cache-Control": "no-cache"}},
			{method: "POST", path: "/foo/bar", status: 200, body: "api /foo/bar"},
			{method: "GET", path: "/foo/bar", status: 200, body: "app /foo/bar"},
		}},
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, s := range sites {
			t.Run(s.name, func(t *testing.T) {
				port, cls := startSite(t, backend, s.body)
				base := fmt.Sprintf("https://localhost:%d", port)
				for proto, c := range cls {
					t.Run(proto, func(t *testing.T) {
						for _, x := range s.xs {
							x.run(t, c, base)
						}
					})
				}
			})
		}
	})
}
