package route

import (
	"net/netip"
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
		"{labels.x}":     "want a whole number",
		"{tls.version}":  "not supported by pollproxy",
		"{query.page}":   "request fields in response edits",
		"{cookie.theme}": "request fields in response edits",
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
	if _, err := ParseTemplate("{unknown.thing}", TemplateOptions{}); err == nil {
		t.Error("an unknown placeholder was accepted without KeepUnknown")
	}
}
