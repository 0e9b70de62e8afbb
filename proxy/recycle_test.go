package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// recycleBody is request n's body: its own bytes, a length of its own, so a
// response delivered to the wrong stream, or cut, shows.
func recycleBody(n int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("<%d>", n)), 1+n*37%700)
}

// TestRecycledExchangesStayApart: exchanges and h2 streams are reused
// after their front end releases them. Streams reset by the client in the
// middle of an origin's response, aborted downloads and responses without
// a body (whose stream ends before the origin's response is parsed to its
// end) are mixed with ordinary requests on one h2 connection and on
// HTTP/1.1; every answer must be its own request's, complete, and the
// connections must carry on.
func TestRecycledExchangesStayApart(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		hold := make(chan struct{})
		var holdOnce sync.Once
		release := func() { holdOnce.Do(func() { close(hold) }) }
		defer release()
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("x-n", strconv.Itoa(n))
			switch r.URL.Path {
			case "/slow": // a head and part of the body, then the rest later
				w.Write(bytes.Repeat([]byte("s"), 4096))
				w.(http.Flusher).Flush()
				select {
				case <-hold:
				case <-r.Context().Done():
					return
				}
				w.Write(bytes.Repeat([]byte("s"), 4096))
			case "/big": // more than the client reads before it cancels
				w.Write(bytes.Repeat(recycleBody(n), 2000))
			case "/nobody":
				w.WriteHeader(204)
			default:
				w.Write(recycleBody(n))
			}
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		var dials atomic.Int32
		h2c := e.h2Client(&dials)

		// cancelAfter starts a request, reads k bytes of its body and
		// cancels it: RST_STREAM(CANCEL) on h2, a closed connection on
		// HTTP/1.1, with the origin's response still in flight.
		cancelAfter := func(cl *http.Client, path string, k int) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url(path), nil)
			res, err := cl.Do(req)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return
			}
			if _, err := io.ReadFull(res.Body, make([]byte, k)); err != nil {
				t.Errorf("%s: reading %d bytes: %v", path, k, err)
			}
			cancel()
			res.Body.Close()
		}
		check := func(cl *http.Client, n int) {
			method, path := "GET", "/plain"
			switch n % 5 {
			case 1:
				path = "/nobody"
			case 3:
				method = "HEAD"
			}
			req, _ := http.NewRequest(method, e.url(path+"?n="+strconv.Itoa(n)), nil)
			res, err := cl.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", n, err)
				return
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Errorf("request %d: body: %v", n, err)
				return
			}
			want, status := recycleBody(n), 200
			switch {
			case path == "/nobody":
				want, status = nil, 204
			case method == "HEAD":
				want = nil
			}
			if res.StatusCode != status || res.Header.Get("x-n") != strconv.Itoa(n) || !bytes.Equal(b, want) {
				t.Errorf("request %d (%s %s): status %d, x-n %q, %d body bytes %.40q, want %d, %d bytes",
					n, method, path, res.StatusCode, res.Header.Get("x-n"), len(b), b, status, len(want))
			}
		}

		for _, cl := range []*http.Client{h2c, e.h1Client()} {
			// Streams reset while their origin holds the response open.
			for i := range 3 {
				cancelAfter(cl, "/slow?n="+strconv.Itoa(1000+i), 1000)
			}
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := w; n < 120; n += 6 {
						if n%17 == 0 {
							cancelAfter(cl, "/big?n="+strconv.Itoa(n), 3000)
							continue
						}
						check(cl, n)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
		}
		release()
		if d := dials.Load(); d != 1 {
			t.Errorf("h2 client dialled %d connections, want 1 (a reset stream must not cost the connection)", d)
		}
		// The loop is still sound: a last request on a fresh h2 connection.
		check(e.h2Client(nil), 7)
	})
}
