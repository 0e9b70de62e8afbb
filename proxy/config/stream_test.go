package config

import (
	"strings"
	"testing"
	"time"
)

func TestStreamOptions(t *testing.T) {
	cfg, err := Parse("Caddyfile", []byte(`{
	h2_extended_connect off
}
example.localhost {
	reverse_proxy 127.0.0.1:9000 {
		stream_timeout 1h
		stream_close_delay 5m
	}
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.NoExtendedConnect {
		t.Fatal("h2_extended_connect off not applied")
	}
	pc := cfg.Sites[0].AllProxies()[0].ProxyConfig(nil)
	if pc.StreamTimeout != time.Hour || pc.StreamCloseDelay != 5*time.Minute {
		t.Fatalf("stream options: %v %v", pc.StreamTimeout, pc.StreamCloseDelay)
	}

	def, err := Parse("Caddyfile", []byte("example.localhost {\n\treverse_proxy 127.0.0.1:9000\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if def.NoExtendedConnect || def.Sites[0].AllProxies()[0].ProxyConfig(nil).StreamTimeout != 0 {
		t.Fatal("RFC 8441 must be on and stream_timeout off by default")
	}

	for _, tc := range []struct{ file, want string }{
		{"a.localhost {\n\treverse_proxy 127.0.0.1:1 {\n\t\tstream_timeout soon\n\t}\n}\n", "Caddyfile:3: reverse_proxy: stream_timeout"},
		{"a.localhost {\n\treverse_proxy 127.0.0.1:1 {\n\t\tstream_close_delay\n\t}\n}\n", "Caddyfile:3: reverse_proxy: stream_close_delay"},
		{"{\n\th2_extended_connect maybe\n}\na.localhost {\n\treverse_proxy 127.0.0.1:1\n}\n", "Caddyfile:2: h2_extended_connect"},
	} {
		_, err := Parse("Caddyfile", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.file, err, tc.want)
		}
	}
}
