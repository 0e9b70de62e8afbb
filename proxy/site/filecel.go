package site

import (
	"fmt"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/route"
)

// file() in expressions is Caddy's file matcher, built from the call's
// arguments as the matcher's Caddyfile form builds it.
func init() { route.SetFileMatcher(newFileMatcher) }

// newFileMatcher is the file matcher of root ("": the request's), the
// candidates try (none: {path}), policy and split, refused where the
// matcher's Caddyfile form is.
func newFileMatcher(root string, try []string, policy string, split []string) (route.Matcher, error) {
	m := &File{Root: root, Split: split}
	if strings.Contains(root, "{") {
		return nil, fmt.Errorf("file: placeholders in root %q are not supported by pollproxy", root)
	}
	switch policy {
	case "", "first_exist", "first_exist_fallback", "largest_size", "smallest_size", "most_recently_modified":
		m.Policy = policy
	default:
		return nil, fmt.Errorf("file: unrecognized try policy: %s", policy)
	}
	for _, f := range try {
		if strings.ContainsAny(f, "?*[") {
			return nil, fmt.Errorf("file: %q: queries and globs are not supported by pollproxy in the matcher", f)
		}
		t, err := route.ParseTemplate(f, route.TemplateOptions{})
		if err != nil {
			return nil, err
		}
		m.Try = append(m.Try, t)
	}
	return m, nil
}
