package proxy_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestH2COriginRecycledStream: the struct of a stream to an origin serves
// the next request once the stream is over (the loop's free list), and
// nothing of the old stream reaches it there. Each case ends a stream,
// then the next request's stream opens (on the struct just freed: one
// stream at a time), and the origin, before answering it, sends late
// frames for the old one: DATA, WINDOW_UPDATE, a HEADERS that would end
// it, RST_STREAM. The cases: the origin reset the stream before its head;
// pollproxy reset it (the client's cancel) in the middle of its body; and
// pollproxy reset it while its head was half sent, so the CONTINUATION
// that completes that head arrives after the next stream opened, and must
// be decoded for the HPACK table alone (the next head uses an entry it
// added). The next answer must be exactly its own.
func TestH2COriginRecycledStream(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var mu sync.Mutex
		var old uint32 // the stream ended last
		var rest []byte
		sent := make(chan struct{}, 1) // /hang's and /split's first bytes went out
		o := newFrameOrigin(t, nil, func(c *frameConn, id uint32, path string) {
			mu.Lock()
			defer mu.Unlock()
			switch path {
			case "/reset":
				old = id
				c.fr.WriteRSTStream(id, http2.ErrCodeInternal)
			case "/hang":
				old = id
				c.head(id, false, ":status", "200", "x-old", "hang")
				c.fr.WriteData(id, false, []byte("old"))
				sent <- struct{}{}
			case "/split":
				old = id
				c.hb.Reset()
				for _, f := range [][2]string{{":status", "200"}, {"x-old", "split"}, {"x-shared", "split-entry"}, {"content-type", "text/old"}} {
					c.en.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
				}
				block := c.hb.Bytes()
				k := len(block) / 2 // inside a field: the decoder keeps the partial one
				rest = append([]byte(nil), block[k:]...)
				c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:k]})
				sent <- struct{}{}
			case "/next":
				if rest != nil {
					c.fr.WriteContinuation(old, true, rest)
					rest = nil
				}
				c.fr.WriteData(old, false, []byte("stale"))
				c.fr.WriteWindowUpdate(old, 1000)
				c.head(old, true, ":status", "200", "x-old", "late")
				c.fr.WriteRSTStream(old, http2.ErrCodeInternal)
				// x-shared's value was added to the table by /split's
				// block, if there was one: here it is an index.
				c.head(id, false, ":status", "200", "x-shared", "split-entry", "content-type", "text/plain")
				c.fr.WriteData(id, true, []byte("fresh"))
			}
		})
		e, _ := startH2C(t, backend, o.addr)
		cl := e.h2Client(nil)
		// canceled waits for pollproxy's reset of the stream it was told
		// to cancel: the struct is free by then.
		canceled := func(name string) {
			t.Helper()
			for {
				select {
				case code := <-o.rsts:
					if code == http2.ErrCodeCancel {
						return
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s: the client's reset never reached the origin", name)
				}
			}
		}
		next := func(name string) {
			t.Helper()
			res, err := cl.Get(e.url("/next"))
			if err != nil {
				t.Fatalf("after %s: %v", name, err)
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != 200 || string(b) != "fresh" || res.Header.Get("X-Old") != "" ||
				res.Header.Get("X-Shared") != "split-entry" || res.Header.Get("Content-Type") != "text/plain" {
				t.Fatalf("after %s: %d %q %v, head %v: want the next request's own answer", name, res.StatusCode, b, err, res.Header)
			}
		}
		for round := 0; round < 3; round++ {
			// The origin's reset, before the head.
			if res, err := cl.Get(e.url("/reset")); err == nil {
				res.Body.Close()
				t.Fatalf("/reset: %d, want the origin's reset", res.StatusCode)
			} else if code, ok := streamCode(err); !ok || code != http2.ErrCodeInternal {
				t.Fatalf("/reset: %v, want a reset with INTERNAL_ERROR", err)
			}
			next("/reset")

			// pollproxy's reset in the middle of the body.
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url("/hang"), nil)
			res, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			<-sent
			io.ReadFull(res.Body, make([]byte, 3))
			cancel()
			res.Body.Close()
			canceled("/hang")
			next("/hang")

			// pollproxy's reset with the head half sent: no response yet.
			ctx, cancel = context.WithCancel(context.Background())
			go func() {
				<-sent
				cancel()
			}()
			req, _ = http.NewRequestWithContext(ctx, "GET", e.url("/split"), nil)
			if res, err := cl.Do(req); err == nil {
				res.Body.Close()
				t.Fatalf("/split: %d, want the client's cancel", res.StatusCode)
			}
			canceled("/split")
			next("/split")
		}
	})
}
