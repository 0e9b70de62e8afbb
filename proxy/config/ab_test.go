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
