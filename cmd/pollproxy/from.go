package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// siteAddr is where a development command serves: the name the site
// answers to (its certificate and the printed URL), the address it binds
// and the port.
type siteAddr struct {
	name string
	bind string
	port int
}

// parseFrom reads --from as Caddy's reverse-proxy reads it: a site address
// ([https://]host[:port], 443 when no port is given), whose host is the
// site's name, not necessarily an address to bind. An IP address is bound
// as given; localhost and names under .localhost (the development names
// browsers and curl resolve to loopback without DNS) bind loopback; any
// other name binds every interface, as in Caddy. What Caddy would serve as
// plain HTTP — http://, a port without a host, port 80 — is refused, since
// pollproxy's development commands serve HTTPS only.
func parseFrom(from string) (siteAddr, error) {
	s := from
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		s = rest
	} else if strings.Contains(s, "://") {
		return siteAddr{}, fmt.Errorf("--from %s: only https:// sites are served by pollproxy's development commands", from)
	}
	if strings.ContainsAny(s, "/?#") {
		return siteAddr{}, fmt.Errorf("--from %s: paths are not allowed", from)
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			host = s // a bare IPv6 address
		} else if strings.HasSuffix(s, ":") || strings.HasPrefix(s, "[") && !strings.HasSuffix(s, "]") {
			return siteAddr{}, fmt.Errorf("--from %s: want host[:port]", from)
		} else {
			host = strings.Trim(s, "[]")
		}
		portStr = "443"
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return siteAddr{}, fmt.Errorf("--from %s: bad port %q", from, portStr)
	}
	if host == "" || port == 80 {
		return siteAddr{}, fmt.Errorf("--from %s: Caddy serves this address as plain HTTP, which pollproxy's development commands do not; give a name, e.g. --from localhost:%d", from, port)
	}
	a := siteAddr{name: strings.ToLower(strings.TrimSuffix(host, ".")), port: port}
	switch ip := net.ParseIP(a.name); {
	case ip != nil:
		a.bind = a.name
	case a.name == "localhost" || strings.HasSuffix(a.name, ".localhost"):
		a.bind = "localhost"
	}
	return a, nil
}

// hostport is the address to listen on.
func (a siteAddr) hostport() string { return net.JoinHostPort(a.bind, strconv.Itoa(a.port)) }

// urlHost is the site's name as it goes in a URL.
func (a siteAddr) urlHost() string {
	if ip := net.ParseIP(a.name); ip != nil && ip.IsUnspecified() {
		return "localhost"
	}
	if strings.Contains(a.name, ":") {
		return "[" + a.name + "]"
	}
	return a.name
}
