package route

import (
	"fmt"
	"net/netip"
	"regexp"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

func TestMatchers(t *testing.T) {
	req := &stream.Request{Method: "GET", Scheme: "https", Authority: "API.Example.com:8443", Path: "/Api/V1/users%2Fx?debug=1&tag=a+b",
		Header:     []stream.Field{{Name: "x-env", Value: "staging-2"}, {Name: "accept", Value: "text/html"}},
		RemoteAddr: netip.MustParseAddrPort("10.1.2.3:5555")}
	ranges, _ := ParseRanges([]string{"10.0.0.0/8"})
	private, _ := ParseRanges([]string{"private_ranges"})
	for _, tc := range []struct {
		name string
		m    Matcher
		want bool
	}{
		{"path prefix", MustPath("/api/*"), true},
		{"path exact folded", MustPath("/api/v1/users/x"), true},
		{"path suffix", MustPath("*/x"), true},
		{"path contains", MustPath("*v1*"), true},
		{"path glob", MustPath("/api/*/users/*"), true},
		{"path miss", MustPath("/web/*"), false},
		{"path_regexp", PathRegexp{Re: regexp.MustCompile(`^/Api/V[0-9]+/`)}, true},
		{"host wildcard", NewHost([]string{"*.example.com"}), true},
		{"host exact", NewHost([]string{"api.example.com"}), true},
		{"host miss", NewHost([]string{"example.com"}), false},
		{"method", Method{"POST", "GET"}, true},
		{"method miss", Method{"POST"}, false},
		{"header prefix", Header{{Name: "x-env", Values: []string{"staging*"}}}, true},
		{"header present", Header{{Name: "accept"}}, true},
		{"header absent", Header{{Name: "cookie", Absent: true}}, true},
		{"header absent but there", Header{{Name: "accept", Absent: true}}, false},
		{"header value miss", Header{{Name: "x-env", Values: []string{"prod"}}}, false},
		{"header_regexp", HeaderRegexp{Name: "x-env", Re: regexp.MustCompile(`-\d$`)}, true},
		{"query", Query{{Key: "debug", Values: []string{"1"}}, {Key: "tag", Values: []string{"a b"}}}, true},
		{"query any", Query{{Key: "tag", Values: []string{"*"}}}, true},
		{"query miss", Query{{Key: "debug", Values: []string{"0"}}}, false},
		{"remote_ip", RemoteIP(ranges), true},
		{"private_ranges", RemoteIP(private), true},
		{"client_ip", ClientIP(ranges), true},
		{"not", Not{All{Method{"GET"}}}, false},
		{"all", All{Method{"GET"}, MustPath("/api/*")}, true},
		{"protocol", Protocol("https"), true},
	} {
		if got := tc.m.Match(NewCtx(req, nil)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// client_ip reads the derivation it is given.
	proxied := func(*stream.Request) netip.Addr { return netip.MustParseAddr("203.0.113.9") }
	if ClientIP(ranges).Match(NewCtx(req, proxied)) {
		t.Error("client_ip matched the peer, not the client the derivation reported")
	}
}

func TestHeaderOps(t *testing.T) {
	fs := []stream.Field{{Name: "server", Value: "nginx"}, {Name: "x-debug-a", Value: "1"}, {Name: "x-debug-b", Value: "2"},
		{Name: "location", Value: "http://internal:8080/x"}, {Name: "x-keep", Value: "k"}}
	var ops []HeaderOp
	for _, args := range [][]string{{"-X-Debug-*"}, {"Server", "pollproxy"}, {"+Vary", "Origin"}, {"?X-Keep", "default"}, {"?X-New", "n"},
		{"Location", `^http://internal:8080(.*)$`, "https://example.com$1"}} {
		op, err := ParseHeaderOp(args, true)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	got := fmt.Sprint(ApplyHeaderOps(fs, ops, nil))
	want := "[{location https://example.com/x} {x-keep k} {vary Origin} {server pollproxy} {x-new n}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	all, _ := ParseHeaderOp([]string{"-*"}, true)
	if got := ApplyHeaderOps([]stream.Field{{Name: "a", Value: "1"}}, []HeaderOp{all}, nil); len(got) != 0 {
		t.Errorf("-* left %v", got)
	}
}

func TestExpression(t *testing.T) {
	req := &stream.Request{Method: "POST", Scheme: "https", Authority: "api.example.com", Path: "/v1/items?debug=1",
		Header: []stream.Field{{Name: "x-env", Value: "staging"}}, RemoteAddr: netip.MustParseAddrPort("10.0.0.7:1000")}
	for src, want := range map[string]bool{
		`{method} == "POST"`:                                    true,
		`{path}.startsWith("/v1/") && {query} != ""`:            true,
		`path('/v1/*') && method('GET', 'POST')`:                true,
		`host('*.example.com') && !path('/admin*')`:             true,
		`header({'X-Env': 'staging'})`:                          true,
		`query({'debug': '0'})`:                                 false,
		`remote_ip('10.0.0.0/8') && protocol('https')`:          true,
		`{header.X-Env} == "prod" || path_regexp('^/v[0-9]+/')`: true,
		`method('GET')`:                                         false,
	} {
		m, err := CompileExpression(src, "m")
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := m.Match(NewCtx(req, nil)); got != want {
			t.Errorf("%s: %v, want %v", src, got, want)
		}
	}
	for _, src := range []string{`{method} ==`, `{method}`, `{http.nope} == "x"`, `colour('red')`} {
		if _, err := CompileExpression(src, "m"); err == nil {
			t.Errorf("%s compiled", src)
		}
	}
}
