package field

import (
	"slices"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

func TestSets(t *testing.T) {
	tests := []struct {
		set       Rule
		name      string
		in, notIn []string
	}{
		{ConnectionSpecific, "ConnectionSpecific",
			[]string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"},
			[]string{"te", "host", "content-length", "trailer", "Connection", "connection ", "x-connection", ""}},
		{HopByHop, "HopByHop",
			[]string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"},
			[]string{"host", "content-length", "trailer", "expect", "TE", "trailers", ""}},
		{FrontEndOwned, "FrontEndOwned",
			[]string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host", "expect"},
			[]string{"content-length", "trailer", "x-forwarded-for", "cookie", "Host"}},
		{NotToOrigin, "NotToOrigin",
			[]string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
				"host", "x-forwarded-proto", "x-forwarded-host"},
			[]string{"x-forwarded-for", "via", "expect", "content-length", "trailer", "forwarded", "cookie"}},
		{AppendedByProxy, "AppendedByProxy",
			[]string{"x-forwarded-for", "via"},
			[]string{"x-forwarded-proto", "x-forwarded-host", "forwarded", "host"}},
		{NotToClient, "NotToClient",
			[]string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
				"content-length", "trailer"},
			[]string{"host", "expect", "set-cookie", "content-type", "via"}},
		{NotInTrailer, "NotInTrailer",
			[]string{"content-length", "transfer-encoding", "host", "connection", "keep-alive",
				"proxy-connection", "te", "upgrade", "trailer", "expect", "content-encoding",
				"content-type", "content-range", "authorization", "proxy-authorization",
				"set-cookie", "cookie", "cache-control", "range", "max-forwards",
				"transfer_encoding", "content_length"},
			[]string{"grpc-status", "grpc-message", "server-timing", "etag", "x-forwarded-for", "Content-Length"}},
		{Framing, "Framing",
			[]string{"content-length", "transfer-encoding"},
			[]string{"content_length", "transfer_encoding", "trailer", "te", "content-type"}},
		{FramingLookalike, "FramingLookalike",
			[]string{"content_length", "transfer_encoding"},
			[]string{"content-length", "transfer-encoding", "content.length"}},
	}
	for _, tt := range tests {
		for _, n := range tt.in {
			if !Lookup(n).Has(tt.set) {
				t.Errorf("%s: %q missing", tt.name, n)
			}
		}
		for _, n := range tt.notIn {
			if Lookup(n).Has(tt.set) {
				t.Errorf("%s: %q present", tt.name, n)
			}
		}
	}
}

// TestSetRelations pins how the sets nest, so a new row in Lookup cannot
// put a field in one set and silently out of the sets that contain it.
func TestSetRelations(t *testing.T) {
	names := []string{"connection", "keep-alive", "proxy-connection", "transfer-encoding",
		"upgrade", "te", "host", "expect", "x-forwarded-proto", "x-forwarded-host",
		"x-forwarded-for", "via", "content-length", "trailer", "content-type", "cookie",
		"content_length", "transfer_encoding", "accept", "x-anything"}
	implies := []struct{ from, to Rule }{
		{ConnectionSpecific, HopByHop},
		{HopByHop, FrontEndOwned},
		{HopByHop, NotToOrigin},
		{HopByHop, NotToClient},
		{HopByHop, NotInTrailer},
		{Framing, NotToClient},
		{Framing, NotInTrailer},
		{FramingLookalike, NotInTrailer},
	}
	for _, n := range names {
		r := Lookup(n)
		for _, im := range implies {
			if r.Has(im.from) && !r.Has(im.to) {
				t.Errorf("%q: in %b but not %b", n, im.from, im.to)
			}
		}
		if r.Has(AppendedByProxy) && r.Has(NotToOrigin) {
			t.Errorf("%q: appended and dropped", n)
		}
	}
	if Lookup("accept") != 0 || Lookup("") != 0 {
		t.Error("ordinary field has rules")
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		s                   string
		method, name, lower bool
	}{
		{"GET", true, true, false},
		{"get", true, true, true},
		{"x-custom_1.2", true, true, true},
		{"!#$%&'*+-.^_`|~", true, true, true},
		{"", false, false, false},
		{"a b", false, false, false},
		{"a:b", false, false, false},
		{"a\x00", false, false, false},
		{"a\r", false, false, false},
		{"a\n", false, false, false},
		{"a\x7f", false, false, false},
		{"a\t", false, false, false},
		{"caf\xe9", false, false, false},
		{"(x)", false, false, false},
		{`"x"`, false, false, false},
		{"a/b", false, false, false},
		{"a=b", false, false, false},
		{"Content-Length", true, true, false},
	}
	for _, tt := range tests {
		if got := ValidMethod(tt.s); got != tt.method {
			t.Errorf("ValidMethod(%q) = %v", tt.s, got)
		}
		if got := ValidName(tt.s); got != tt.name {
			t.Errorf("ValidName(%q) = %v", tt.s, got)
		}
		if got := ValidLowerName(tt.s); got != tt.lower {
			t.Errorf("ValidLowerName(%q) = %v", tt.s, got)
		}
	}
	for c := 0; c < 256; c++ {
		want := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
		if IsTchar(byte(c)) != want {
			t.Errorf("IsTchar(%#x) = %v", c, !want)
		}
	}
}

func TestUpgradeToken(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"websocket", true},
		{"WebSocket", true},
		{"foo/1.1", true},
		{"h2c", false},
		{"H2C", false},
		{"h2C/1", false},
		{"h2c2", true},
		{"", false},
		{"/1", false},
		{"foo/", false},
		{"websocket, h2c", false},
		{"websocket,foo", false},
		{"web socket", false},
		{"a/b/c", false},
	}
	for _, tt := range tests {
		if got := UpgradeToken(tt.s); got != tt.ok {
			t.Errorf("UpgradeToken(%q) = %v", tt.s, got)
		}
	}
}

