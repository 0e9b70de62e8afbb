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
