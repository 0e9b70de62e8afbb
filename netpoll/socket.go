//go:build unix

package netpoll

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// ResolveTCP turns "host:port" into addresses, resolving names. It may block
// on DNS, so call it at start-up or off the loop, never on a loop. An IPv6
// zone given as an interface name ("[fe80::1%eth0]:80") comes back as the
// interface's index ("[fe80::1%2]:80"), so connecting costs no lookup.
func ResolveTCP(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		p, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", portStr)
		if lerr != nil {
			return nil, fmt.Errorf("bad port %q in %q", portStr, hostport)
		}
		port = uint64(p)
	}
	if host == "" {
		return []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port))}, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip, err = withZoneIndex(ip)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", hostport, err)
		}
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), uint16(port))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	return out, nil
}

func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	if z := ap.Addr().Zone(); z != "" {
		sa.ZoneId = zoneIndex(z)
	}
	return sa, unix.AF_INET6
}

// withZoneIndex replaces an IPv6 zone that names an interface by the
// interface's index. The lookup (a netlink round trip on Linux) is done
// once, where an address is configured, instead of on every connect.
func withZoneIndex(ip netip.Addr) (netip.Addr, error) {
	z := ip.Zone()
	if z == "" {
		return ip, nil
	}
	if _, err := strconv.ParseUint(z, 10, 32); err == nil {
		return ip, nil
	}
	ifi, err := net.InterfaceByName(z)
	if err != nil {
		return ip, fmt.Errorf("zone %q: %w", z, err)
	}
	return ip.WithZone(strconv.Itoa(ifi.Index)), nil
}

// zoneIndex is the scope id for a zone: an index as ResolveTCP leaves it,
// or, for an address built elsewhere, an interface name looked up now (0
// when there is no such interface).
func zoneIndex(z string) uint32 {
	if n, err := strconv.ParseUint(z, 10, 32); err == nil {
		return uint32(n)
	}
	if ifi, err := net.InterfaceByName(z); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}

// AddrPort converts a socket address to netip form (the zero value for
// families other than IPv4 and IPv6).
func AddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// Listen opens a non-blocking TCP listener on addr. With reusePort several
// listeners (one per loop) share the address and the kernel spreads
// connections across them (SO_REUSEPORT).
func Listen(addr netip.AddrPort, reusePort bool, backlog int) (int, error) {
	sa, family := sockaddr(addr)
	fd, err := socket(family, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("listen %s: socket: %w", addr, err)
	}
	fail := func(op string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("listen %s: %s: %w", addr, op, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("SO_REUSEADDR", err)
	}
	if reusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("SO_REUSEPORT", err)
		}
	}
	if family == unix.AF_INET6 && addr.Addr().IsUnspecified() {
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if backlog <= 0 {
		backlog = 4096
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return fail("listen", err)
	}
	return fd, nil
}

// LocalAddr returns the address a socket is bound to.
func LocalAddr(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return AddrPort(sa), nil
}

// Connect starts a non-blocking connect to addr. The connection is
// established when the descriptor turns writable and SocketError returns
// nil; Connect itself never waits.
func Connect(addr netip.AddrPort) (int, error) {
	sa, family := sockaddr(addr)
	fd, err := socket(family, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("connect %s: socket: %w", addr, err)
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS && err != unix.EINTR {
		unix.Close(fd)
		return -1, fmt.Errorf("connect %s: %w", addr, err)
	}
	return fd, nil
}

// ConnectUnix starts a non-blocking connect to the Unix stream socket at
// path, like Connect: the connection is usable once the descriptor turns
// writable and SocketError returns nil. A listener whose backlog is full
// refuses at once (EAGAIN on Linux) rather than making the loop wait.
func ConnectUnix(path string) (int, error) {
	fd, err := socket(unix.AF_UNIX, 0)
	if err != nil {
		return -1, fmt.Errorf("connect unix %s: socket: %w", path, err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil && err != unix.EINPROGRESS && err != unix.EINTR {
		unix.Close(fd)
		return -1, fmt.Errorf("connect unix %s: %w", path, err)
	}
	return fd, nil
}

// SocketError returns the pending error of a socket (SO_ERROR): how a
// non-blocking connect reports its outcome.
func SocketError(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}

// SetNoDelay turns off Nagle's algorithm: pollproxy writes whole frames.
func SetNoDelay(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
}