func TestValidValue(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"", true},
		{"v", true},
		{"a b\tc", true},
		{"gzip, deflate", true},
		{"caf\xe9 \x80\xff", true}, // obs-text passes as opaque bytes
		{"a\rb", false},
		{"a\nb", false},
		{"a\r\nx-injected: 1", false},
		{"a\x00b", false},
		{"a\x7fb", false},
		{"a\x01b", false},
		{"a\x1fb", false},
		{" v", false},
		{"v ", false},
		{"\tv", false},
		{"v\t", false},
		{" ", false},
		{"\r", false},
		{"\n", false},
	}
	for _, tt := range tests {
		if got := ValidValue(tt.s); got != tt.ok {
			t.Errorf("ValidValue(%q) = %v", tt.s, got)
		}
	}
	for _, c := range []byte{0, '\r', '\n', 0x7f, 0x1f} {
		if IsValueByte(c) {
			t.Errorf("IsValueByte(%#x)", c)
		}
	}
	for _, c := range []byte{'\t', ' ', 'a', '~', 0x80, 0xff} {
		if !IsValueByte(c) {
			t.Errorf("!IsValueByte(%#x)", c)
		}
	}
}

func TestAuthorityAndPath(t *testing.T) {
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"", true},
		{"example.com", true},
		{"example.com:8443", true},
		{"[::1]:443", true},
		{"xn--bcher-kva.example", true},
		{"user@example.com", false},
		{"example.com/", false},
		{"a b", false},
		{"a\r", false},
		{"a\x00", false},
		{"caf\xe9", false},
	} {
		if got := ValidAuthority(tt.s); got != tt.ok {
			t.Errorf("ValidAuthority(%q) = %v", tt.s, got)
		}
	}
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"", true},
		{"/", true},
		{"/a/b?c=d&e=%20", true},
		{"*", true},
		{"/a#frag", false},
		{"/a b", false},
		{"/a\tb", false},
		{"/a\r", false},
		{"/a\x00", false},
		{"/a\x7f", false},
		{"/caf\xe9", false},
	} {
		if got := ValidPath(tt.s); got != tt.ok {
			t.Errorf("ValidPath(%q) = %v", tt.s, got)
		}
	}
}

func TestParseContentLength(t *testing.T) {
	tests := []struct {
		s  string
		n  int64
		ok bool
	}{
		{"0", 0, true},
		{"5", 5, true},
		{"007", 7, true},
		{"123456789012345678", 123456789012345678, true}, // 18 digits
		{"999999999999999999", 999999999999999999, true},
		{"1234567890123456789", 0, false}, // 19 digits
		{"9223372036854775807", 0, false}, // MaxInt64 has 19
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"+5", 0, false},
		{"-5", 0, false},
		{"-0", 0, false},
		{" 5", 0, false},
		{"5 ", 0, false},
		{"5\t", 0, false},
		{"5,5", 0, false},
		{"5, 5", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"5\r", 0, false},
		{"5\n", 0, false},
		{"5\x00", 0, false},
		{"٣", 0, false}, // a non-ASCII digit
	}
	for _, tt := range tests {
		n, ok := ParseContentLength(tt.s)
		if ok != tt.ok || ok && n != tt.n {
			t.Errorf("ParseContentLength(%q) = %d, %v", tt.s, n, ok)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		_ = Lookup("transfer-encoding").Has(HopByHop)
		_ = ValidName("x-forwarded-for")
		_ = ValidValue("gzip, deflate")
		_, _ = ParseContentLength("1024")
		_ = UpgradeToken("websocket")
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func BenchmarkLookup(b *testing.B) {
	names := []string{"user-agent", "accept", "accept-encoding", "cookie", "x-forwarded-for", "connection", "content-length"}
	for b.Loop() {
		for _, n := range names {
			_ = Lookup(n).Has(NotToOrigin)
		}
	}
}

// TestDropCGIAliases: names with '_' or '.' go, the rest stay in order.
func TestDropCGIAliases(t *testing.T) {
	fs := []stream.Field{{Name: "a", Value: "1"}, {Name: "x_forwarded_for", Value: "2"}, {Name: "b", Value: "3"}, {Name: "x.y", Value: "4"}, {Name: "c-d", Value: "5"}}
	got := DropCGIAliases(fs)
	want := []stream.Field{{Name: "a", Value: "1"}, {Name: "b", Value: "3"}, {Name: "c-d", Value: "5"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	clean := []stream.Field{{Name: "a"}, {Name: "b-c"}}
	if got := DropCGIAliases(clean); &got[0] != &clean[0] || len(got) != 2 {
		t.Errorf("fields without aliases changed: %v", got)
	}
}

func TestHasToken(t *testing.T) {
	fs := []stream.Field{{Name: "vary", Value: "Origin"}, {Name: "vary", Value: " accept-encoding , Cookie"}, {Name: "te", Value: "gzip"}}
	for _, x := range []struct {
		name, token string
		want        bool
	}{
		{"vary", "Accept-Encoding", true},
		{"vary", "cookie", true},
		{"vary", "accept", false},
		{"te", "trailers", false},
		{"cache-control", "no-transform", false},
	} {
		if got := HasToken(fs, x.name, x.token); got != x.want {
			t.Errorf("HasToken(%s, %s) = %v, want %v", x.name, x.token, got, x.want)
		}
	}
}
