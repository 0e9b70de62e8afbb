package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestUnixUpstream: Caddy's unix//path form is an upstream; an empty path
// is an error with its line.
func TestUnixUpstream(t *testing.T) {
	c := mustParse(t, "localhost:8443 {\n\treverse_proxy unix//run/app.sock 127.0.0.1:8080\n}\n")
	if got := c.Sites[0].AllProxies()[0].Upstreams; !slices.Equal(got, []string{"unix//run/app.sock", "127.0.0.1:8080"}) {
		t.Fatalf("upstreams %q", got)
	}
	_, err := Parse("Caddyfile", []byte("localhost:8443 {\n\treverse_proxy unix/\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "Caddyfile:2: reverse_proxy: upstream \"unix/\": want unix//path/to/socket") {
		t.Fatalf("error %v", err)
	}
}

// TestActiveHealthOptions: Caddy's active health subdirectives, and a bad
// one's error with its line.
func TestActiveHealthOptions(t *testing.T) {
	c := mustParse(t, `localhost:8443 {
	reverse_proxy 127.0.0.1:8080 {
		health_uri /healthz?full=1
		health_port 8081
		health_interval 10s
		health_timeout 2s
		health_status 2xx
		health_body ^ok
		health_headers {
			Host health.internal
			X-Check a b
		}
		health_passes 2
		health_fails 3
	}
}
`)
	a := c.Sites[0].AllProxies()[0].ActiveHealth
	if a.URI != "/healthz?full=1" || a.Port != 8081 || a.Interval != 10*time.Second || a.Timeout != 2*time.Second ||
		a.Status != "2xx" || a.Body.String() != "^ok" || a.Passes != 2 || a.Fails != 3 ||
		a.Headers.Get("Host") != "health.internal" || len(a.Headers.Values("X-Check")) != 2 || !a.Enabled() {
		t.Fatalf("active health %+v", a)
	}
	if c.Sites[0].AllProxies()[0].ProxyConfig(nil).ActiveHealth.URI != a.URI {
		t.Fatal("ProxyConfig lost the active health settings")
	}
	for in, want := range map[string]string{
		"health_status 2x":    `Caddyfile:3: reverse_proxy: health_status: "2x": want a status such as 200 or 2xx`,
		"health_uri healthz":  `Caddyfile:3: reverse_proxy: health_uri: "healthz": want a path starting with /`,
		"health_body (":       `Caddyfile:3: reverse_proxy: health_body: "("`,
		"health_fails 0":      `Caddyfile:3: reverse_proxy: health_fails: "0": want a whole number >= 1`,
		"health_port 70000":   `Caddyfile:3: reverse_proxy: health_port: 70000: want a port in 1-65535`,
		"health_interval -1s": `Caddyfile:3: reverse_proxy: health_interval: "-1s": want a positive duration`,
	} {
		_, err := Parse("Caddyfile", []byte("localhost:8443 {\n\treverse_proxy 127.0.0.1:8080 {\n\t\t"+in+"\n\t}\n}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %s", in, err, want)
		}
	}
}
