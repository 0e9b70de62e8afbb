package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestCopyResponseHeadersFraming: copy_response_headers copies the
// origin's fields but not its Content-Length, which described the
// origin's body: the answer the handle_response routes give keeps its
// own. FuzzSites found the two lengths in one head: HTTP/1.1 closed the
// connection, h2 sent both.
func TestCopyResponseHeadersFraming(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, http.HandlerFunc(fuzzOrigin))
		addr := startPlain(t, backend, fmt.Sprintf(`	reverse_proxy %s {
		@failed status 5xx
		handle_response @failed {
			copy_response_headers {
				exclude Content-Type
			}
			respond /s/503/answered "answered"
		}
	}`, origin))
		for _, path := range []string{"/s/503", "/s/503/answered"} {
			h1, err := dialH1(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// The strict readers refuse two lengths, or a length the
			// body does not have.
			if a, err := h1.roundTrip(fuzzRequest{method: "GET", target: path}, addr); err != nil || a.status != 200 {
				t.Errorf("HTTP/1.1 %s: %d %v", path, a.status, err)
			}
			h1.Close()
			h2, err := dialH2(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if a, err := h2.roundTrip(fuzzRequest{h2: true, method: "GET", target: path}, addr); err != nil || a.status != 200 {
				t.Errorf("h2 %s: %d %v", path, a.status, err)
			}
			h2.Close()
		}
	})
}
