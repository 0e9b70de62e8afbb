package config

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/route"
)

// TestTrustedProxiesPrivateRanges: servers { trusted_proxies static
// private_ranges } trusts exactly the one private_ranges table (Caddy's,
// checked against Caddy's list in proxy/route), and ranges written beside
// the keyword are kept in their place.
func TestTrustedProxiesPrivateRanges(t *testing.T) {
	c := mustParse(t, "{\n\tservers {\n\t\ttrusted_proxies static private_ranges\n\t}\n}\n\nlocalhost:8443 {\n\trespond ok\n}\n")
	if want := route.PrivateRanges(); !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("trusted_proxies static private_ranges = %v, want %v", c.TrustedProxies, want)
	}
	c = mustParse(t, "{\n\tservers {\n\t\ttrusted_proxies static 10.1.0.0/16 private_ranges 203.0.113.7\n\t}\n}\n\nlocalhost:8443 {\n\trespond ok\n}\n")
	want := append(append([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, route.PrivateRanges()...), netip.MustParsePrefix("203.0.113.7/32"))
	if !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("trusted_proxies with private_ranges among ranges = %v, want %v", c.TrustedProxies, want)
	}
}
