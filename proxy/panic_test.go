package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/metrics/atrest"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// panicking is the proxy with a panic injected at the stage a request
// names in x-panic: a test-only stream.Handler in front of the real one,
// so the product carries nothing for it.
//
//   - routing: in Serve, before the proxy sees the request (as a matcher
//     or a header operation would);
//   - head: right after the proxy bound the request to an origin
//     connection and sent its head;
//   - body: in OnBody, after the proxy forwarded the bytes;
//   - response: when the origin's answer is relayed (WriteHeader, called
//     from the origin connection's event);
//   - tunnel: when the origin's tunnel bytes are relayed (Write after the
//     tunnel opened, from the origin connection's event).
type panicking struct{ inner stream.Handler }

func (p panicking) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	stage, _ := req.Get("x-panic")
	switch stage {
	case "routing":
		panic("injected panic: routing")
	case "head":
		p.inner.Serve(req, w)
		panic("injected panic: head")
	case "body":
		return bodyPanic{p.inner.Serve(req, w)}
	case "response", "tunnel":
		return p.inner.Serve(req, &writerPanic{ResponseWriter: w, stage: stage})
	}
	return p.inner.Serve(req, w)
}

type bodyPanic struct{ stream.Events }

func (b bodyPanic) OnBody(p []byte) {
	b.Events.OnBody(p)
	panic("injected panic: body")
}

type writerPanic struct {
	stream.ResponseWriter
	stage string
}

func (w *writerPanic) WriteHeader(status int, fields []stream.Field, end bool) error {
	if w.stage == "response" {
		panic("injected panic: response")
	}
	return w.ResponseWriter.WriteHeader(status, fields, end)
}

func (w *writerPanic) Write(p []byte) (int, error) {
	if w.stage == "tunnel" {
		panic("injected panic: tunnel")
	}
	return w.ResponseWriter.Write(p)
}

var panicStages = []string{"routing", "head", "body", "response", "tunnel"}

// TestPanicContainedPerConnection injects a panic at every stage, over
// HTTP/1.1 and h2, on one loop, while other clients keep sending requests
// to the same loop. Every panicking request's connection, and only that,
// goes: an h2 client reads GOAWAY(INTERNAL_ERROR). Each panic is reported
// once, with the site and the request line; every other request
// succeeds; afterwards pollproxy_panics_total counts them and every gauge
// (client connections, origin connections, tunnels, the h2 window
// budget, the loop's descriptors and timers) is back at rest.
func TestPanicContainedPerConnection(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		ended := make(chan error, 64)
		echo := echoHandler(ended)
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				echo(w, r)
				return
			}
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, "ok")
		})
		up := upstreamAt(t, o.addr)
		m := metrics.New("test")
		cfg := proxy.Config{
			Upstreams: []*upstream.Upstream{up},
			// Pooled connections close soon after the traffic, so that
			// the open-connections gauge comes back to 0 on its own.
			Pool: proxy.PoolConfig{IdleTimeout: 100 * time.Millisecond},
		}.WithDefaults()
		budget := h2.NewWindowBudget(64 << 20)
		st := servertest.Start(t, backend, 1, func(l *netpoll.Loop) stream.Handler {
			c := cfg
			c.Observer = m.ForLoop(l, []observe.Upstream{up})
			return panicking{proxy.NewHandler(l, c)}
		}, func(c *server.Config) { c.H2.WindowBudget = budget })
		m.SetSource(metrics.Source{Pollers: backend, Group: st.Group, Upstreams: []observe.Upstream{up},
			Servers: []metrics.NamedServer{{Listen: st.Addr, Server: st.Server}}, WindowBudget: budget})
		e := &proxyEnv{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, cfg: cfg}

		var mu sync.Mutex
		var reports []netpoll.Recovered
		loop := st.Group.Loops()[0]
		done := make(chan struct{})
		loop.Post(func() {
			loop.OnPanic(func(r netpoll.Recovered) {
				mu.Lock()
				reports = append(reports, r)
				mu.Unlock()
			})
			close(done)
		})
		<-done
		rest := scrapeGauges(t, m)

		// Bystanders: clients of their own connections on the same loop,
		// sending requests (bounded in count) until the panics are over.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var served, failed atomic.Int64
		var firstErr atomic.Value
		bystander := func(cl *http.Client, body bool) {
			defer wg.Done()
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				var req *http.Request
				if body {
					req, _ = http.NewRequest("POST", e.url("/by"), strings.NewReader(strings.Repeat("b", 3000)))
				} else {
					req, _ = http.NewRequest("GET", e.url("/by"), nil)
				}
				resp, err := cl.Do(req)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || string(b) != "ok") {
						err = fmt.Errorf("%d %q", resp.StatusCode, b)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				served.Add(1)
			}
		}
		var clients []*http.Client
		for i := 0; i < 3; i++ {
			clients = append(clients, e.h2Client(nil), e.h1Client())
		}
		for i, cl := range clients {
			wg.Add(1)
			go bystander(cl, i%3 == 0)
		}

		injected := 0
		for round := 0; round < 2; round++ {
			for _, stage := range panicStages {
				for _, proto := range []string{"h1", "h2"} {
					injected++
					injectPanic(t, e, proto, stage)
				}
			}
		}
		// A request after all of them, on a new connection of each kind.
		for _, cl := range []*http.Client{e.h2Client(nil), e.h1Client()} {
			if resp, err := cl.Get(e.url("/after")); err != nil {
				t.Errorf("a request after the panics: %v", err)
			} else {
				resp.Body.Close()
			}
			cl.CloseIdleConnections()
		}
		close(stop)
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d of the other clients' requests failed while connections panicked, the first: %v", n, firstErr.Load())
		}
		if served.Load() == 0 {
			t.Error("the other clients were served nothing")
		}
		for _, cl := range clients {
			cl.CloseIdleConnections()
		}

		// Each panic reported once, blamed on its connection, naming
		// the request.
		mu.Lock()
		got := append([]netpoll.Recovered(nil), reports...)
		mu.Unlock()
		if len(got) != injected {
			t.Errorf("%d panics reported, want %d (one per injection)", len(got), injected)
		}
		for _, r := range got {
			v := fmt.Sprint(r.Value)
			stage := strings.TrimPrefix(v, "injected panic: ")
			if !r.Owned || r.InAbandon {
				t.Errorf("%s: owned %v, in abandon %v: want it blamed on its connection", v, r.Owned, r.InAbandon)
			}
			if (r.Site != e.addr && r.Site != "localhost") || !strings.Contains(r.Request, "/panic/"+stage+" HTTP/") {
				t.Errorf("%s: site %q request %q: want %s and the request line", v, r.Site, r.Request, e.addr)
			}
			if !strings.Contains(string(r.Stack), "panic_test.go") {
				t.Errorf("%s: the stack does not reach the panic", v)
			}
		}
		if n := loop.Stats().Panics; n != uint64(injected) {
			t.Errorf("the loop counted %d panics, want %d", n, injected)
		}
		text := scrapeText(t, m)
		if want := fmt.Sprintf(`pollproxy_panics_total{loop="0",poller=%q} %d`, backend, injected); !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}

		// Closes travel through sockets and the pool's idle timeout runs
		// on the loop's clock.
		var g atrest.Gauges
		servertest.Within(15*time.Second, func() bool {
			g = scrapeGauges(t, m)
			return len(g.NotAtRest(rest)) == 0
		})
		if bad := g.NotAtRest(rest); len(bad) > 0 {
			t.Errorf("gauges not back at rest after the panics:\n%s", strings.Join(bad, "\n"))
		}
	})
}

