package fastcgi

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// records cuts a byte stream of records into (type, content) pairs,
// checking each header's version, id and padding.
func records(t *testing.T, b []byte, id uint16) (types []uint8, contents [][]byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < headerLen || b[0] != version || binary.BigEndian.Uint16(b[2:4]) != id {
			t.Fatalf("bad header % x", b[:min(len(b), 8)])
		}
		n, pad := int(binary.BigEndian.Uint16(b[4:6])), int(b[6])
		if (n+pad)%8 != 0 {
			t.Fatalf("record of %d bytes padded by %d", n, pad)
		}
		types = append(types, b[1])
		contents = append(contents, b[headerLen:headerLen+n])
		b = b[headerLen+n+pad:]
	}
	return types, contents
}

// pairs decodes one record's name-value pairs: a pair never spans two.
func pairs(t *testing.T, b []byte) [][2]string {
	t.Helper()
	var out [][2]string
	length := func() int {
		if b[0] < 128 {
			n := int(b[0])
			b = b[1:]
			return n
		}
		n := int(binary.BigEndian.Uint32(b) &^ (1 << 31))
		b = b[4:]
		return n
	}
	for len(b) > 0 {
		nl, vl := length(), length()
		out = append(out, [2]string{string(b[:nl]), string(b[nl : nl+vl])})
		b = b[nl+vl:]
	}
	return out
}

// TestParams: pairs are packed into records of at most maxContent bytes,
// none cut in two, long lengths in four bytes, an over-long value cut to
// fit (as Caddy does), AddInt's value in decimal, and the stream ends
// with an empty record.
func TestParams(t *testing.T) {
	var p Params
	p.Begin(AppendBegin(nil, 7, true), 7)
	long := strings.Repeat("v", 300)
	huge := strings.Repeat("h", 70000)
	p.Add("A", "1")
	p.Add("LONG", long)
	for i := 0; i < 400; i++ {
		p.Add("FILL", strings.Repeat("f", 200))
	}
	p.Add("HUGE", huge)
	p.AddInt("PORT", 54321)
	p.AddInt("ZERO", 0)
	p.AddInt("NEG", -7)
	b := p.Finish()
	types, contents := records(t, b, 7)
	if types[0] != TypeBeginRequest || !bytes.Equal(contents[0], []byte{0, 1, 1, 0, 0, 0, 0, 0}) {
		t.Fatalf("begin: %d % x", types[0], contents[0])
	}
	if last := len(types) - 1; types[last] != TypeParams || len(contents[last]) != 0 {
		t.Fatalf("no empty end record")
	}
	var all [][2]string
	for i := 1; i < len(types)-1; i++ {
		if types[i] != TypeParams || len(contents[i]) > maxContent || len(contents[i]) == 0 {
			t.Fatalf("record %d: type %d, %d bytes", i, types[i], len(contents[i]))
		}
		all = append(all, pairs(t, contents[i])...)
	}
	if len(all) != 406 || all[0] != [2]string{"A", "1"} || all[1] != [2]string{"LONG", long} {
		t.Fatalf("pairs: %d, first %q", len(all), all[:2])
	}
	if h := all[402]; h[0] != "HUGE" || len(h[1]) != maxContent-8-4 || !strings.HasPrefix(huge, h[1]) {
		t.Fatalf("huge value: %q of %d bytes", h[0], len(h[1]))
	}
	if ints := all[403:]; ints[0] != [2]string{"PORT", "54321"} || ints[1] != [2]string{"ZERO", "0"} || ints[2] != [2]string{"NEG", "-7"} {
		t.Fatalf("AddInt pairs: %q", ints)
	}
}

// response is an application's answer: stdout, stderr and management
// records interleaved, then FCGI_END_REQUEST.
func response(id uint16) []byte {
	var b []byte
	b = AppendStream(b, TypeStdout, id, []byte("Status: 404\r\nX-A: b\r\n\r\n"))
	b = AppendStream(b, TypeStderr, id, []byte("warning one"))
	b = AppendStream(b, TypeStdout, 0, []byte("not ours"))
	b = AppendStream(b, TypeStdout, id, bytes.Repeat([]byte("x"), 70000))
	b = AppendEnd(b, TypeStdout, id)
	b = appendHeader(b, TypeEndRequest, id, 8)
	return append(b, 0, 0, 0, 3, RequestComplete, 0, 0, 0)
}

