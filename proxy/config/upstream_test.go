package config

import (
	"slices"
	"strings"
	"testing"
)

// TestUnixUpstream: Caddy's unix//path form is an upstream; an empty path
// is an error with its line.
func TestUnixUpstream(t *testing.T) {
	c := mustParse(t, "localhost:8443 {\n\treverse_proxy unix//run/app.sock 127.0.0.1:8080\n}\n")
	if got := c.Sites[0].Proxy.Upstreams; !slices.Equal(got, []string{"unix//run/app.sock", "127.0.0.1:8080"}) {
		t.Fatalf("upstreams %q", got)
	}
	_, err := Parse("Caddyfile", []byte("localhost:8443 {\n\treverse_proxy unix/\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "Caddyfile:2: reverse_proxy: upstream \"unix/\": want unix//path/to/socket") {
		t.Fatalf("error %v", err)
	}
}
