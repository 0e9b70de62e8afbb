package route

import (
	"net/netip"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestClientAddr: the derivation on its own, as Caddy does it — the peer
// unless it is a trusted proxy, then the leftmost valid address of the
// first client-address field present.
func TestClientAddr(t *testing.T) {
	peer := netip.MustParseAddr("127.0.0.1")
	private := PrivateRanges()
	f := func(kv ...string) []stream.Field {
		var fs []stream.Field
		for i := 0; i < len(kv); i += 2 {
			fs = append(fs, stream.Field{Name: kv[i], Value: kv[i+1]})
		}
		return fs
	}
	for _, c := range []struct {
		name    string
		peer    netip.Addr
		header  []stream.Field
		trusted []netip.Prefix
		headers []string
		want    string
	}{
		{"untrusted", peer, f("x-forwarded-for", "6.6.6.6"), nil, nil, "127.0.0.1"},
		{"untrusted public peer", netip.MustParseAddr("203.0.113.9"), f("x-forwarded-for", "6.6.6.6"), private, nil, "203.0.113.9"},
		{"trusted leftmost", peer, f("x-forwarded-for", "6.6.6.6, 10.0.0.2"), private, nil, "6.6.6.6"},
		{"trusted mapped peer", netip.MustParseAddr("::ffff:10.1.2.3"), f("x-forwarded-for", "6.6.6.6"), private, nil, "6.6.6.6"},
		{"skips garbage", peer, f("x-forwarded-for", "unknown, [2001:db8::1]:443"), private, nil, "2001:db8::1"},
		{"port and zone", peer, f("x-forwarded-for", "198.51.100.7:5555"), private, nil, "198.51.100.7"},
		{"zone", peer, f("x-forwarded-for", "fe80::1%eth0"), private, nil, "fe80::1"},
		{"second line", peer, f("x-forwarded-for", "junk", "x-forwarded-for", "192.0.2.1"), private, nil, "192.0.2.1"},
		{"no field", peer, nil, private, nil, "127.0.0.1"},
		{"named header", peer, f("x-forwarded-for", "6.6.6.6", "x-real-ip", "192.0.2.44"), private, []string{"X-Real-IP", "X-Forwarded-For"}, "192.0.2.44"},
		{"named header falls back", peer, f("x-forwarded-for", "6.6.6.6"), private, []string{"X-Real-IP", "X-Forwarded-For"}, "6.6.6.6"},
		{"ipv6 loopback trusted", netip.MustParseAddr("::1"), f("x-forwarded-for", "6.6.6.6"), private, nil, "6.6.6.6"},
		{"ula trusted", netip.MustParseAddr("fd12::5"), f("x-forwarded-for", "6.6.6.6"), private, nil, "6.6.6.6"},
		{"narrow list", peer, f("x-forwarded-for", "6.6.6.6"), []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, nil, "127.0.0.1"},
	} {
		if got := ClientAddr(c.peer, c.header, c.trusted, c.headers); got.String() != c.want {
			t.Errorf("%s: ClientAddr = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestStrictClientAddr: trusted_proxies_strict reads the fields right to
// left and takes the first address that is not a trusted proxy, so a
// client cannot name itself by sending the field.
func TestStrictClientAddr(t *testing.T) {
	peer := netip.MustParseAddr("127.0.0.1")
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	xff := func(vs ...string) []stream.Field {
		var fs []stream.Field
		for _, v := range vs {
			fs = append(fs, stream.Field{Name: "x-forwarded-for", Value: v})
		}
		return fs
	}
	for _, c := range []struct {
		name   string
		peer   netip.Addr
		header []stream.Field
		want   string
	}{
		{"untrusted peer", netip.MustParseAddr("203.0.113.9"), xff("6.6.6.6"), "203.0.113.9"},
		{"rightmost untrusted", peer, xff("198.51.100.7, 203.0.113.9, 10.1.1.1"), "203.0.113.9"},
		{"across lines, last line first", peer, xff("198.51.100.7", "10.0.0.3, [2001:db8::1]:443, 10.0.0.2"), "2001:db8::1"},
		{"skips garbage", peer, xff("192.0.2.1, junk"), "192.0.2.1"},
		{"all trusted", peer, xff("10.0.0.1, 10.0.0.2"), "127.0.0.1"},
		{"no field", peer, nil, "127.0.0.1"},
	} {
		if got := StrictClientAddr(c.peer, c.header, trusted, nil); got.String() != c.want {
			t.Errorf("%s: StrictClientAddr = %s, want %s", c.name, got, c.want)
		}
	}
}
