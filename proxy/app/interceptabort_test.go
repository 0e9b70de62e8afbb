package app

import (
	"errors"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestInterceptAbort: a request an intercept watches and abort answers
// is reset (h2) or has its connection closed (HTTP/1.1), as one no
// intercept watches is. FuzzSites found that the intercept swallowed the
// reset: the client waited forever.
func TestInterceptAbort(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := startPlain(t, backend, `	intercept /watched {
		@ok status 2xx
		replace_status @ok 202
	}
	abort /watched
	respond "fine"`)

		h2, err := dialH2(addr, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer h2.Close()
		if _, err := h2.roundTrip(fuzzRequest{h2: true, method: "GET", target: "/watched"}, addr); !errors.Is(err, errReset) {
			t.Errorf("h2 /watched: %v, want the stream reset", err)
		}
		if a, err := h2.roundTrip(fuzzRequest{h2: true, method: "GET", target: "/"}, addr); err != nil || a.status != 200 {
			t.Errorf("h2 / after the reset, on the same connection: %d %v", a.status, err)
		}

		h1, err := dialH1(addr, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer h1.Close()
		if _, err := h1.roundTrip(fuzzRequest{method: "GET", target: "/watched"}, addr); !errors.Is(err, errNoAnswer) {
			t.Errorf("HTTP/1.1 /watched: %v, want the connection closed", err)
		}
	})
}