// TestDecoderSplits: every way of cutting the response into two reads
// gives the same stdout, stderr and end.
func TestDecoderSplits(t *testing.T) {
	resp := response(1)
	want := append([]byte("Status: 404\r\nX-A: b\r\n\r\n"), bytes.Repeat([]byte("x"), 70000)...)
	for cut := 0; cut <= len(resp); cut += 1 + cut/64 {
		var d Decoder
		d.Reset(1)
		var out, stderr []byte
		for _, part := range [][]byte{resp[:cut], resp[cut:]} {
			buf := append([]byte(nil), part...)
			n, used, err := d.Decode(buf, &stderr, 5)
			if err != nil || used != len(buf) {
				t.Fatalf("cut %d: used %d of %d, %v", cut, used, len(buf), err)
			}
			out = append(out, buf[:n]...)
		}
		if !bytes.Equal(out, want) || string(stderr) != "warni" || !d.Ended || d.AppStatus != 3 || d.ProtocolStatus != RequestComplete {
			t.Fatalf("cut %d: %d stdout bytes, stderr %q, ended %v %d %d", cut, len(out), stderr, d.Ended, d.AppStatus, d.ProtocolStatus)
		}
	}
}

// TestDecoderAfterEnd: bytes after FCGI_END_REQUEST are not consumed, and
// a header of another version is an error.
func TestDecoderAfterEnd(t *testing.T) {
	var d Decoder
	d.Reset(1)
	b := append(response(1), "garbage"...)
	var stderr []byte
	if _, used, err := d.Decode(b, &stderr, 0); err != nil || used != len(b)-7 || !d.Ended {
		t.Fatalf("used %d of %d, %v", used, len(b), err)
	}
	d.Reset(1)
	if _, _, err := d.Decode([]byte("HTTP/1.1 200 OK\r\n"), &stderr, 0); err != ErrVersion {
		t.Fatalf("err %v, want ErrVersion", err)
	}
}

func TestHead(t *testing.T) {
	for _, c := range []struct {
		head   string
		end    int
		status int
		ok     bool
	}{
		{"Content-Type: text/html\r\n\r\nbody", 27, 200, true},
		{"Status: 404 Not Found\r\n\r\n", 25, 404, true},
		{"status: 201\n\nbody", 13, 201, true},
		{"Location: /x\r\n\r\n", 16, 302, true},
		{"Location: /x\r\nStatus: 301\r\n\r\n", 29, 301, true},
		{"Status: abc\r\n\r\n", 15, 0, false},
		{"Status: 42\r\n\r\n", 14, 0, false},
		{"X: y\r\n", -1, 200, true},
	} {
		if end := HeadEnd([]byte(c.head)); end != c.end {
			t.Errorf("%q: end %d, want %d", c.head, end, c.end)
		}
		if status, ok := Status([]byte(c.head)); status != c.status || ok != c.ok {
			t.Errorf("%q: status %d %v, want %d %v", c.head, status, ok, c.status, c.ok)
		}
	}
}

