package proxy_test

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// openCounter counts an origin's connections accepted and not yet closed,
// as the origin sees them.
func openCounter(open *atomic.Int64) func(*http.Server) {
	return func(srv *http.Server) {
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		}
		srv.ErrorLog = discardLog
	}
}

// TestServerCloseClosesIdleOriginConns: closing the server closes the
// proxy handlers' idle pooled origin connections, HTTP/1.1 and h2c, while
// the loops still run; the origins see them end and no descriptor stays
// registered with the loops. A loop closes none of its descriptors when
// it stops, so they used to stay open until the process exited.
func TestServerCloseClosesIdleOriginConns(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		name := "h1"
		if h2c {
			name = "h2c"
		}
		t.Run(name, func(t *testing.T) {
			polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
				var open atomic.Int64
				edit := []func(*http.Server){openCounter(&open)}
				if h2c {
					edit = append(edit, func(s *http.Server) {
						s.Protocols = new(http.Protocols)
						s.Protocols.SetUnencryptedHTTP2(true)
					})
				}
				up := upstreamAt(t, servertest.Origin(t, servertest.Says("ok"), edit...))
				e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{up}, H2C: h2c,
					Pool: proxy.PoolConfig{IdleTimeout: time.Hour}})
				fill(t, e)
				if open.Load() == 0 || up.OpenConns.Load() == 0 {
					t.Fatalf("%d connections open at the origin, %d in the pools: nothing to close", open.Load(), up.OpenConns.Load())
				}
				e.srv.Close()
				var descs int64
				for _, s := range e.group.Stats() {
					descs += s.Descriptors
				}
				if descs != 0 || up.OpenConns.Load() != 0 {
					t.Errorf("after Close: %d descriptors registered with the loops, %d origin connections open in the pools", descs, up.OpenConns.Load())
				}
				servertest.Eventually(t, 10*time.Second, "the origin seeing every connection closed", func() bool { return open.Load() == 0 })
			})
		})
	}
}

// fill sends concurrent requests over both front ends, so that every
// loop's pool keeps idle connections.
func fill(t *testing.T, e *proxyEnv) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, c := range []*http.Client{e.h1Client(), e.h2Client(nil)} {
		for range 8 {
			wg.Go(func() {
				code, body, err := servertest.Fetch(c, e.url("/x"))
				if err != nil || code != 200 || body != "ok" {
					errs <- fmt.Errorf("%d %q %v, want 200 \"ok\"", code, body, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
