package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
)

// MaxHeader is the longest header Parse accepts. A version 1 header is at
// most 107 bytes; version 2 allows 64 KiB of addresses and TLVs, but what
// load balancers send (addresses, a unique ID, TLS facts) fits easily, and
// a connection must not make the server buffer more before it says who
// it is.
const MaxHeader = 4096

// Errors of Parse. Only ErrIncomplete asks for more bytes.
var (
	// ErrIncomplete: the bytes so far begin a header that has not ended.
	ErrIncomplete = errors.New("proxyproto: header incomplete")
	// ErrNoHeader: the bytes do not begin with a PROXY header.
	ErrNoHeader = errors.New("proxyproto: no PROXY header")
	// ErrMalformed: the bytes begin as a header but break its grammar.
	ErrMalformed = errors.New("proxyproto: malformed PROXY header")
	// ErrTooLong: the header would be longer than MaxHeader.
	ErrTooLong = errors.New("proxyproto: PROXY header too long")
)

// Header is what a PROXY header said. Source and Dest are the zero value
// when it carried no TCP addresses: version 1's UNKNOWN, version 2's
// LOCAL command (a health check from the balancer itself) or an address
// family other than TCP over IPv4 or IPv6. Then the connection's own
// addresses stand.
type Header struct {
	Version      int
	Source, Dest netip.AddrPort
}

var (
	v1Prefix = []byte("PROXY ")
	v2Sig    = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// Parse reads a header at the start of b and returns it with its length
// in bytes; what follows it is the connection's own data.
func Parse(b []byte) (Header, int, error) {
	switch {
	case hasPrefix(b, v2Sig):
		return parseV2(b)
	case hasPrefix(b, v1Prefix):
		return parseV1(b)
	}
	return Header{}, 0, ErrNoHeader
}

// hasPrefix reports whether b could begin with p: b is p's prefix so far
// (then ErrIncomplete follows), or starts with all of p.
func hasPrefix(b, p []byte) bool {
	n := min(len(b), len(p))
	return len(b) > 0 && bytes.Equal(b[:n], p[:n])
}

// maxV1 is version 1's longest line: "PROXY TCP6 " and two full IPv6
// addresses and ports, with CRLF.
const maxV1 = 107

func parseV1(b []byte) (Header, int, error) {
	end := bytes.Index(b[:min(len(b), maxV1)], []byte("\r\n"))
	if end < 0 {
		if len(b) >= maxV1 {
			return Header{}, 0, ErrMalformed
		}
		return Header{}, 0, ErrIncomplete
	}
	f := bytes.Split(b[len(v1Prefix):end], []byte(" "))
	h := Header{Version: 1}
	switch string(f[0]) {
	case "UNKNOWN":
		return h, end + 2, nil
	case "TCP4", "TCP6":
	default:
		return Header{}, 0, ErrMalformed
	}
	if len(f) != 5 {
		return Header{}, 0, ErrMalformed
	}
	src, err1 := netip.ParseAddr(string(f[1]))
	dst, err2 := netip.ParseAddr(string(f[2]))
	sp, ok1 := port(f[3])
	dp, ok2 := port(f[4])
	if err1 != nil || err2 != nil || !ok1 || !ok2 || src.Is4() != (string(f[0]) == "TCP4") || dst.Is4() != src.Is4() || src.Zone() != "" || dst.Zone() != "" {
		return Header{}, 0, ErrMalformed
	}
	// A client's IPv4 address as an IPv6 balancer writes it
	// (::ffff:192.0.2.1) is the IPv4 address, as net.IP prints it.
	h.Source, h.Dest = netip.AddrPortFrom(src.Unmap(), sp), netip.AddrPortFrom(dst.Unmap(), dp)
	return h, end + 2, nil
}

// port reads a version 1 port: decimal, no sign, no leading zero.
func port(b []byte) (uint16, bool) {
	if len(b) == 0 || len(b) > 5 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 16)
	return uint16(n), err == nil
}

func parseV2(b []byte) (Header, int, error) {
	if len(b) < 16 {
		return Header{}, 0, ErrIncomplete
	}
	verCmd, fam := b[12], b[13]
	n := 16 + int(binary.BigEndian.Uint16(b[14:16]))
	if verCmd>>4 != 2 || verCmd&0x0f > 1 {
		return Header{}, 0, ErrMalformed
	}
	if n > MaxHeader {
		return Header{}, 0, ErrTooLong
	}
	if len(b) < n {
		return Header{}, 0, ErrIncomplete
	}
	h := Header{Version: 2}
	if verCmd&0x0f == 0 { // LOCAL: the balancer's own connection
		return h, n, nil
	}
	addr := b[16:n]
	switch fam {
	case 0x11: // TCP over IPv4
		if len(addr) < 12 {
			return Header{}, 0, ErrMalformed
		}
		h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(addr[0:4])), binary.BigEndian.Uint16(addr[8:10]))
		h.Dest = netip.AddrPortFrom(netip.AddrFrom4([4]byte(addr[4:8])), binary.BigEndian.Uint16(addr[10:12]))
	case 0x21: // TCP over IPv6
		if len(addr) < 36 {
			return Header{}, 0, ErrMalformed
		}
		h.Source = netip.AddrPortFrom(netip.AddrFrom16([16]byte(addr[0:16])).Unmap(), binary.BigEndian.Uint16(addr[32:34]))
		h.Dest = netip.AddrPortFrom(netip.AddrFrom16([16]byte(addr[16:32])).Unmap(), binary.BigEndian.Uint16(addr[34:36]))
	}
	// Other families (UNSPEC, UDP, unix sockets) carry no TCP client: the
	// header is consumed and the connection's own addresses stand.
	return h, n, nil
}

// Append appends the header of the given version (1 or 2) announcing a
// TCP connection from src to b. The destination is the unspecified
// address of src's family, port 0, as Caddy sends it: the address the
// client reached is not the origin's business, and the two must share a
// family.
func Append(b []byte, version int, src netip.AddrPort) []byte {
	a := src.Addr().Unmap()
	if version == 1 {
		fam, dst := "TCP4 ", "0.0.0.0"
		if a.Is6() {
			fam, dst = "TCP6 ", "::"
		}
		b = append(b, v1Prefix...)
		b = append(b, fam...)
		b = a.WithZone("").AppendTo(b)
		b = append(b, ' ')
		b = append(b, dst...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(src.Port()), 10)
		return append(b, " 0\r\n"...)
	}
	b = append(b, v2Sig...)
	if a.Is4() {
		ip := a.As4()
		b = append(b, 0x21, 0x11, 0, 12)
		b = append(b, ip[:]...)
		b = append(b, 0, 0, 0, 0)
	} else {
		ip := a.As16()
		b = append(b, 0x21, 0x21, 0, 36)
		b = append(b, ip[:]...)
		b = append(b, make([]byte, 16)...)
	}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	return append(b, 0, 0)
}
