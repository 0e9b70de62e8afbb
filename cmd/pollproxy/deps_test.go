package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCaddyModules: pollproxy reads the Caddyfile with Caddy's lexer and
// nothing more of Caddy (docs/design.md, "What Caddy's Caddyfile lexer
// costs"). Caddy's modules (its HTTP server, reverse proxy, TLS app ...)
// bring a second web server into the binary; an import that pulls one in,
// even indirectly, fails here.
func TestNoCaddyModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	caddy := 0
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/caddyserver/caddy/v2/modules" || strings.HasPrefix(pkg, "github.com/caddyserver/caddy/v2/modules/") {
			t.Errorf("pollproxy links %s", pkg)
		}
		if strings.HasPrefix(pkg, "github.com/caddyserver/caddy/v2") {
			caddy++
		}
	}
	if caddy == 0 {
		t.Fatal("no Caddy package in the list: the Caddyfile lexer should be there, so the list is not pollproxy's")
	}
}
