package status

import (
	"net/http"
	"testing"
)

// TestTextIsCaddys: every code from 0 to 999 has the phrase Go's
// net/http gives it, which is what Caddy's {err.status_text} holds and
// what a Caddy status line carries, "" where it has none.
func TestTextIsCaddys(t *testing.T) {
	for code := -1; code < 1000; code++ {
		if got, want := Text(code), http.StatusText(code); got != want {
			t.Errorf("Text(%d) = %q, want %q", code, got, want)
		}
	}
}
