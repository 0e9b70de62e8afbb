package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// v2 builds a version 2 header: command (0 LOCAL, 1 PROXY), family and
// the address block, followed by tail.
func v2(cmd, fam byte, addr []byte, tail string) []byte {
	b := append([]byte{}, v2Sig...)
	b = append(b, 0x20|cmd, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addr)))
	return append(append(b, addr...), tail...)
}

func tcp4(src, dst string, sp, dp uint16) []byte {
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	b := append(s[:], d[:]...)
	b = binary.BigEndian.AppendUint16(b, sp)
	return binary.BigEndian.AppendUint16(b, dp)
}

func tcp6(src, dst string, sp, dp uint16) []byte {
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	b := append(s[:], d[:]...)
	b = binary.BigEndian.AppendUint16(b, sp)
	return binary.BigEndian.AppendUint16(b, dp)
}

func TestParse(t *testing.T) {
	const tail = "\x16\x03\x01" // a ClientHello's first bytes follow the header
	ap := netip.MustParseAddrPort
	for _, c := range []struct {
		name    string
		in      []byte
		src     netip.AddrPort
		version int
		err     error
	}{
		{"v1 tcp4", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 56324 443\r\n" + tail), ap("198.51.100.7:56324"), 1, nil},
		{"v1 tcp6", []byte("PROXY TCP6 2001:db8::7 2001:db8::1 56324 443\r\n" + tail), ap("[2001:db8::7]:56324"), 1, nil},
		{"v1 tcp6 mapped", []byte("PROXY TCP6 ::ffff:198.51.100.7 ::ffff:192.0.2.1 1 2\r\n"), ap("198.51.100.7:1"), 1, nil},
		{"v1 unknown", []byte("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n" + tail), netip.AddrPort{}, 1, nil},
		{"v1 family mismatch", []byte("PROXY TCP4 2001:db8::7 2001:db8::1 1 2\r\n"), netip.AddrPort{}, 0, ErrMalformed},
		{"v1 leading zero port", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 0443 443\r\n"), netip.AddrPort{}, 0, ErrMalformed},
		{"v1 port too large", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 65536 443\r\n"), netip.AddrPort{}, 0, ErrMalformed},
		{"v1 fields missing", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 443\r\n"), netip.AddrPort{}, 0, ErrMalformed},
		{"v1 no CRLF in 107 bytes", append([]byte("PROXY TCP4 "), bytes.Repeat([]byte("1"), 120)...), netip.AddrPort{}, 0, ErrMalformed},
		{"v1 partial", []byte("PROXY TCP4 198.51.100.7 19"), netip.AddrPort{}, 0, ErrIncomplete},
		{"v1 prefix partial", []byte("PRO"), netip.AddrPort{}, 0, ErrIncomplete},
		{"v2 tcp4", v2(1, 0x11, tcp4("198.51.100.7", "192.0.2.1", 56324, 443), tail), ap("198.51.100.7:56324"), 2, nil},
		{"v2 tcp6", v2(1, 0x21, tcp6("2001:db8::7", "2001:db8::1", 56324, 443), tail), ap("[2001:db8::7]:56324"), 2, nil},
		{"v2 tcp6 mapped", v2(1, 0x21, tcp6("::ffff:198.51.100.7", "::ffff:192.0.2.1", 1, 2), ""), ap("198.51.100.7:1"), 2, nil},
		{"v2 tcp4 with TLVs", v2(1, 0x11, append(tcp4("198.51.100.7", "192.0.2.1", 1, 2), 0x05, 0, 2, 'i', 'd'), tail), ap("198.51.100.7:1"), 2, nil},
		{"v2 local", v2(0, 0x00, nil, tail), netip.AddrPort{}, 2, nil},
		{"v2 unix family", v2(1, 0x31, make([]byte, 216), tail), netip.AddrPort{}, 2, nil},
		{"v2 short tcp4 block", v2(1, 0x11, make([]byte, 8), ""), netip.AddrPort{}, 0, ErrMalformed},
		{"v2 bad version", append(append([]byte{}, v2Sig...), 0x11, 0x11, 0, 0), netip.AddrPort{}, 0, ErrMalformed},
		{"v2 bad command", append(append([]byte{}, v2Sig...), 0x22, 0x11, 0, 0), netip.AddrPort{}, 0, ErrMalformed},
		{"v2 too long", append(append([]byte{}, v2Sig...), 0x21, 0x11, 0xff, 0xff), netip.AddrPort{}, 0, ErrTooLong},
		{"v2 partial", v2(1, 0x11, tcp4("198.51.100.7", "192.0.2.1", 1, 2), "")[:20], netip.AddrPort{}, 0, ErrIncomplete},
		{"tls", []byte(tail + "\x00\x00"), netip.AddrPort{}, 0, ErrNoHeader},
		{"http", []byte("GET / HTTP/1.1\r\n"), netip.AddrPort{}, 0, ErrNoHeader},
		{"almost the signature", []byte("\r\n\r\nGET"), netip.AddrPort{}, 0, ErrNoHeader},
	} {
		h, n, err := Parse(c.in)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
			continue
		}
		if err != nil {
			continue
		}
		if h.Source != c.src || h.Version != c.version {
			t.Errorf("%s: %+v, want source %v version %d", c.name, h, c.src, c.version)
		}
		if rest := string(c.in[n:]); rest != tail && rest != "" {
			t.Errorf("%s: %q left after the header", c.name, rest)
		}
	}
}

// FuzzParse: Parse never reads past what it is given, says ErrIncomplete
// for every proper prefix of a header it accepts, and parses the header
// the same way whatever follows it.
func FuzzParse(f *testing.F) {
	f.Add([]byte("PROXY TCP4 198.51.100.7 192.0.2.1 56324 443\r\nrest"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(v2(1, 0x11, tcp4("198.51.100.7", "192.0.2.1", 1, 2), "rest"))
	f.Add(v2(1, 0x21, tcp6("2001:db8::7", "2001:db8::1", 1, 2), ""))
	f.Add(v2(0, 0, nil, "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with length %d", err, n)
			}
			return
		}
		if n <= 0 || n > len(b) || n > MaxHeader {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		for i := 1; i < n; i++ {
			if _, _, err := Parse(b[:i]); err != ErrIncomplete {
				t.Fatalf("prefix of %d bytes of a %d-byte header: %v, want ErrIncomplete", i, n, err)
			}
		}
		h2, n2, err := Parse(append(b[:n:n], "trailing"...))
		if err != nil || h2 != h || n2 != n {
			t.Fatalf("with trailing bytes: %+v %d %v, want %+v %d", h2, n2, err, h, n)
		}
	})
}

// TestAppend: what Append writes, Parse reads back, for both versions and
// families.
func TestAppend(t *testing.T) {
	for _, src := range []string{"198.51.100.7:56324", "[2001:db8::7]:443", "[::ffff:198.51.100.7]:1"} {
		for _, v := range []int{1, 2} {
			ap := netip.MustParseAddrPort(src)
			b := Append([]byte("x"), v, ap)
			h, n, err := Parse(b[1:])
			want := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			if err != nil || n != len(b)-1 || h.Version != v || h.Source != want || h.Dest.Addr().Is4() != want.Addr().Is4() || !h.Dest.Addr().IsUnspecified() {
				t.Errorf("v%d %s: %q parsed as %+v %d %v", v, src, b, h, n, err)
			}
		}
	}
}
