package proxy

import "testing"

// TestSanitizedJoin: a request path joined to the root as Caddy's
// SanitizedPathJoin joins it, cleaned, never above the root, a trailing
// slash kept, whether or not the path and the root are clean already.
func TestSanitizedJoin(t *testing.T) {
	for _, c := range []struct{ root, path, want string }{
		{"/srv/www", "/index.php", "/srv/www/index.php"},
		{"/srv/www", "index.php", "/srv/www/index.php"},
		{"/srv/www", "//a//b/../c.php", "/srv/www/a/c.php"},
		{"/srv/www", "/a/./b/", "/srv/www/a/b/"},
		{"/srv/www", "/../../etc/passwd", "/srv/www/etc/passwd"},
		{"/srv/www", "/", "/srv/www"},
		{"/srv/www", "", "/srv/www"},
		{"/srv/www/", "/index.php", "/srv/www/index.php"},
		{"/srv//www/.", "/index.php", "/srv/www/index.php"},
		{"/", "/index.php", "/index.php"},
		{"", "/index.php", "index.php"},
		{".", "/a/", "a/"},
		{"www", "/index.php", "www/index.php"},
	} {
		if got := sanitizedJoin(c.root, c.path); got != c.want {
			t.Errorf("sanitizedJoin(%q, %q) = %q, want %q", c.root, c.path, got, c.want)
		}
	}
}
