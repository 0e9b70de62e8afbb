package config

import (
	"strings"
	"testing"
)

// TestHeaderDownDefault: header_up and header_down refuse the default
// form ("?Field value"), as Caddy does: it only means something for the
// header directive's deferred response edits.
func TestHeaderDownDefault(t *testing.T) {
	for _, sub := range []string{"header_down", "header_up"} {
		_, err := Parse("Caddyfile", []byte("http://127.0.0.1:8080 {\n\treverse_proxy 127.0.0.1:9 {\n\t\t"+sub+" ?X-Frame-Options DENY\n\t}\n}\n"))
		if err == nil || !strings.Contains(err.Error(), "Caddyfile:3") || !strings.Contains(err.Error(), "only") {
			t.Errorf("%s ?X-Frame-Options: %v, want an error on line 3", sub, err)
		}
	}
	if _, err := Parse("Caddyfile", []byte("http://127.0.0.1:8080 {\n\theader ?X-Frame-Options DENY\n}\n")); err != nil {
		t.Errorf("header ?X-Frame-Options: %v", err)
	}
}
