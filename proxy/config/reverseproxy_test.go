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

// TestHeaderMatcherName: "header_down @name Field value" is what Caddy
// reads it as, an edit of a field named "@name" (header_up and
// header_down take no matcher), which no message has: accepted, and
// nothing to do. A bad regexp in it is still refused, as Caddy refuses
// it.
func TestHeaderMatcherName(t *testing.T) {
	cfg, err := Parse("Caddyfile", []byte("http://127.0.0.1:8080 {\n\treverse_proxy 127.0.0.1:9 {\n\t\t@ok status 200\n\t\theader_down @ok X-Foo bar\n\t\theader_down @ok X-Set\n\t\theader_up @ok ^a b\n\t\theader_down X-Kept v\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rp := cfg.Sites[0].Proxies[0]
	if len(rp.HeaderDown) != 1 || rp.HeaderDown[0].Name != "x-kept" || len(rp.HeaderUp) != 0 {
		t.Errorf("header_down %+v, header_up %+v: want the x-kept edit alone", rp.HeaderDown, rp.HeaderUp)
	}
	_, err = Parse("Caddyfile", []byte("http://127.0.0.1:8080 {\n\treverse_proxy 127.0.0.1:9 {\n\t\theader_down @ok ( b\n\t}\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "Caddyfile:3") {
		t.Errorf("a bad regexp: %v, want an error on line 3", err)
	}
}
