package proxy_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// browserPage opens a WebSocket and an EventSource to its own origin,
// echoes 20 messages and takes 3 events, then reports what it saw to
// /result.
const browserPage = `<!doctype html><html><body><p id="result">pending</p><script>
const out = {ws: 0, sse: 0, via: "", errors: []};
let wsDone = false, sseDone = false, reported = false;
function report() {
  if (!reported && (wsDone && sseDone || out.errors.length)) {
    reported = true;
    const r = "RESULT ws=" + out.ws + " sse=" + out.sse + " via=" + out.via + " errors=" + out.errors.join(",") + " END";
    document.getElementById("result").textContent = r;
    fetch("/result?" + encodeURIComponent(r));
  }
}
const ws = new WebSocket("wss://" + location.host + "/ws");
ws.onmessage = (m) => {
  if (m.data.startsWith("via:")) { out.via = m.data.slice(4).replace(/ /g, "_"); ws.send("echo 0"); return; }
  if (m.data !== "echo " + out.ws) { out.errors.push("ws-mismatch"); report(); return; }
  out.ws++;
  if (out.ws < 20) { ws.send("echo " + out.ws); return; }
  wsDone = true; ws.close(1000); report();
};
ws.onerror = () => { out.errors.push("ws-error"); report(); };
const es = new EventSource("/sse");
es.onmessage = () => { out.sse++; if (out.sse === 3) { sseDone = true; es.close(); report(); } };
es.onerror = () => { if (!sseDone) { out.errors.push("sse-error"); report(); } };
</script></body></html>`

// browserOrigin serves the page, a WebSocket that first says which Via
// it arrived with and then echoes, an SSE stream of three events, and
// /result, whose query (the page's outcome) it sends on the channel.
func browserOrigin(t *testing.T) (*origin, <-chan string) {
	results := make(chan string, 4)
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/result":
			q, _ := url.QueryUnescape(r.URL.RawQuery)
			select {
			case results <- q:
			default:
			}
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, browserPage)
		case "/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			ctx := r.Context()
			if c.Write(ctx, websocket.MessageText, []byte("via:"+r.Header.Get("Via"))) != nil {
				return
			}
			for {
				typ, msg, err := c.Read(ctx)
				if err != nil || c.Write(ctx, typ, msg) != nil {
					return
				}
			}
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			for i := 0; i < 3; i++ {
				fmt.Fprintf(w, "data: event %d\n\n", i)
				w.(http.Flusher).Flush()
				// Real time: the origin paces its own events, so the
				// browser sees them arrive apart, as a live feed would.
				time.Sleep(50 * time.Millisecond)
			}
			<-r.Context().Done() // the page closes it
		default:
			http.NotFound(w, r)
		}
	})
	return o, results
}

var browserResult = regexp.MustCompile(`RESULT ws=(\d+) sse=(\d+) via=(\S*) errors=(\S*) END`)

// TestBrowserWebSocketAndSSE: headless Chromium loads a page through
// pollproxy that opens a WebSocket and an EventSource, once over h2 (the
// WebSocket as an RFC 8441 extended CONNECT) and once with HTTP/2 off
// (an HTTP/1.1 Upgrade). The page reports its outcome to the origin.
//
// The browser runs in real time. An earlier version ran it under
// --virtual-time-budget and read the result with --dump-dom: over
// HTTP/1.1 about half of those runs stalled, the WebSocket's first
// message on Chromium's socket but not handed to the page until the
// fetch that held virtual time still had ended — the same with Go's
// httputil.ReverseProxy in pollproxy's place, so Chromium's, not ours.
func TestBrowserWebSocketAndSSE(t *testing.T) {
	chromium := testenv.Tool(t, "chromium", "chromium")
	// A browser per backend is the cost here: -short runs one.
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		o, results := browserOrigin(t)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		port := e.addr[strings.LastIndexByte(e.addr, ':')+1:]
		for _, mode := range []struct {
			name, via string
			flags     []string
		}{
			{"h2", "2.0_pollproxy", nil},
			{"h1", "1.1_pollproxy", []string{"--disable-http2"}},
		} {
			t.Run(mode.name, func(t *testing.T) {
				args := []string{"--headless=new", "--no-sandbox", "--disable-gpu",
					"--disable-background-networking", "--disable-component-update", "--disable-sync",
					"--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
					"--ignore-certificate-errors"}
				args = append(args, mode.flags...)
				args = append(args, "https://127.0.0.1:"+port+"/")
				cmd := exec.Command(chromium, args...)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatalf("chromium: %v", err)
				}
				exited := make(chan struct{})
				go func() { cmd.Wait(); close(exited) }()
				defer func() {
					// SIGTERM lets the browser take its helper processes
					// down with it; SIGKILL if it does not go.
					cmd.Process.Signal(syscall.SIGTERM)
					select {
					case <-exited:
					case <-time.After(10 * time.Second):
						cmd.Process.Kill()
						<-exited
					}
				}()
				var got string
				select {
				case got = <-results:
				case <-exited:
					t.Fatalf("chromium exited before the page reported:\n%s", stderr.String())
				case <-time.After(60 * time.Second):
					t.Fatalf("the page reported nothing in 60 s; chromium's log:\n%s", stderr.String())
				}
				m := browserResult.FindStringSubmatch(got)
				if m == nil {
					t.Fatalf("the page reported %q", got)
				}
				if m[1] != "20" || m[2] != "3" || m[4] != "" {
					t.Errorf("page: %s", m[0])
				}
				if m[3] != mode.via {
					t.Errorf("the WebSocket reached the origin with Via %q, want %q (%s)", m[3], mode.via, m[0])
				}
			})
		}
	})
}
