package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestRespondInformational: respond with a 1xx status sends it as an
// interim head and then a 200 with the body, as Caddy does, over
// HTTP/2 and HTTP/1.1. FuzzSites found that it answered nothing at all:
// the request waited forever.
func TestRespondInformational(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, `
	respond /early 103
	respond /hint "hinted" 103
	respond /continue 100
`)
		for proto, c := range cls {
			for _, x := range []struct {
				path, body string
				interim    int // 0: none the client must see
			}{
				{"/early", "", 103},
				{"/hint", "hinted", 103},
				// No 100 Continue for a request that expects none.
				{"/continue", "", 0},
			} {
				var got []int
				trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
					got = append(got, code)
					return nil
				}}
				ctx := httptrace.WithClientTrace(context.Background(), trace)
				req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("https://localhost:%d%s", port, x.path), nil)
				res, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", proto, x.path, err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || string(b) != x.body {
					t.Errorf("%s %s: %d %q, want 200 %q", proto, x.path, res.StatusCode, b, x.body)
				}
				if x.interim != 0 && !slices.Equal(got, []int{x.interim}) {
					t.Errorf("%s %s: interim answers %v, want %d", proto, x.path, got, x.interim)
				}
			}
		}
	})
}
