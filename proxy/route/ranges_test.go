package route

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// caddyPrivateRanges is Caddy's private_ranges as its source writes it
// (PrivateRangesCIDR in Caddy v2's internal package): the list pollproxy
// promises to mean by the same keyword.
var caddyPrivateRanges = []string{
	"192.168.0.0/16",
	"172.16.0.0/12",
	"10.0.0.0/8",
	"127.0.0.1/8",
	"fd00::/8",
	"::1",
}

// TestPrivateRangesAreCaddys: the one private_ranges table is Caddy's,
// range for range, and every way of writing private_ranges (the keyword
// in ParseRanges, PrivateRanges itself) gives it. A second table that
// drifted, as one once did (with link-local and all of fc00::/7), fails
// here.
func TestPrivateRangesAreCaddys(t *testing.T) {
	var want []netip.Prefix
	for _, s := range caddyPrivateRanges {
		// Caddy reads a bare address as a one-address range.
		if !strings.Contains(s, "/") {
			a := netip.MustParseAddr(s)
			s = netip.PrefixFrom(a, a.BitLen()).String()
		}
		want = append(want, netip.MustParsePrefix(s).Masked())
	}
	if got := PrivateRanges(); !slices.Equal(got, want) {
		t.Errorf("PrivateRanges() = %v, want Caddy's %v", got, want)
	}
	parsed, err := ParseRanges([]string{"private_ranges"})
	if err != nil || !slices.Equal(parsed, want) {
		t.Errorf("ParseRanges(private_ranges) = %v, %v, want Caddy's %v", parsed, err, want)
	}

	// A caller appending to the table cannot change it for the next one.
	a := PrivateRanges()
	_ = append(a[:1], netip.MustParsePrefix("0.0.0.0/0"))
	if got := PrivateRanges(); !slices.Equal(got, want) {
		t.Errorf("after a caller's append: %v", got)
	}

	// What the table means, address by address, where the old second
	// table differed from Caddy's.
	for addr, private := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "10.9.8.7": true, "172.31.255.255": true, "192.168.1.1": true,
		"::1": true, "fd12::5": true,
		"169.254.1.1": false, "fc00::1": false, "fe80::1": false, "172.32.0.1": false, "8.8.8.8": false,
	} {
		if got := Trusted(netip.MustParseAddr(addr), want); got != private {
			t.Errorf("%s in private_ranges: %v, want %v", addr, got, private)
		}
	}
}
