package route

import (
	"net/netip"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestFillUpstream: an upstream placeholder leaves a mark that is filled
// for each upstream, with Caddy's host and port halves; a request whose
// template has none is left as it is.
func TestFillUpstream(t *testing.T) {
	tmpl, err := ParseTemplate("{upstream_hostport}/{http.reverse_proxy.upstream.host}/{http.reverse_proxy.upstream.port}/{method}", TemplateOptions{Upstream: true})
	if err != nil {
		t.Fatal(err)
	}
	if !tmpl.UsesUpstream() {
		t.Fatal("UsesUpstream = false")
	}
	r := &stream.Request{Method: "GET", RemoteAddr: netip.MustParseAddrPort("127.0.0.1:1")}
	head := append([]byte("Host: "), tmpl.Append(nil, r)...)
	for _, tc := range []struct{ hostport, want string }{
		{"127.0.0.1:9000", "Host: 127.0.0.1:9000/127.0.0.1/9000/GET"},
		{"[::1]:81", "Host: [::1]:81/::1/81/GET"},
		{"/run/app.sock", "Host: /run/app.sock//run/app.sock//GET"},
	} {
		if got := string(FillUpstream(nil, head, tc.hostport, "80")); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.hostport, got, tc.want)
		}
	}
	// The Host an emptied Host becomes: the address, without the
	// scheme's default port.
	for _, tc := range []struct{ hostport, port, want string }{
		{"127.0.0.1:9000", "80", "127.0.0.1:9000"},
		{"app:80", "80", "app"},
		{"app:443", "80", "app:443"},
		{"[::1]:443", "443", "[::1]"},
	} {
		if got := string(FillUpstream(nil, []byte(RequestHostMark), tc.hostport, tc.port)); got != tc.want {
			t.Errorf("request host for %s (default %s): %q, want %q", tc.hostport, tc.port, got, tc.want)
		}
	}
	if _, err := ParseTemplate("{upstream_hostport}", TemplateOptions{}); err == nil {
		t.Error("{upstream_hostport} accepted outside header_up")
	}
	plain, _ := ParseTemplate("{method}", TemplateOptions{Upstream: true})
	if plain.UsesUpstream() {
		t.Error("{method} counted as an upstream placeholder")
	}
}
