package config

import (
	"strings"
	"testing"
	"time"
)

func TestABInterval(t *testing.T) {
	cfg, err := Parse("Caddyfile", []byte("{\n\tab_interval 2s\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ABInterval != 2*time.Second {
		t.Errorf("ABInterval = %v, want 2s", cfg.ABInterval)
	}
	for _, bad := range []string{"10ms", "2h", "soon", ""} {
		_, err := Parse("Caddyfile", []byte("{\n\tab_interval "+bad+"\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n"))
		if err == nil || !strings.Contains(err.Error(), "Caddyfile:2") || !strings.Contains(err.Error(), "ab_interval") {
			t.Errorf("ab_interval %q: err %v, want an ab_interval error at Caddyfile:2", bad, err)
		}
	}
}

func TestABRotate(t *testing.T) {
	parse := func(v string) (*Config, error) {
		return Parse("Caddyfile", []byte("{\n\tab_rotate "+v+"\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n"))
	}
	for v, want := range map[string]time.Duration{"30s": 30 * time.Second, "off": ABRotateOff} {
		cfg, err := parse(v)
		if err != nil || cfg.ABRotate != want {
			t.Errorf("ab_rotate %s: %v %v, want %v", v, cfg.ABRotate, err, want)
		}
	}
	for _, bad := range []string{"10ms", "48h", "on", "-1s", ""} {
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), "Caddyfile:2") || !strings.Contains(err.Error(), "ab_rotate") {
			t.Errorf("ab_rotate %q: err %v, want an ab_rotate error at Caddyfile:2", bad, err)
		}
	}
}
