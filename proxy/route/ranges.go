package route

import (
	"fmt"
	"net/netip"
	"strings"
)

// privateRanges is Caddy's private_ranges, in Caddy's order: RFC 1918,
// IPv4 loopback, the locally assigned half of the unique local addresses
// (fd00::/8, not all of fc00::/7) and IPv6 loopback. Link-local addresses
// are not in it, in Caddy as here. It is the only such table in pollproxy,
// so trusted_proxies, remote_ip and client_ip can never disagree about
// what private_ranges means.
var privateRanges = [...]netip.Prefix{
	netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("::1/128"),
}

// PrivateRanges returns what Caddy's private_ranges stands for (in
// trusted_proxies, remote_ip and client_ip), as a new slice each call so
// that a caller may append to it.
func PrivateRanges() []netip.Prefix { return append([]netip.Prefix(nil), privateRanges[:]...) }

// ParseRanges reads IP addresses and CIDR ranges, and the keyword
// private_ranges.
func ParseRanges(args []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, a := range args {
		if a == "private_ranges" {
			out = append(out, privateRanges[:]...)
			continue
		}
		if strings.Contains(a, "/") {
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("%q: want an IP address or a CIDR range", a)
			}
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("%q: want an IP address or a CIDR range", a)
		}
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}
