package upstream_test

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestParseStatus: a status or a status class, as Caddy's health options
// write them.
func TestParseStatus(t *testing.T) {
	for s, want := range map[string]int{"200": 200, "599": 599, "100": 100, "5xx": 5, "2xx": 2} {
		if got, ok := upstream.ParseStatus(s); !ok || got != want {
			t.Errorf("ParseStatus(%q) = %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "20", "2000", "600", "099", "xx", "6xx", "0xx", "2x0", "abc"} {
		if got, ok := upstream.ParseStatus(s); ok {
			t.Errorf("ParseStatus(%q) = %d, want an error", s, got)
		}
	}
}