// injectPanic sends one request that panics at stage over proto on a
// connection of its own, and checks what the client sees: its
// connection goes, an h2 one with GOAWAY(INTERNAL_ERROR).
func injectPanic(t *testing.T, e *proxyEnv, proto, stage string) {
	t.Helper()
	path := "/panic/" + stage
	if stage == "tunnel" {
		injectTunnelPanic(t, e, proto, path)
		return
	}
	var cl *http.Client
	if proto == "h2" {
		cl = e.h2Client(nil)
	} else {
		cl = e.h1Client()
	}
	defer cl.CloseIdleConnections()
	var body io.Reader
	method := "GET"
	if stage == "body" {
		method, body = "POST", strings.NewReader(strings.Repeat("p", 5000))
	}
	req, _ := http.NewRequest(method, e.url(path), body)
	req.Header.Set("X-Panic", stage)
	resp, err := cl.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("%s %s: answered %d, want the connection gone", proto, stage, resp.StatusCode)
		}
	}
	if proto == "h2" && !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Errorf("h2 %s: %v, want GOAWAY(INTERNAL_ERROR)", stage, err)
	}
}

// injectTunnelPanic opens a WebSocket whose origin bytes panic when
// relayed: over HTTP/1.1 Upgrade, or RFC 8441 read frame by frame.
func injectTunnelPanic(t *testing.T, e *proxyEnv, proto, path string) {
	t.Helper()
	if proto == "h1" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl := e.h1Client()
		defer cl.CloseIdleConnections()
		c, _, err := websocket.Dial(ctx, "wss://"+e.addr+path, &websocket.DialOptions{HTTPClient: cl,
			HTTPHeader: http.Header{"X-Panic": {"tunnel"}}})
		if err != nil {
			t.Fatalf("h1 tunnel: dial: %v", err)
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
			t.Fatalf("h1 tunnel: write: %v", err)
		}
		if _, msg, err := c.Read(ctx); err == nil {
			t.Fatalf("h1 tunnel: echo %q came through, want the connection gone", msg)
		}
		return
	}
	c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
	c.headers(1, false, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "https",
		":path", path, ":authority", "localhost", "sec-websocket-version", "13", "x-panic", "tunnel")
	if st, _ := c.status(1); st != "200" {
		t.Fatalf("h2 tunnel: status %s", st)
	}
	c.fr.WriteData(1, false, wsFrame(1, []byte("hello")))
	var goAway *http2.GoAwayFrame
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
				t.Errorf("h2 tunnel: the connection ended with %v", err)
			}
			break
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			goAway = f
		case *http2.DataFrame:
			if f.StreamID == 1 && len(f.Data()) > 0 {
				t.Fatalf("h2 tunnel: the echo came through, want the connection gone")
			}
		}
	}
	if goAway == nil || goAway.ErrCode != http2.ErrCodeInternal || goAway.LastStreamID != 1 {
		t.Errorf("h2 tunnel: GOAWAY %v, want INTERNAL_ERROR naming stream 1", goAway)
	}
}

func scrapeText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func scrapeGauges(t *testing.T, m *metrics.Metrics) atrest.Gauges {
	t.Helper()
	g, err := atrest.Parse(strings.NewReader(scrapeText(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}
