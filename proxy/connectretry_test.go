package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestUploadMovesWhole: an upload whose first upstream refuses the
// connection moves to the other one with all of its body, over h2 and
// HTTP/1.1, with a length and without. The body arrives while the first
// connect is still under way, and was once lost with that connection: the
// origin then read a short chunked body as complete, or waited forever for
// the rest of one with a length (found by scripts/chaos).
func TestUploadMovesWhole(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		good := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%x %d", h.Sum(nil), n)
		})
		e := startProxy(t, backend, 1, proxy.Config{
			Upstreams: []*upstream.Upstream{upstreamAt(t, closedAddr(t)), upstreamAt(t, good.addr)},
			Policy:    proxy.First,
		})
		const size = 256 << 10
		want := fmt.Sprintf("%s %d", hex.EncodeToString(patternSum(size)), size)
		for _, proto := range []string{"h2", "http/1.1"} {
			cl := e.h1Client()
			if proto == "h2" {
				cl = e.h2Client(nil)
			}
			for _, withLength := range []bool{true, false} {
				req, _ := http.NewRequest("POST", e.url("/up"), io.NopCloser(&pattern{n: size}))
				if withLength {
					req.ContentLength = size
				}
				res, err := cl.Do(req)
				if err != nil {
					t.Fatalf("%s, length %v: %v", proto, withLength, err)
				}
				got, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || !bytes.Equal(got, []byte(want)) {
					t.Fatalf("%s, length %v: %d %q, want the origin to read the whole body: %q", proto, withLength, res.StatusCode, got, want)
				}
			}
		}
	})
}
