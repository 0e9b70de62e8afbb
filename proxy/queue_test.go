package proxy_test

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
)

// TestQueueTimeout: with the upstream's one connection busy, a request
// waits in the pool's queue and gets a 503 once ConnectTimeout has passed
// there, not a moment before; the request holding the connection goes on.
func TestQueueTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, reached := silentOrigin(t)
		const timeout = time.Second // ResponseHeaderTimeout keeps its default minute
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*proxy.Upstream{upstream(t, addr)},
			ConnectTimeout: timeout, Pool: proxy.PoolConfig{MaxConns: 1}})
		clock := e.manualClock()
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		get := func(id uint32) {
			c.headers(id, true, ":method", "GET", ":scheme", "https", ":path", "/", ":authority", "localhost")
		}
		get(1)
		<-reached // stream 1 holds the one connection
		get(3)
		// The server handles frames in order: once the PING is answered,
		// stream 3 waits in the queue and its timer runs.
		if fs := c.sync(); len(fs) > 0 {
			t.Fatalf("frames before the queue timeout: %v", fs)
		}
		clock.Advance(timeout - time.Millisecond)
		// Advance returns after what the due timers wrote was flushed, so
		// a 503 sent already would come before the PING's answer.
		if fs := c.sync(); len(fs) > 0 {
			t.Fatalf("frames a moment before the queue timeout: %v", fs)
		}
		clock.Advance(time.Millisecond)
		if st, _ := c.status(3); st != "503" {
			t.Fatalf("queued request: %s, want 503", st)
		}
		for _, f := range c.sync() {
			if f.Header().StreamID == 1 {
				t.Fatalf("after the queue timeout, a frame for the busy stream: %v", f)
			}
		}
	})
}
