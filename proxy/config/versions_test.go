package config

import "testing"

// TestUpstreamVersions: which HTTP an upstream is spoken to in, with
// Caddy's meanings: h2c:// and versions h2c over cleartext mean HTTP/2
// with prior knowledge; plain http:// and versions 1.1 mean HTTP/1.1;
// https:// offers h2 by ALPN unless versions leaves 2 out.
func TestUpstreamVersions(t *testing.T) {
	for _, c := range []struct {
		site string
		h2c  bool
	}{
		{"reverse_proxy h2c://127.0.0.1:9000", true},
		{"reverse_proxy h2c://127.0.0.1:9000 h2c://127.0.0.1:9001", true},
		{"reverse_proxy 127.0.0.1:9000 {\n\t\ttransport http {\n\t\t\tversions h2c 2\n\t\t}\n\t}", true},
		{"reverse_proxy 127.0.0.1:9000 {\n\t\ttransport http {\n\t\t\tversions h2c\n\t\t}\n\t}", true},
		{"reverse_proxy 127.0.0.1:9000", false},
		{"reverse_proxy http://127.0.0.1:9000 {\n\t\ttransport http {\n\t\t\tversions 1.1 2\n\t\t}\n\t}", false},
	} {
		cfg := mustParse(t, "localhost:8443 {\n\t"+c.site+"\n}\n")
		rp := cfg.Sites[0].Proxies[0]
		if got := rp.ProxyConfig(nil).H2C; got != c.h2c {
			t.Errorf("%q: H2C %v, want %v", c.site, got, c.h2c)
		}
	}
	for _, c := range []struct {
		site string
		h2   bool
	}{
		{"reverse_proxy https://127.0.0.1:9443", true},
		{"reverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\tversions 1.1 2\n\t\t}\n\t}", true},
		{"reverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\tversions 2\n\t\t}\n\t}", true},
		{"reverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\tversions 1.1\n\t\t}\n\t}", false},
		{"reverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\tversions h2c\n\t\t}\n\t}", true},
		{"reverse_proxy 127.0.0.1:9000", false},
	} {
		cfg := mustParse(t, "localhost:8443 {\n\t"+c.site+"\n}\n")
		rp := cfg.Sites[0].Proxies[0]
		if got := rp.ProxyConfig(nil).H2; got != c.h2 {
			t.Errorf("%q: H2 %v, want %v", c.site, got, c.h2)
		}
	}
	if _, err := Parse("Caddyfile", []byte("localhost:8443 {\n\treverse_proxy h2c://127.0.0.1:9000 http://127.0.0.1:9001\n}\n")); err == nil {
		t.Error("h2c:// and http:// upstreams in one reverse_proxy accepted")
	}
}
