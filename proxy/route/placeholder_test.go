package route

import (
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestPlaceholders: Caddy's request placeholders, short and long forms,
// filled from one request.
func TestPlaceholders(t *testing.T) {
	t.Setenv("POLLPROXY_TEST_REGION", "eu-west")
	r := &stream.Request{
		Method: "GET", Scheme: "https", Authority: "Shop.Example.com:8443", Path: "/api/v2/items?page=3&q=a%20b",
		RemoteAddr: netip.MustParseAddrPort("198.51.100.7:5555"),
		Header:     []stream.Field{{Name: "cookie", Value: "theme=dark; session=\"abc\""}, {Name: "x-tenant", Value: "acme"}},
	}
	for tmpl, want := range map[string]string{
		"{labels.0}.{labels.1}.{labels.2}|{labels.3}":      "com.example.shop|",
		"{http.request.host.labels.1}":                     "example",
		"{path.0}/{path.2}|{path.3}":                       "api/items|",
		"{http.request.uri.path.1}":                        "v2",
		"{query.page} {query.q} [{query.none}]":            "3 a b []",
		"{http.request.uri.query.page}":                    "3",
		"{cookie.session}/{http.request.cookie.theme}":     "abc/dark",
		"{header.X-Tenant}:{http.request.header.x-tenant}": "acme:acme",
		"{env.POLLPROXY_TEST_REGION}-{host}":               "eu-west-shop.example.com",
		"{hostport} {port} {remote_host}":                  "Shop.Example.com:8443 8443 198.51.100.7",
	} {
		tp, err := ParseTemplate(tmpl, TemplateOptions{})
		if err != nil {
			t.Errorf("%s: %v", tmpl, err)
			continue
		}
		if got := string(tp.Append(nil, r)); got != want {
			t.Errorf("%s = %q, want %q", tmpl, got, want)
		}
	}
	for tmpl, want := range map[string]string{
		"{labels.x}":          "want a whole number",
		"{http.request.body}": "not supported by pollproxy",
		"{query.page}":        "request fields in response edits",
		"{cookie.theme}":      "request fields in response edits",
	} {
		_, err := ParseTemplate(tmpl, TemplateOptions{NoRequestFields: strings.Contains(tmpl, "query") || strings.Contains(tmpl, "cookie")})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", tmpl, err, want)
		}
	}
}

// TestKeepUnknown: respond's bodies keep what pollproxy cannot fill as
// written and fill what it can, even inside braces it keeps, as Caddy's
// replacer does; escaped braces are braces.
func TestKeepUnknown(t *testing.T) {
	r := &stream.Request{Method: "GET", Authority: "example.com", Path: "/a?b=1", AuthUser: "bob"}
	for in, want := range map[string]string{
		`{"user": "{http.auth.user.id}", "n": {"a": 1}}`: `{"user": "bob", "n": {"a": 1}}`,
		`{unknown.thing} {method} {upstream_hostport}`:   `{unknown.thing} GET {upstream_hostport}`,
		`\{host\} {host}`: `{host} example.com`,
		`open { only`:     `open { only`,
	} {
		tm, err := ParseTemplate(in, TemplateOptions{KeepUnknown: true})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := tm.Expand(r); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	if _, err := ParseTemplate("{http.unknown.thing}", TemplateOptions{}); err == nil {
		t.Error("an unknown placeholder in Caddy's namespace was accepted without KeepUnknown")
	}
}

// TestPlaceholderTable: the rest of Caddy's placeholder table, filled
// as Caddy's replacer fills it.
func TestPlaceholderTable(t *testing.T) {
	r := &stream.Request{
		Method: "POST", Scheme: "https", Authority: "example.com", Path: "/docs/guide.tar.gz?x=1&y=a b",
		OriginalPath: "/orig/one/two?o=1", OriginalMethod: "GET", Proto: "HTTP/2.0",
		RemoteAddr: netip.MustParseAddrPort("198.51.100.77:5555"),
		TLS:        &stream.TLSState{Version: 0x0304, CipherSuite: 0x1301, Proto: "h2", ServerName: "example.com", Resumed: true},
		Vars:       []stream.Var{{Name: "site", Value: "blue"}},
	}
	for tmpl, want := range map[string]string{
		"{file}|{dir}|{file.base}|{file.ext}":               "guide.tar.gz|/docs/|guide.tar|.gz",
		"{http.request.uri.path.file}":                      "guide.tar.gz",
		"{?query}|{%query}":                                 "?x=1&y=a b|x%3D1%26y%3Da+b",
		"{%path}":                                           "%2Fdocs%2Fguide.tar.gz",
		"{orig_method} {orig_uri} {orig_path}":              "GET /orig/one/two?o=1 /orig/one/two",
		"{orig_dir}|{orig_file}|{orig_query}|{orig_?query}": "/orig/one/|two|o=1|?o=1",
		"{http.request.orig_uri.path.1}":                    "one",
		"{http.request.proto} {http.request.proto_name}":    "HTTP/2.0 HTTP/2",
		"{http.request.remote.host/24,64}":                  "198.51.100.0/24",
		"{tls_version} {tls_cipher} {http.request.tls.proto} {http.request.tls.resumed} {http.request.tls.server_name}": "tls1.3 TLS_AES_128_GCM_SHA256 h2 true example.com",
		"{vars.site}|{http.vars.site}|{vars.none}": "blue|blue|",
		"{system.os}":   runtime.GOOS,
		"{server_port}": "{server_port}",
	} {
		tp, err := ParseTemplate(tmpl, TemplateOptions{})
		if err != nil {
			t.Errorf("%s: %v", tmpl, err)
			continue
		}
		if got := string(tp.Append(nil, r)); got != want {
			t.Errorf("%s = %q, want %q", tmpl, got, want)
		}
	}
	// Unknown to Caddy too: a rewrite drops it, as Caddy's ReplaceAll.
	tp, err := ParseTemplate("/a{server_port}", TemplateOptions{ReplaceAll: true})
	if err != nil || tp.Expand(r) != "/a" {
		t.Errorf("ReplaceAll {server_port}: %q %v", tp.Expand(r), err)
	}
	u, _ := ParseTemplate("{uuid}", TemplateOptions{})
	a, b := u.Expand(r), u.Expand(r)
	if len(a) != 36 || a[14] != '4' || a != b {
		t.Errorf("{uuid} = %q then %q, want one version-4 UUID per request", a, b)
	}
	y, _ := ParseTemplate("{time.now.year}", TemplateOptions{})
	if got := y.Expand(r); len(got) != 4 {
		t.Errorf("{time.now.year} = %q", got)
	}
	plain := &stream.Request{Method: "GET", Path: "/"}
	tl, _ := ParseTemplate("[{tls_version}]", TemplateOptions{})
	if got := tl.Expand(plain); got != "[]" {
		t.Errorf("{tls_version} over cleartext = %q, want empty", got)
	}
}
