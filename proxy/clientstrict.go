package proxy

import (
	"net/netip"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// StrictClientAddr is the client address by Caddy's
// trusted_proxies_strict: when the peer is a trusted proxy, each of
// ipHeaders (default X-Forwarded-For) in turn is read from right to left
// (its fields joined, as one list) and the first valid address that is
// not a trusted proxy is the client; when every address is trusted, the
// peer. Unlike the default, leftmost choice (route.ClientAddr), a client
// cannot name itself by sending the field: the proxies append on the
// right. It allocates nothing.
func StrictClientAddr(peer netip.Addr, header []stream.Field, trusted []netip.Prefix, ipHeaders []string) netip.Addr {
	peer = peer.Unmap()
	if !route.Trusted(peer, trusted) {
		return peer
	}
	if len(ipHeaders) == 0 {
		ipHeaders = defaultIPHeaders
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
				if a, ok := forwardedAddr(part); ok && !route.Trusted(a, trusted) {
					return a
				}
			}
		}
	}
	return peer
}

var defaultIPHeaders = []string{"x-forwarded-for"}

// forwardedAddr reads one element of a client-address list as Caddy
// does: an address, perhaps with a port (bracketed for IPv6) or a zone.
func forwardedAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	return a.Unmap(), err == nil
}
