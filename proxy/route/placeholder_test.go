package route

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestKeepUnknown: respond's bodies keep what pollproxy cannot fill as
// written and fill what it can, even inside braces it keeps, as Caddy's
// replacer does; escaped braces are braces.
func TestKeepUnknown(t *testing.T) {
	r := &stream.Request{Method: "GET", Authority: "example.com", Path: "/a?b=1", AuthUser: "bob"}
	for in, want := range map[string]string{
		`{"user": "{http.auth.user.id}", "n": {"a": 1}}`: `{"user": "bob", "n": {"a": 1}}`,
		`{unknown.thing} {method} {upstream_hostport}`:     `{unknown.thing} GET {upstream_hostport}`,
		`\{host\} {host}`:                                  `{host} example.com`,
		`open { only`:                                      `open { only`,
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
