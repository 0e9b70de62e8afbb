package route

import (
	"net/netip"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// This file derives the client's address the way Caddy does, in one place,
// so the X-Forwarded-* fields an origin receives, the access log and
// client_ip matching can never disagree about who sent a request. The
// private_ranges those rules are usually written with are in ranges.go.

// Trusted reports whether peer, the address a connection comes from, is
// one of the trusted proxies: only then are the client-address fields it
// sends believed.
func Trusted(peer netip.Addr, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	peer = peer.Unmap()
	for _, p := range trusted {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

// ClientAddr returns the address a request comes from: the peer's own
// address, unless the peer is a trusted proxy; then the first (leftmost)
// valid address in the first of ipHeaders the request carries (Caddy's
// default, non-strict choice), with a port or zone removed. ipHeaders are
// field names in any case; nil means X-Forwarded-For. It does not
// allocate.
func ClientAddr(peer netip.Addr, header []stream.Field, trusted []netip.Prefix, ipHeaders []string) netip.Addr {
	peer = peer.Unmap()
	if !Trusted(peer, trusted) {
		return peer
	}
	if len(ipHeaders) == 0 {
		ipHeaders = defaultClientIPHeaders
	}
	for _, name := range ipHeaders {
		for _, f := range header {
			if !strings.EqualFold(f.Name, name) {
				continue
			}
			for v := f.Value; v != ""; {
				var part string
				part, v, _ = strings.Cut(v, ",")
				if a, ok := parseForwardedAddr(part); ok {
					return a
				}
			}
		}
	}
	return peer
}

// StrictClientAddr is the client address by Caddy's
// trusted_proxies_strict: when the peer is a trusted proxy, each of
// ipHeaders (default X-Forwarded-For) in turn is read from right to left
// (its fields joined, as one list) and the first valid address that is
// not a trusted proxy is the client; when every address is trusted, the
// peer. Unlike the default, leftmost choice (ClientAddr), a client
// cannot name itself by sending the field: the proxies append on the
// right. It allocates nothing.
func StrictClientAddr(peer netip.Addr, header []stream.Field, trusted []netip.Prefix, ipHeaders []string) netip.Addr {
	peer = peer.Unmap()
	if !Trusted(peer, trusted) {
		return peer
	}
	if len(ipHeaders) == 0 {
		ipHeaders = defaultClientIPHeaders
	}
	for _, name := range ipHeaders {
		for i := len(header) - 1; i >= 0; i-- {
			if !strings.EqualFold(header[i].Name, name) {
				continue
			}
			for v := header[i].Value; v != ""; {
				var part string
				if j := strings.LastIndexByte(v, ','); j >= 0 {
					v, part = v[:j], v[j+1:]
				} else {
					v, part = "", v
				}
				if a, ok := parseForwardedAddr(part); ok && !Trusted(a, trusted) {
					return a
				}
			}
		}
	}
	return peer
}

var defaultClientIPHeaders = []string{"x-forwarded-for"}

// parseForwardedAddr reads one list element of a client-address field:
// an address, perhaps bracketed, perhaps with a port or a zone.
func parseForwardedAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
