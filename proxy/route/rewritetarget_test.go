package route

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestRewriteQueryEmptyPairs: a rewrite's query leaves out empty pairs,
// as Caddy builds it: Caddy's documented "?{query}&a=b" on a request
// without a query reaches the origin as "?a=b".
func TestRewriteQueryEmptyPairs(t *testing.T) {
	for _, tc := range []struct{ to, path, want string }{
		{"?{query}&a=b", "/api/x", "/api/x?a=b"},
		{"?{query}&a=b", "/api/x?q=1", "/api/x?q=1&a=b"},
		{"/index.php?{query}&p=1", "/page", "/index.php?p=1"},
		{"/index.php?{query}", "/page", "/index.php"},
		{"/x?a=1&&b=2&", "/page", "/x?a=1&b=2"},
		{"/x?a=1&b=2", "/page?z=9", "/x?a=1&b=2"},
	} {
		tmpl, err := ParseTemplate(tc.to, TemplateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := rewriteTarget(tmpl, "", &stream.Request{Method: "GET", Path: tc.path}); got != tc.want {
			t.Errorf("rewrite %s on %s: %q, want %q", tc.to, tc.path, got, tc.want)
		}
	}
}

// TestRewriteTargetEscaped: a placeholder's value that holds bytes a
// request-target cannot (a space, '#', controls, non-ASCII) is
// percent-encoded, so the origin reads the request line pollproxy means:
// a raw space would end the target early.
func TestRewriteTargetEscaped(t *testing.T) {
	tmpl, err := ParseTemplate("/index.php?h={header.X-H}", TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		"plain":           "/index.php?h=plain",
		"a&b=c d":         "/index.php?h=a&b=c%20d",
		"x HTTP/1.0":      "/index.php?h=x%20HTTP/1.0",
		"frag#ment\t\x7f": "/index.php?h=frag%23ment%09%7F",
		"caf\u00e9":       "/index.php?h=caf%C3%A9",
	} {
		r := &stream.Request{Method: "GET", Path: "/", Header: []stream.Field{{Name: "x-h", Value: value}}}
		if got := rewriteTarget(tmpl, "", r); got != want {
			t.Errorf("X-H %q: %q, want %q", value, got, want)
		}
	}
}
