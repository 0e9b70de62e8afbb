package config

import (
	"strings"
	"testing"
)

// TestHeaderFramingEdit: a response edit may delete Content-Length or
// Transfer-Encoding but not set them: the front end frames the body it
// sends, and a second length or one the body does not have makes an
// answer no client can read (FuzzSites found h2 sending content-length 3
// with 240 bytes of DATA).
func TestHeaderFramingEdit(t *testing.T) {
	for _, x := range []struct {
		directive string
		ok        bool
	}{
		{"header Content-Length 3", false},
		{"header +Transfer-Encoding chunked", false},
		{"header ?content-length 0", false},
		{"reverse_proxy 127.0.0.1:9 {\n\t\theader_down Content-Length 3\n\t}", false},
		{"header -Content-Length", true},
		{"reverse_proxy 127.0.0.1:9 {\n\t\theader_down -Transfer-Encoding\n\t}", true},
	} {
		_, err := Parse("Caddyfile", []byte("http://127.0.0.1:8080 {\n\t"+x.directive+"\n}\n"))
		switch {
		case x.ok && err != nil:
			t.Errorf("%s: %v", x.directive, err)
		case !x.ok && (err == nil || !strings.Contains(err.Error(), "frames the body") || !strings.Contains(err.Error(), "Caddyfile:")):
			t.Errorf("%s: %v, want an error with its line saying the body's framing is pollproxy's", x.directive, err)
		}
	}
}
