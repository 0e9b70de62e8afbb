package route

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestRewriteTarget: the target a rewrite gives a request, as Caddy's
// rewrite builds it (each want is Caddy 2.11.9's answer): the template's
// query in components, an empty key left out with its '&', a trailing
// "a=" written "a"; each placeholder's value in the query query-escaped
// ({path} the decoded path's), {query} where a key stands as it came; a
// query a placeholder brought into the path is the query when the
// template writes none; a fragment dropped; without a query in the
// template the request's kept.
func TestRewriteTarget(t *testing.T) {
	for _, tc := range []struct{ to, path, xh, want string }{
		{"/index.php?{query}&p={path}&h={header.X-H}", "/a%20b/c?x=1", "", "/index.php?x=1&p=%2Fa+b%2Fc&h="},
		{"/index.php?{query}&p={path}&h={header.X-H}", "/plain", "a&b=c d", "/index.php?p=%2Fplain&h=a%26b%3Dc+d"},
		{"/index.php?{query}&p={path}&h={header.X-H}", "/q?k=a+b&e=%26", "", "/index.php?k=a+b&e=%26&p=%2Fq&h="},
		{"?{query}&a=b", "/api/x", "", "/api/x?a=b"},
		{"?{query}&a=b", "/api/x?q=1", "", "/api/x?q=1&a=b"},
		{"/index.php?{query}&p=1", "/page", "", "/index.php?p=1"},
		{"/index.php?{query}", "/page", "", "/index.php"},
		{"/index.php?{query}", "/page?a=1&b=", "", "/index.php?a=1&b="},
		{"/x?a=1&&b=2&", "/page", "", "/x?a=1&b=2"},
		{"/x?a=1&b=2", "/page?z=9", "", "/x?a=1&b=2"},
		{"/x?a=", "/page", "", "/x?a"},
		{"/x?a=&b", "/page", "", "/x?a=&b"},
		{"/x?=v", "/page", "", "/x?=v"},
		{"/x?a=b=c&d", "/page", "", "/x?a=b=c&d"},
		{"/x?q={query}", "/page?a=1&b=2", "", "/x?q=a%3D1%26b%3D2"},
		{"/x?{query}={query}", "/page?a=1", "", "/x?a=1=a%3D1"},
		{"/x?h={header.X-H}", "/", "plain", "/x?h=plain"},
		{"/x?h={header.X-H}", "/", "x HTTP/1.0", "/x?h=x+HTTP%2F1.0"},
		{"/x?h={header.X-H}", "/", "frag#ment", "/x?h=frag%23ment"},
		{"/x?h={header.X-H}", "/", "café", "/x?h=caf%C3%A9"},
		{"/x?h={header.X-H}", "/", "a~b-c_d.e*f", "/x?h=a~b-c_d.e%2Af"},
		{"/x?{header.X-H}=1", "/", "k&v", "/x?k%26v=1"},
		{"/x?", "/page?a=1", "", "/x"},
		{"?", "/page?a=1", "", "/page"},
		{"?&", "/page?a=1", "", "/page"},
		{"/x#frag", "/page?a=1", "", "/x?a=1"},
		{"/x?a=1#frag", "/page?z=1", "", "/x?a=1"},
		{"/api{uri}", "/p?a=1&b=", "", "/api/p?a=1&b"},
		{"/api{uri}", "/p?a=1&&b=2", "", "/api/p?a=1&b=2"},
		{"/api{uri}?z=1", "/p?a=1", "", "/api/p?z=1"},
		{"/api{uri}?", "/p?a=1", "", "/api/p?a=1"},
		{"/x/{path}", "/a%20b", "", "/x//a%20b"},
		{"/x?p={path.0}", "/a%20b/c", "", "/x?p=a+b"},
		{"/x?p={query.k}", "/?k=a+b%26", "", "/x?p=a+b%26"},
		{"{path}.html", "/about", "", "/about.html"},
		{"/x/{header.X-H}", "/", "a?b=1&c", "/x/a?b=1&c"},
		{"/x/{header.X-H}", "/", "a#b", "/x/a"},
	} {
		tmpl, err := ParseTemplate(tc.to, TemplateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := &stream.Request{Method: "GET", Path: tc.path}
		if tc.xh != "" {
			r.Header = []stream.Field{{Name: "x-h", Value: tc.xh}}
		}
		if got := RewriteTarget(tmpl, "", r); got != tc.want {
			t.Errorf("rewrite %s on %s (X-H %q): %q, want %q", tc.to, tc.path, tc.xh, got, tc.want)
		}
	}
}

// TestRewriteTargetEscaped: a placeholder's value in the path that holds
// bytes a request-target cannot (a space, controls, non-ASCII) is
// percent-encoded, so the origin reads the request line pollproxy means:
// a raw space would end the target early.
func TestRewriteTargetEscaped(t *testing.T) {
	tmpl, err := ParseTemplate("/x/{header.X-H}", TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		"plain":      "/x/plain",
		"x HTTP/1.0": "/x/x%20HTTP/1.0",
		"tab\t\x7f":  "/x/tab%09%7F",
		"caf\u00e9":  "/x/caf%C3%A9",
	} {
		r := &stream.Request{Method: "GET", Path: "/", Header: []stream.Field{{Name: "x-h", Value: value}}}
		if got := RewriteTarget(tmpl, "", r); got != want {
			t.Errorf("X-H %q: %q, want %q", value, got, want)
		}
	}
}

// TestRewriteTargetLiteralAllocs: a fixed path on a request without a
// query is rewritten without a copy.
func TestRewriteTargetLiteralAllocs(t *testing.T) {
	tmpl, err := ParseTemplate("/index.html", TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &stream.Request{Method: "GET", Path: "/"}
	if n := testing.AllocsPerRun(100, func() { RewriteTarget(tmpl, "", r) }); n != 0 {
		t.Errorf("%v allocations per rewrite", n)
	}
}
