package config

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/site"
)

// TestHeaderImmediate: a header directive edits the response at once
// unless, as in Caddy, it deletes a field, has a >Field edit, defer or a
// match block; ?Field defaults leave the directive immediate (they are
// always deferred themselves); request_header is never a response edit.
func TestHeaderImmediate(t *testing.T) {
	for _, tc := range []struct {
		in        string
		immediate bool
	}{
		{"header X-A 1", true},
		{"header +X-A 1", true},
		{"header X-A ^a b", true},
		{"header ?X-A 1", true},
		{"header {\n\t\tX-A 1\n\t\t+X-B 2\n\t\t?X-C 3\n\t}", true},
		{"header -X-A", false},
		{"header >X-A 1", false},
		{"header >X-A ^a b", false},
		{"header X-A 1 {\n\t\tdefer\n\t}", false},
		{"header {\n\t\tX-A 1\n\t\t-X-B\n\t}", false},
		{"header X-A 1 {\n\t\tmatch status 2xx\n\t}", false},
		{"request_header X-A 1", false},
	} {
		c, err := Parse("Caddyfile", []byte("localhost {\n\t"+tc.in+"\n\trespond ok\n}\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		var edit site.Directive
		immediate := false
		for _, r := range c.Sites[0].Routes.Nodes {
			switch e := r.Do.(type) {
			case *site.EditResponse:
				edit, immediate = e, e.Immediate
			case *site.EditRequest:
				edit, immediate = e, false
			}
		}
		if edit == nil || immediate != tc.immediate {
			t.Errorf("%s: %+v, want immediate %v", tc.in, edit, tc.immediate)
		}
	}
}
