package server_test

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/looptest"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestIdleConnectionsReleaseAndResume: a connection that stays quiet across
// the idle sweeps gives back its buffers (the session's, the staging
// buffer, the front end's) and then serves on, on the same connection:
// small and large responses and an upload, over h2 and HTTP/1.1. The
// sweeps run when the test moves the loop's clock on.
func TestIdleConnectionsReleaseAndResume(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		clock := looptest.NewClock(e.group.Loops()...)
		// sweeps runs the loop's idle sweep (one a second) twice: the
		// first clears the activity mark, the second releases.
		sweeps := func() {
			clock.Advance(time.Second)
			clock.Advance(time.Second)
		}
		for _, proto := range []string{"h2", "http/1.1"} {
			var dials atomic.Int32
			cl := e.h2Client(&dials, nil)
			if proto == "http/1.1" {
				cl = e.h1Client(&dials)
			}
			exchange := func(round int) {
				_, b, res := servertest.Get(t, cl, e.url("/hello"))
				if res.StatusCode != 200 || b != string(smallBody) || res.TLS.NegotiatedProtocol != proto {
					t.Fatalf("%s round %d: GET /hello: %d %s %q", proto, round, res.StatusCode, res.Proto, b)
				}
				_, b, res = servertest.Get(t, cl, e.url("/big"))
				if res.StatusCode != 200 || len(b) != bigSize {
					t.Fatalf("%s round %d: GET /big: %d, %d bytes", proto, round, res.StatusCode, len(b))
				}
				body := strings.Repeat("idle sweep ", 10000)
				res, err := cl.Post(e.url("/echo"), "text/plain", strings.NewReader(body))
				if err != nil {
					t.Fatalf("%s round %d: POST /echo: %v", proto, round, err)
				}
				got, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != 200 || string(got) != body {
					t.Fatalf("%s round %d: POST /echo: %d, %d bytes, %v", proto, round, res.StatusCode, len(got), err)
				}
			}
			exchange(0)
			sweeps()
			exchange(1)
			sweeps()
			exchange(2)
			if n := dials.Load(); n != 1 {
				t.Fatalf("%s: %d connections, want the one kept alive across the sweeps", proto, n)
			}
		}
	})
}
