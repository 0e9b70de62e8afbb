package proxy_test

import (
	"bufio"
	stdtls "crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// originKeepAlive is how long the origins below keep an idle connection.
const originKeepAlive = time.Second

// nodeOrigin runs a Node.js HTTP server with keepAliveTimeout =
// originKeepAlive: it answers with "Keep-Alive: timeout=1" and closes a
// connection idle that long, the origin behind most keep-alive 502s.
func nodeOrigin(t *testing.T) string {
	t.Helper()
	node := testenv.Tool(t, "node", "nodejs")
	script := filepath.Join(t.TempDir(), "origin.js")
	os.WriteFile(script, []byte(`
const http = require('http');
const s = http.createServer((req, res) => { res.end('ok'); });
s.keepAliveTimeout = `+strconv.Itoa(int(originKeepAlive/time.Millisecond))+`;
s.listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port));
`), 0o600)
	cmd := exec.Command(node, script)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	return "127.0.0.1:" + strings.TrimSpace(strings.TrimPrefix(line, "listening "))
}

// goIdleOrigin is a Go origin that closes idle connections after
// originKeepAlive and announces nothing: pollproxy has to learn it.
func goIdleOrigin(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{IdleTimeout: originKeepAlive, ErrorLog: discardLog,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// goIdleTLSOrigin is goIdleOrigin over TLS: its idle close is a
// close_notify, then the socket's. It returns the transport that trusts
// it.
func goIdleTLSOrigin(t *testing.T) (string, *upstream.TLS) {
	ca := newTestCA(t, "origin CA")
	o := startTLSOriginWith(t, &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}},
		func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") },
		func(s *http.Server) { s.IdleTimeout = originKeepAlive }) // before it serves: the race detector watches
	tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
	return o.addr, tr
}

// TestKeepAliveRaceAvoided: pollproxy's pool is told to keep idle
// connections 30 s, behind origins that close them after 1 s. It closes
// them first — below the Node origin's announced Keep-Alive timeout, and
// below the Go origin's once it has seen that origin close one (over TLS
// too, where the close is a close_notify read on an idle connection) — so
// bursts of requests at every gap around the origin's timeout get no 502
// and need no retry. It runs on real time, sleeps included: what it tests is the
// race between the proxy's idle close and the origin's own timer, which
// no test clock moves (TestPoolIdleTimeout tests the proxy's side alone).
// Each case has its own origin and proxy and mostly sleeps, so the cases
// run side by side: the backends as parallel subtests, and a backend's
// three cases at once from goroutines of their own, beyond -parallel's
// default of one per CPU, which sleeping cases do not need. -short tries
// two gaps, just either side of the origin's timer, rather than six.
func TestKeepAliveRaceAvoided(t *testing.T) {
	gaps := []time.Duration{700, 800, 950, 1000, 1050, 1200}
	if testing.Short() {
		gaps = []time.Duration{950, 1050}
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Parallel()
		plain := func(origin func(*testing.T) string) func(*testing.T) (string, *upstream.TLS) {
			return func(t *testing.T) (string, *upstream.TLS) { return origin(t), nil }
		}
		var cases sync.WaitGroup
		defer cases.Wait()
		for _, c := range []struct {
			name   string
			origin func(*testing.T) (string, *upstream.TLS)
			learn  bool
		}{{"node", plain(nodeOrigin), false}, {"go", plain(goIdleOrigin), true}, {"go tls", goIdleTLSOrigin, true}} {
			cases.Go(func() {
				t.Run(c.name, func(t *testing.T) {
					addr, tr := c.origin(t)
					up := upstreamAt(t, addr)
					e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, TLS: tr,
						Pool: proxy.PoolConfig{IdleTimeout: 30 * time.Second}})
					cl := e.h2Client(nil)
					burst := func() {
						t.Helper()
						var wg sync.WaitGroup
						for range 16 {
							wg.Add(1)
							go func() {
								defer wg.Done()
								res, err := cl.Get("https://localhost/")
								if err != nil {
									t.Error(err)
									return
								}
								b, _ := io.ReadAll(res.Body)
								res.Body.Close()
								if res.StatusCode != 200 || string(b) != "ok" {
									t.Errorf("%d %q", res.StatusCode, b)
								}
							}()
						}
						wg.Wait()
					}
					burst()
					if c.learn {
						// The origin closes the idle connections; pollproxy learns.
						// Real time: the origin's own idle timer must run out.
						time.Sleep(originKeepAlive + originKeepAlive/2)
						if d := up.IdleCap(); d <= 0 || d >= originKeepAlive {
							t.Fatalf("learned idle cap %v, want under %v", d, originKeepAlive)
						}
						burst()
					}
					// Past our cap, before the origin's close: pollproxy closed them.
					// Real time, to stay before the origin's own timer.
					time.Sleep(originKeepAlive * 9 / 10)
					if n := up.OpenConns.Load(); n != 0 {
						t.Errorf("%d connections still open %v after the burst: the origin would close them first", n, originKeepAlive*9/10)
					}
					for _, gap := range gaps {
						burst()
						// Real time: gaps around the origin's own idle timer.
						time.Sleep(gap * time.Millisecond)
					}
					burst()
					if s := up.Stats(); s.Retries != 0 || s.Failures != 0 || s.Broken != 0 {
						t.Errorf("upstream %+v: want no retry, failure or broken response", s)
					}
				})
			})
		}
	})
}

// TestPoolIdleTimeout: the pool closes a kept-alive origin connection
// once it has been idle for the pool's IdleTimeout, not a moment before,
// and the next request opens a new one; an origin that announces a
// shorter Keep-Alive timeout has its connections closed before that.
func TestPoolIdleTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		const idle = 10 * time.Second
		const announced = 4 * time.Second
		for _, c := range []struct {
			name    string
			header  string        // what the origin announces
			closeBy time.Duration // when the proxy must have closed
			exact   bool          // and not a moment before
		}{
			{"pool", "", idle, true},
			{"announced", "timeout=4", announced - time.Millisecond, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
					if c.header != "" {
						w.Header().Set("Keep-Alive", c.header)
					}
					io.WriteString(w, "ok")
				})
				up := upstreamAt(t, o.addr)
				e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up},
					Pool: proxy.PoolConfig{IdleTimeout: idle}})
				clock := e.manualClock()
				cl := e.h2Client(nil)
				// The response's last byte reached the client after the
				// connection went idle: its idle timer runs from now.
				if res, b := get(t, cl, e.url("/")); res.StatusCode != 200 || string(b) != "ok" {
					t.Fatalf("%d %q", res.StatusCode, b)
				}
				if c.exact {
					advancePast(t, clock, c.closeBy, up, 1, "idle")
				} else {
					clock.Advance(c.closeBy)
				}
				if n := up.Stats().OpenConns; n != 0 {
					t.Fatalf("%d origin connections open after %v idle, want 0", n, c.closeBy)
				}
				if res, b := get(t, cl, e.url("/")); res.StatusCode != 200 || string(b) != "ok" {
					t.Fatalf("after the idle close: %d %q", res.StatusCode, b)
				}
				if s := up.Stats(); s.Connects != 2 || s.Retries != 0 {
					t.Fatalf("upstream %+v: want a second connection and no retry", s)
				}
			})
		}
	})
}
