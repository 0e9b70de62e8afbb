package route

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestQueryAsNetURL: the query reader keeps what url.ParseQuery keeps and
// calls malformed what it refuses, on queries built to disagree.
func TestQueryAsNetURL(t *testing.T) {
	for _, raw := range []string{
		"", "k=1", "k=1&k=2", "k=a+b", "k=a%20b", "k", "k=", "=v", "&&k=1&", "k=1;x=2", "x;=1&k=2",
		"k=%zz&k=3", "%zz=1&k=4", "k=a=b", "k=%2C&k=,", "K=1&k=2", "k=\u00e9", "a=1&a=2&k=x&a=3",
	} {
		want, err := url.ParseQuery(raw)
		got := url.Values{}
		ok := eachQueryPair(raw, func(k, v string) bool {
			got[k] = append(got[k], v)
			return true
		})
		if ok != (err == nil) || len(got) != len(want) {
			t.Errorf("%q: %v well formed %v, ParseQuery %v (%v)", raw, got, ok, want, err)
			continue
		}
		for k, vs := range want {
			if strings.Join(got[k], "\x00") != strings.Join(vs, "\x00") {
				t.Errorf("%q: %s = %q, ParseQuery %q", raw, k, got[k], vs)
			}
			v, found := AppendQueryValues(nil, raw, k)
			if !found || string(v) != strings.Join(vs, ",") {
				t.Errorf("%q: AppendQueryValues(%s) = %q, %v", raw, k, v, found)
			}
		}
	}
}

// TestCookieAsNetHTTP: Cookie reads what net/http's Request.Cookie (exact
// names) and Request.Cookies (names folded, as Caddy's placeholder) read.
func TestCookieAsNetHTTP(t *testing.T) {
	for _, lines := range [][]string{
		{"a=1"}, {"a=1; b=2"}, {" a = 1 ;b=2"}, {`a="q"`}, {`a="q`}, {"a=x y"}, {"a=1\\2; a=3"}, {"a"}, {"=1; a=2"},
		{"b=1", "a=2"}, {"A=1; a=2"}, {"a b=1; a=2"}, {"a=;a=2"}, {"a=1;;a=2"}, {"x=1", "A=9"},
	} {
		hr := &http.Request{Header: http.Header{"Cookie": lines}}
		r := &stream.Request{}
		for _, l := range lines {
			r.Header = append(r.Header, stream.Field{Name: "cookie", Value: l})
		}
		for _, name := range []string{"a", "A", "b"} {
			want, wantOK := "", false
			if c, err := hr.Cookie(name); err == nil {
				want, wantOK = c.Value, true
			}
			if got, ok := Cookie(r, name, false); got != want || ok != wantOK {
				t.Errorf("%q: Cookie(%s) = %q %v, Request.Cookie %q %v", lines, name, got, ok, want, wantOK)
			}
			want, wantOK = "", false
			for _, c := range hr.Cookies() {
				if strings.EqualFold(c.Name, name) {
					want, wantOK = c.Value, true
					break
				}
			}
			if got, ok := Cookie(r, name, true); got != want || ok != wantOK {
				t.Errorf("%q: Cookie(%s, fold) = %q %v, Request.Cookies %q %v", lines, name, got, ok, want, wantOK)
			}
		}
	}
}
