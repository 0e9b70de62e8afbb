package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestWebSocketOriginSpeaksFirst: an origin that writes right behind its
// 101 (the bytes may arrive with the head) reaches the client at once.
func TestWebSocketOriginSpeaksFirst(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, _ := browserOrigin(t)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		for i := 0; i < 50; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c := wsDial(t, ctx, e, e.h1Client(), "/ws")
			if _, m, err := c.Read(ctx); err != nil || string(m) != "via:1.1 pollproxy" {
				t.Fatalf("dial %d: first message %q %v", i, m, err)
			}
			c.CloseNow()
			cancel()
		}
	})
}