// TestSplit: the transport's split and the file matcher's, ASCII only:
// no Unicode case-folding of ".php" is one.
func TestSplit(t *testing.T) {
	s, err := NewSplit([]string{".PHP"})
	if err != nil || s[0] != ".php" {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := NewSplit([]string{".ｐhp"}); err != ErrSplitNotASCII {
		t.Fatalf("non-ASCII split: %v", err)
	}
	for _, c := range []struct {
		path string
		pos  int
	}{
		{"/index.php", 10}, {"/index.PHP/a/b", 10}, {"/a.php.txt", 6}, {"/x", -1},
		{"/shell.ｐhp", -1},          // fullwidth p
		{"/shell.\u212ahp", -1},     // Kelvin sign, not a letter of .php, but never folded
		{"/ｐ.php/x", len("/ｐ.php")}, // non-ASCII before the split is fine
	} {
		if pos := s.Pos(c.path); pos != c.pos {
			t.Errorf("Pos(%q) = %d, want %d", c.path, pos, c.pos)
		}
	}
	if pos := Split(nil).Pos("/a.php"); pos != 0 {
		t.Errorf("no split: %d, want 0", pos)
	}
	for _, c := range []struct{ path, before, rem string }{
		{"/index.php/a", "/index.php", "/a"},
		{"/index.PHP/a", "/index.PHP", "/a"},
		{"/index.phpx/a", "/index.phpx/a", ""},
		{"/index.php", "/index.php", ""},
		{"/shell.ｐhp/a", "/shell.ｐhp/a", ""},
	} {
		if b, r := FileSplit(c.path, []string{".php"}); b != c.before || r != c.rem {
			t.Errorf("FileSplit(%q) = %q %q, want %q %q", c.path, b, r, c.before, c.rem)
		}
	}
}

// FuzzSplit: wherever Pos cuts, the bytes before the cut are the
// extension in ASCII, whatever their case, and no earlier position is;
// FileSplit's two parts are the path.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"/index.php/a", "/shell.ｐhp", "/a.PhP", "/\u212a.php", "/.p\xffhp", ""} {
		f.Add(s)
	}
	s, _ := NewSplit([]string{".php", ".phtml"})
	f.Fuzz(func(t *testing.T, path string) {
		pos := s.Pos(path)
		lower := func(b string) string {
			out := []byte(b)
			for i, c := range out {
				out[i] = lowerASCII(c)
			}
			return string(out)
		}
		first := -1
		for _, ext := range s {
			if i := strings.Index(lower(path), ext); i >= 0 {
				first = i + len(ext)
				break
			}
		}
		if pos != first {
			t.Fatalf("Pos(%q) = %d, want %d", path, pos, first)
		}
		if pos >= 0 {
			cut := path[:pos]
			if !strings.HasSuffix(lower(cut), ".php") && !strings.HasSuffix(lower(cut), ".phtml") {
				t.Fatalf("Pos(%q) cut %q", path, cut)
			}
		}
		if b, r := FileSplit(path, s); b+r != path {
			t.Fatalf("FileSplit(%q) = %q + %q", path, b, r)
		}
	})
}

// FuzzDecoder: any bytes, cut into two reads anywhere, decode to the same
// stdout and stderr as in one read, never more stdout than was read, and
// never past FCGI_END_REQUEST.
func FuzzDecoder(f *testing.F) {
	f.Add(response(1), 10)
	f.Add(append(response(1), response(1)...), 100)
	f.Add([]byte{1, 6, 0, 1, 0, 3, 5, 0, 'a', 'b', 'c'}, 4)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if len(b) == 0 {
			return
		}
		cut = int(uint(cut) % uint(len(b)+1))
		decode := func(parts ...[]byte) (out, stderr []byte, used int, ended bool, err error) {
			var d Decoder
			d.Reset(1)
			for _, p := range parts {
				buf := append([]byte(nil), p...)
				n, u, e := d.Decode(buf, &stderr, 1<<20)
				if n > u || u > len(buf) {
					t.Fatalf("stdout %d, used %d of %d", n, u, len(buf))
				}
				out = append(out, buf[:n]...)
				used += u
				if e != nil {
					return out, stderr, used, d.Ended, e
				}
				if d.Ended && u < len(buf) {
					break
				}
			}
			return out, stderr, used, d.Ended, nil
		}
		o1, s1, u1, e1, err1 := decode(b)
		o2, s2, u2, e2, err2 := decode(b[:cut], b[cut:])
		if (err1 == nil) != (err2 == nil) {
			return // an error found in a later part stops a split decode at another place
		}
		if err1 == nil && (!bytes.Equal(o1, o2) || !bytes.Equal(s1, s2) || u1 != u2 || e1 != e2) {
			t.Fatalf("one read: %q %q %d %v; two at %d: %q %q %d %v", o1, s1, u1, e1, cut, o2, s2, u2, e2)
		}
	})
}
