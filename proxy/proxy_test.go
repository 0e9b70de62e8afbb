package proxy_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

var discardLog = log.New(io.Discard, "", 0)

func do(t *testing.T, cl *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func get(t *testing.T, cl *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	return do(t, cl, req)
}

// TestRequestTranslation: what the origin receives for h2 and HTTP/1.1
// requests — Host from :authority, X-Forwarded-* written (the client's
// replaced: it is no trusted proxy), Via appended to, hop-by-hop fields
// gone both ways.
func TestRequestTranslation(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newRecordingOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("Connection", "x-down-hop")
			w.Header().Set("X-Down-Hop", "1")
			w.Header().Set("X-Down", "kept")
			io.WriteString(w, "ok")
		})
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})

		cl := e.h2Client(nil)
		req, _ := http.NewRequest("POST", "https://app.example:8443/p/a?x=1&y=%20", strings.NewReader("hello body"))
		req.Header.Set("X-Custom", "v")
		req.Header.Set("X-Forwarded-For", "10.0.0.1")
		req.Header.Set("Via", "1.1 edge")
		req.Header.Set("Te", "trailers")
		req.Header.Set("X-Forwarded-Proto", "gopher")
		res, b := do(t, cl, req)
		if res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("h2: %d %q", res.StatusCode, b)
		}
		s := o.last()
		want := map[string]string{
			"X-Custom":          "v",
			"X-Forwarded-For":   "127.0.0.1",
			"X-Forwarded-Proto": "https",
			"X-Forwarded-Host":  "app.example:8443",
			"Content-Length":    "10",
		}
		// Caddy's Via: the client's, then its own on a line of its own.
		if got := s.Header.Values("Via"); len(got) != 2 || got[0] != "1.1 edge" || got[1] != "2.0 pollproxy" {
			t.Errorf("h2: origin Via = %q, want [1.1 edge 2.0 pollproxy]", got)
		}
		if s.Method != "POST" || s.URI != "/p/a?x=1&y=%20" || s.Host != "app.example:8443" || s.Proto != "HTTP/1.1" || string(s.Body) != "hello body" {
			t.Fatalf("origin saw %s %s host %q %s body %q", s.Method, s.URI, s.Host, s.Proto, s.Body)
		}
		for k, v := range want {
			if got := s.Header.Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("h2: origin header %s = %q, want %q", k, got, v)
			}
		}
		for _, k := range []string{"Connection", "Keep-Alive", "Transfer-Encoding"} {
			if v, ok := s.Header[k]; ok {
				t.Errorf("h2: hop-by-hop %s: %q reached the origin", k, v)
			}
		}
		// TE: trailers is the one hop-by-hop field passed on, as Caddy does.
		if got := s.Header.Values("Te"); len(got) != 1 || got[0] != "trailers" {
			t.Errorf("h2: origin Te = %q, want [trailers]", got)
		}
		for _, k := range []string{"Keep-Alive", "Connection", "X-Down-Hop"} {
			if v, ok := res.Header[k]; ok {
				t.Errorf("h2: response hop-by-hop %s: %q reached the client", k, v)
			}
		}
		if res.Header.Get("X-Down") != "kept" {
			t.Errorf("h2: response header X-Down lost: %v", res.Header)
		}

		h1 := e.h1Client()
		req, _ = http.NewRequest("GET", "https://h1.example/q", nil)
		req.Header.Set("Connection", "x-hop")
		req.Header.Set("X-Hop", "1")
		req.Header.Set("Keep-Alive", "300")
		req.Header.Set("Proxy-Connection", "keep-alive")
		req.Header.Set("Te", "deflate, trailers")
		res, _ = do(t, h1, req)
		if res.StatusCode != 200 {
			t.Fatalf("h1: %d", res.StatusCode)
		}
		s = o.last()
		if s.Host != "h1.example" || s.Header.Get("Via") != "1.1 pollproxy" || s.Header.Get("X-Forwarded-Host") != "h1.example" ||
			s.Header.Get("X-Forwarded-For") != "127.0.0.1" {
			t.Errorf("h1: origin saw host %q header %v", s.Host, s.Header)
		}
		for _, k := range []string{"Connection", "X-Hop", "Keep-Alive", "Proxy-Connection"} {
			if v, ok := s.Header[k]; ok {
				t.Errorf("h1: hop-by-hop %s: %q reached the origin", k, v)
			}
		}
		if got := s.Header.Values("Te"); len(got) != 1 || got[0] != "trailers" {
			t.Errorf("h1: origin Te = %q, want [trailers]", got)
		}
		for _, k := range []string{"Keep-Alive", "X-Down-Hop"} {
			if v, ok := res.Header[k]; ok {
				t.Errorf("h1: response hop-by-hop %s: %q reached the client", k, v)
			}
		}
	})
}

// TestUploadStreamsBounded: a 100 MiB upload from a generator reaches the
// origin intact while the process's heap stays far below the body size.
func TestUploadStreamsBounded(t *testing.T) {
	const size = 100 << 20
	want := patternSum(size)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		var got atomic.Int64
		var sum atomic.Value
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			n, _ := io.Copy(h, r.Body)
			got.Store(n)
			sum.Store(h.Sum(nil))
			io.WriteString(w, strconv.FormatInt(n, 10))
		})
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		cl := e.h2Client(nil)
		get(t, cl, e.url("/warm"))
		hw := servertest.WatchHeap(t)
		req, _ := http.NewRequest("PUT", e.url("/upload"), &pattern{n: size})
		req.ContentLength = size
		start := time.Now()
		res, b := do(t, cl, req)
		growth := hw.Stop()
		if res.StatusCode != 200 || string(b) != strconv.Itoa(size) || got.Load() != size || !bytes.Equal(sum.Load().([]byte), want) {
			t.Fatalf("status %d body %q: origin got %d bytes", res.StatusCode, b, got.Load())
		}
		t.Logf("100 MiB upload in %v: peak heap growth %.1f MiB", time.Since(start).Round(time.Millisecond), mib(growth))
		if growth > 24<<20 {
			t.Fatalf("heap grew by %.1f MiB during a 100 MiB upload", mib(growth))
		}
	})
}

// TestSlowClientDownload: a 64 MiB response to a client that stops
// reading is held back at the origin (backpressure through h2 flow control
// to the backend socket), not buffered by pollproxy.
//
// The body is 64 MiB, 16 MiB under the race detector (the stall, which is
// what is measured, comes within the first few MiB either way).
func TestSlowClientDownload(t *testing.T) {
	size := int64(64 << 20)
	if raceEnabled {
		size = 16 << 20
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		slowClientDownload(t, size, func(h http.HandlerFunc) *proxyEnv {
			o := newOrigin(t, h)
			return startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		})
	})
}

// slowClientDownload runs TestSlowClientDownload's check: size bytes from
// an origin running the handler it gives start, to an h2 client that
// stops reading after 1 MiB.
func slowClientDownload(t *testing.T, size int64, start func(http.HandlerFunc) *proxyEnv) {
	want := patternSum(size)
	var written atomic.Int64
	e := start(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		writePattern(w, size, &written)
	})
	cl := e.h2Client(nil)
	hw := servertest.WatchHeap(t)
	res, err := cl.Get(e.url("/big"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, res.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	// Stop reading until the origin stops making progress.
	stalled := servertest.AwaitStall(&written)
	pause := hw.Growth()
	n, err := io.Copy(h, res.Body)
	growth := hw.Stop()
	if err != nil || n+1<<20 != size || !bytes.Equal(h.Sum(nil), want) {
		t.Fatalf("got %d bytes, err %v, digest match %v", n+1<<20, err, bytes.Equal(h.Sum(nil), want))
	}
	t.Logf("%.0f MiB to a paused client: origin stalled after %.1f MiB, heap growth %.1f MiB paused, %.1f MiB peak",
		mib(uint64(size)), mib(uint64(stalled)), mib(pause), mib(growth))
	limit := int64(24 << 20) // the client's 4 MiB window, socket buffers, a little of ours
	if limit > size*3/4 {
		limit = size * 3 / 4
	}
	if stalled > limit {
		t.Fatalf("origin wrote %.1f MiB while the client read 1 MiB: no backpressure", mib(uint64(stalled)))
	}
	if growth > 24<<20 {
		t.Fatalf("heap grew by %.1f MiB streaming %.0f MiB", mib(growth), mib(uint64(size)))
	}
}

// TestPooledConnections: 10,000 GETs over several h2 connections reach the
// origin over at most loops×MaxIdle connections.
func TestPooledConnections(t *testing.T) {
	const (
		loops    = 2
		maxIdle  = 8
		requests = 10000
		clients  = 4
		workers  = 8 // per client connection
	)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "ok")
		})
		up := upstreamAt(t, o.addr)
		e := startProxy(t, backend, loops, proxy.Config{
			Upstreams: []*upstream.Upstream{up},
			Pool:      proxy.PoolConfig{MaxConns: maxIdle, MaxIdle: maxIdle},
		})
		var next atomic.Int64
		var failures atomic.Int64
		var wg sync.WaitGroup
		var dials atomic.Int32
		start := time.Now()
		for c := 0; c < clients; c++ {
			cl := e.h2Client(&dials)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= requests {
						res, err := cl.Get(e.url(fmt.Sprintf("/r/%d", next.Load())))
						if err != nil {
							failures.Add(1)
							continue
						}
						b, _ := io.ReadAll(res.Body)
						res.Body.Close()
						if res.StatusCode != 200 || string(b) != "ok" {
							failures.Add(1)
						}
					}
				}()
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		conns := o.conns.Load()
		t.Logf("%d requests over %d client connections in %v: origin saw %d connections, %d requests; reuse ratio %.4f",
			requests, dials.Load(), elapsed.Round(time.Millisecond), conns, o.reqs.Load(), up.ReuseRatio())
		if f := failures.Load(); f != 0 {
			t.Fatalf("%d requests failed", f)
		}
		if o.reqs.Load() != requests {
			t.Fatalf("origin served %d requests, want %d", o.reqs.Load(), requests)
		}
		if conns > loops*maxIdle {
			t.Fatalf("origin saw %d connections, want at most %d", conns, loops*maxIdle)
		}
	})
}

// TestChunkedTrailers: a chunked origin response with trailers arrives as
// h2 DATA and a trailing HEADERS.
func TestChunkedTrailers(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum, X-Count")
			for i := 0; i < 5; i++ {
				fmt.Fprintf(w, "chunk %d\n", i)
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Checksum", "abc123")
			w.Header().Set("X-Count", "5")
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		cl := e.h2Client(nil)
		for i := 0; i < 2; i++ { // the second over the reused connection
			res, b := get(t, cl, e.url("/chunked"))
			if res.StatusCode != 200 || !strings.HasPrefix(string(b), "chunk 0\n") || strings.Count(string(b), "chunk") != 5 {
				t.Fatalf("status %d body %q", res.StatusCode, b)
			}
			if res.Trailer.Get("X-Checksum") != "abc123" || res.Trailer.Get("X-Count") != "5" {
				t.Fatalf("trailers %v", res.Trailer)
			}
		}
		if n := o.conns.Load(); n != 1 {
			t.Fatalf("origin saw %d connections, want 1 (reuse after a chunked response)", n)
		}
	})
}

// TestEarlyHints: a 103 from the origin reaches the h2 client before the
// final response.
func TestEarlyHints(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "final")
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		cl := e.h2Client(nil)
		var hints []string
		var codes []int
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			codes = append(codes, code)
			hints = append(hints, h.Get("Link"))
			return nil
		}}
		req, _ := http.NewRequest("GET", e.url("/hints"), nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		res, b := do(t, cl, req)
		if res.StatusCode != 200 || string(b) != "final" {
			t.Fatalf("final: %d %q", res.StatusCode, b)
		}
		if len(codes) != 1 || codes[0] != 103 || hints[0] != "</style.css>; rel=preload; as=style" {
			t.Fatalf("informational responses %v with Link %q", codes, hints)
		}
	})
}

// TestNoBodyResponses: HEAD, 204 and 304 carry no body, and the backend
// connection stays reusable after each.
func TestNoBodyResponses(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/head":
				w.Header().Set("Content-Length", "1234")
			case "/204":
				w.WriteHeader(204)
			case "/304":
				w.Header().Set("ETag", `"v1"`)
				w.WriteHeader(304)
			default:
				io.WriteString(w, "body")
			}
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		for _, cl := range []*http.Client{e.h2Client(nil), e.h1Client()} {
			for _, c := range []struct {
				method, path string
				status       int
			}{{"HEAD", "/head", 200}, {"GET", "/204", 204}, {"GET", "/304", 304}, {"GET", "/x", 200}} {
				req, _ := http.NewRequest(c.method, e.url(c.path), nil)
				res, b := do(t, cl, req)
				if res.StatusCode != c.status {
					t.Fatalf("%s %s: status %d", c.method, c.path, res.StatusCode)
				}
				if c.path == "/x" {
					if string(b) != "body" {
						t.Fatalf("GET after no-body responses: %q", b)
					}
				} else if len(b) != 0 {
					t.Fatalf("%s %s: %d body bytes", c.method, c.path, len(b))
				}
				if c.path == "/head" && res.ContentLength != 1234 {
					t.Fatalf("HEAD content-length %d", res.ContentLength)
				}
				if c.path == "/304" && res.Header.Get("Etag") != `"v1"` {
					t.Fatalf("304 lost its ETag: %v", res.Header)
				}
			}
		}
		if n := o.conns.Load(); n != 1 {
			t.Fatalf("origin saw %d connections for sequential requests, want 1", n)
		}
	})
}

// TestConnectRefused: nothing listening → 502.
func TestConnectRefused(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, closedAddr(t))}})
		cl := e.h2Client(nil)
		for i := 0; i < 2; i++ {
			res, b := get(t, cl, e.url("/"))
			if res.StatusCode != 502 {
				t.Fatalf("status %d %q, want 502", res.StatusCode, b)
			}
		}
	})
}

// TestResponseHeaderTimeout: an origin that accepts and never answers →
// 504 once ResponseHeaderTimeout has passed since the request went out,
// not a moment before.
func TestResponseHeaderTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, reached := silentOrigin(t)
		const timeout = 150 * time.Millisecond
		up := upstreamAt(t, addr)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, ResponseHeaderTimeout: timeout})
		clock := e.manualClock()
		done := goDo(e.h2Client(nil), mustRequest("GET", e.url("/"), nil))
		<-reached // the request went out, and its timer with it
		advancePast(t, clock, timeout, up, 1, "request")
		r := <-done
		if r.err != nil || r.res.StatusCode != 504 {
			t.Fatalf("%v %v %q, want 504", r.err, r.res, r.body)
		}
	})
}

// silentOrigin accepts connections, reads them, and never answers; reached
// gets a value when a connection's first bytes arrived.
func silentOrigin(t *testing.T) (addr string, reached <-chan struct{}) {
	ch := make(chan struct{}, 16)
	addr = servertest.ServeConns(t, func(c net.Conn) {
		var b [1]byte
		if _, err := c.Read(b[:]); err == nil {
			ch <- struct{}{}
		}
		io.Copy(io.Discard, c)
	})
	return addr, ch
}

// fullBacklog returns the address of a listener whose accept queue is full
// and never drained, so a new connect gets no answer to its SYN; ok is
// false when the kernel still completed connects.
func fullBacklog(t *testing.T) (addr string, ok bool) {
	// Listen with a backlog of 1 and never accept.
	fd, err := netpoll.Listen(netip.MustParseAddrPort("127.0.0.1:0"), false, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	ap, err := netpoll.LocalAddr(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr = ap.String()
	var fill []net.Conn
	t.Cleanup(func() {
		for _, c := range fill {
			c.Close()
		}
	})
	for i := 0; i < 16; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			var ne net.Error
			return addr, errors.As(err, &ne) && ne.Timeout()
		}
		fill = append(fill, c)
	}
	return addr, false
}

// TestConnectTimeout: a connect that gets no answer → 504 once
// ConnectTimeout has passed since it began.
func TestConnectTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, ok := fullBacklog(t)
		if !ok {
			t.Skip("this kernel completes connects to a listener with a full backlog; no way to make a local connect hang")
		}
		const timeout = 150 * time.Millisecond
		up := upstreamAt(t, addr)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, ConnectTimeout: timeout})
		clock := e.manualClock()
		done := goDo(e.h2Client(nil), mustRequest("GET", e.url("/"), nil))
		waitFor(t, func() bool { return up.Stats().Connects == 1 }, "the connect to start")
		advancePast(t, clock, timeout, up, 1, "request")
		r := <-done
		if r.err != nil || r.res.StatusCode != 504 {
			t.Fatalf("%v %v %q, want 504", r.err, r.res, r.body)
		}
	})
}

// TestQueueTimeout: with the upstream's one connection busy, a request
// waits in the pool's queue and gets a 503 once ConnectTimeout has passed
// there, not a moment before; the request holding the connection goes on.
func TestQueueTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr, reached := silentOrigin(t)
		const timeout = time.Second // ResponseHeaderTimeout keeps its default minute
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)},
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

// TestOriginClosesMidBody: the origin dies half way through a body →
// RST_STREAM(INTERNAL_ERROR) on that stream, while a concurrent stream on
// the same client connection completes.
func TestOriginClosesMidBody(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		slowSeen := make(chan struct{}, 1)
		brokenSeen := make(chan struct{}) // the client saw /broken reset: /slow may answer
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/broken":
				w.Header().Set("Content-Length", strconv.Itoa(1<<20))
				w.Write(make([]byte, 64<<10))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // net/http closes the connection
			case "/slow":
				slowSeen <- struct{}{}
				<-brokenSeen
				io.WriteString(w, "slow ok")
			}
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		var dials atomic.Int32
		cl := e.h2Client(&dials)
		slow := make(chan error, 1)
		go func() {
			res, err := cl.Get(e.url("/slow"))
			if err != nil {
				slow <- err
				return
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err == nil && (res.StatusCode != 200 || string(b) != "slow ok") {
				err = fmt.Errorf("slow: %d %q", res.StatusCode, b)
			}
			slow <- err
		}()
		<-slowSeen
		res, err := cl.Get(e.url("/broken"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		var se http2.StreamError
		if res.StatusCode != 200 || !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
			t.Fatalf("broken: status %d, %d bytes, err %v: want RST_STREAM(INTERNAL_ERROR)", res.StatusCode, n, err)
		}
		close(brokenSeen)
		if err := <-slow; err != nil {
			t.Fatalf("concurrent stream: %v", err)
		}
		if d := dials.Load(); d != 1 {
			t.Fatalf("%d client connections, want 1", d)
		}
	})
}

// rawOrigin answers GETs with "ok" (keep-alive, never saying Connection:
// close) and then misbehaves: closeAfter closes right after the first
// response; dropSecond closes when a second request arrives on a
// connection, without answering it (the keep-alive race).
func rawOrigin(t *testing.T, dropSecond bool) (addr string, served *atomic.Int64) {
	served = new(atomic.Int64)
	addr = servertest.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if i == 1 && dropSecond {
				return
			}
			served.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			if !dropSecond {
				return
			}
		}
	})
	return addr, served
}

// TestStaleConnectionRetried: a pooled connection the origin closed
// between requests costs the client nothing.
func TestStaleConnectionRetried(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, drop := range []bool{false, true} {
			name := map[bool]string{false: "close-after-response", true: "close-on-next-request"}[drop]
			t.Run(name, func(t *testing.T) {
				addr, served := rawOrigin(t, drop)
				up := upstreamAt(t, addr)
				e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}})
				cl := e.h2Client(nil)
				const n = 20
				for i := 0; i < n; i++ {
					req, _ := http.NewRequest("GET", e.url("/"), nil)
					if !drop {
						// A POST cannot be retried: the proxy must have
						// noticed the origin's close while the connection
						// sat idle.
						req, _ = http.NewRequest("POST", e.url("/"), strings.NewReader("form=1"))
					}
					res, b := do(t, cl, req)
					if res.StatusCode != 200 || string(b) != "ok" {
						t.Fatalf("request %d: %d %q", i, res.StatusCode, b)
					}
					if !drop {
						// The origin closes after each response: wait
						// until the proxy has seen it close the idle one.
						waitFor(t, func() bool { return up.Stats().OpenConns == 0 }, "the proxy to see the origin's close")
					}
				}
				t.Logf("%s: retries %d, connects %d, served %d", name, up.Retries.Load(), up.Connects.Load(), served.Load())
				if drop && up.Retries.Load() == 0 {
					t.Fatal("no request was retried: the stale-connection path was not exercised")
				}
				if !drop && up.Retries.Load() != 0 {
					t.Fatalf("%d requests went to connections the origin had already closed", up.Retries.Load())
				}
			})
		}
	})
}

// countingOrigins starts n origins that count their requests.
func countingOrigins(t *testing.T, n int) ([]*origin, []*upstream.Upstream) {
	var os []*origin
	var ups []*upstream.Upstream
	for i := 0; i < n; i++ {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		os = append(os, o)
		ups = append(ups, upstreamAt(t, o.addr))
	}
	return os, ups
}

// TestRoundRobin: sequential requests alternate between two origins.
func TestRoundRobin(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		os, ups := countingOrigins(t, 2)
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: ups, Policy: proxy.RoundRobin})
		cl := e.h2Client(nil)
		const n = 100
		for i := 0; i < n; i++ {
			if res, _ := get(t, cl, e.url("/")); res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
		}
		a, b := os[0].reqs.Load(), os[1].reqs.Load()
		if a+b != n || a < n/2-2 || b < n/2-2 {
			t.Fatalf("round robin sent %d and %d", a, b)
		}
	})
}

// TestLeastConn: while one origin holds a request, new requests go to the
// other.
func TestLeastConn(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		release := make(chan struct{})
		held := make(chan struct{}, 16)
		var fast atomic.Int64
		slow := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			held <- struct{}{}
			<-release
			io.WriteString(w, "slow")
		})
		quick := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			fast.Add(1)
			io.WriteString(w, "fast")
		})
		e := startProxy(t, backend, 1, proxy.Config{
			Upstreams: []*upstream.Upstream{upstreamAt(t, slow.addr), upstreamAt(t, quick.addr)},
			Policy:    proxy.LeastConnections,
		})
		cl := e.h2Client(nil)
		heldDone := make(chan error, 1)
		// Send requests until one is held by the slow origin.
		for i := 0; ; i++ {
			if i == 8 {
				t.Fatal("no request reached the slow origin")
			}
			done := make(chan error, 1)
			go func() {
				res, err := cl.Get(e.url("/"))
				if err == nil {
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						err = fmt.Errorf("status %d %q", res.StatusCode, b)
					}
				}
				done <- err
			}()
			select {
			case <-held:
				go func() { heldDone <- <-done }()
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			break
		}
		before := fast.Load()
		const n = 20
		for i := 0; i < n; i++ {
			res, b := get(t, cl, e.url("/"))
			if res.StatusCode != 200 || string(b) != "fast" {
				t.Fatalf("request %d with the slow origin loaded: %d %q", i, res.StatusCode, b)
			}
		}
		close(release)
		if err := <-heldDone; err != nil {
			t.Fatal(err)
		}
		if got := fast.Load() - before; got != n {
			t.Fatalf("the idle origin got %d of %d requests", got, n)
		}
	})
}

// TestPassiveHealth: an upstream that is down fails MaxFails times, then
// is skipped; every request succeeds on the other.
func TestPassiveHealth(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		const maxFails = 2
		good := newOrigin(t, nil)
		down, up := upstreamAt(t, closedAddr(t)), upstreamAt(t, good.addr)
		e := startProxy(t, backend, 2, proxy.Config{
			Upstreams: []*upstream.Upstream{down, up},
			Health:    upstream.Health{MaxFails: maxFails, FailDuration: time.Minute},
		})
		cl := e.h2Client(nil)
		const n = 20
		for i := 0; i < n; i++ {
			res, b := get(t, cl, e.url("/"))
			if res.StatusCode != 200 || string(b) != "ok" {
				t.Fatalf("request %d: %d %q", i, res.StatusCode, b)
			}
		}
		if f := down.Failures.Load(); f != maxFails {
			t.Fatalf("the down upstream failed %d times, want %d (then skipped)", f, maxFails)
		}
		if r := good.reqs.Load(); r != n {
			t.Fatalf("the good upstream served %d of %d", r, n)
		}
	})
}

// startNginx runs nginx in the foreground serving root on a free loopback
// port; it is stopped by its PID at cleanup.
func startNginx(t *testing.T, root string) string {
	return startNginxServer(t, "", "root "+root+";")
}

// startNginxServer runs nginx in the foreground with one server on a free
// loopback port: listen takes listenOpts, the block holds body.
func startNginxServer(t *testing.T, listenOpts, body string) string {
	nginx := testenv.Tool(t, "nginx", "nginx-light")
	dir := t.TempDir()
	addr := closedAddr(t)
	conf := filepath.Join(dir, "nginx.conf")
	cfg := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	keepalive_requests 100000;
	server { listen %[2]s %[3]s; %[4]s }
}
`, dir, addr, listenOpts, body)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %v\n%s%s", err, out.Bytes(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not listening on %s: %s", addr, out.Bytes())
		}
		// Real time: nginx starts on its own; nothing tells us when it listens.
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNginxOrigin: 2,000 h2 requests for 1 KiB files through pollproxy to
// a real nginx all succeed with the right content.
func TestNginxOrigin(t *testing.T) {
	root := t.TempDir()
	const files = 16
	contents := make([][]byte, files)
	for i := range contents {
		contents[i] = bytes.Repeat([]byte{byte('a' + i)}, 1024)
		copy(contents[i], fmt.Sprintf("file %d\n", i))
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), contents[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := startNginx(t, root)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		up := upstreamAt(t, addr)
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{up}})
		const requests, workers = 2000, 16
		clients := []*http.Client{e.h2Client(nil), e.h2Client(nil)}
		var next, failures atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			cl := clients[w%len(clients)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > requests {
						return
					}
					f := int(i) % files
					res, err := cl.Get(e.url(fmt.Sprintf("/f%d.txt", f)))
					if err != nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					b, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil || res.StatusCode != 200 || !bytes.Equal(b, contents[f]) {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("f%d: status %d, %d bytes, err %v", f, res.StatusCode, len(b), err))
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%d requests to nginx: %d connects, reuse ratio %.3f", requests, up.Connects.Load(), up.ReuseRatio())
		if n := failures.Load(); n != 0 {
			t.Fatalf("%d of %d requests failed; first: %v", n, requests, firstErr.Load())
		}
	})
}

// reasonRecorder is an Observer that keeps each request's report and
// each upstream failure it hears of.
type reasonRecorder struct {
	mu       sync.Mutex
	logs     []observe.RequestLog
	failures []observe.Reason
}

func (r *reasonRecorder) Observe(l *observe.RequestLog) {
	r.mu.Lock()
	r.logs = append(r.logs, *l)
	r.mu.Unlock()
}

func (r *reasonRecorder) UpstreamFailed(_ string, why observe.Reason) {
	r.mu.Lock()
	r.failures = append(r.failures, why)
	r.mu.Unlock()
}

// take returns what was recorded since the last call, once a request's
// report is in.
func (r *reasonRecorder) take(t *testing.T) (observe.RequestLog, []observe.Reason) {
	t.Helper()
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.logs) > 0
	}, "the request's report")
	r.mu.Lock()
	defer r.mu.Unlock()
	l, f := r.logs[len(r.logs)-1], r.failures
	r.logs, r.failures = nil, nil
	return l, f
}

// TestEndReasons: how a request ended reaches the client, the access
// log's report (reason, detail, status) and the upstream failure counter
// (reason label), over real sockets, for a complete response and for
// endings of each kind: pollproxy's own answer before a head, a reset
// after one.
func TestEndReasons(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/broken" {
				w.Header().Set("Content-Length", strconv.Itoa(1<<20))
				w.Write(make([]byte, 16<<10))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // net/http closes the connection
			}
			io.WriteString(w, "ok")
		})
		// detail "*": any, but some.
		check := func(label string, l observe.RequestLog, failures []observe.Reason, status int, reason observe.Reason, detail string, failure ...observe.Reason) {
			t.Helper()
			if l.Status != status || l.Reason != reason || detail != "*" && l.Detail != detail || detail == "*" && l.Detail == "" {
				t.Errorf("%s: report status %d reason %v detail %q, want %d %v %q", label, l.Status, l.Reason, l.Detail, status, reason, detail)
			}
			if len(failures) != len(failure) || len(failure) > 0 && failures[0] != failure[0] {
				t.Errorf("%s: upstream failures %v, want %v", label, failures, failure)
			}
		}

		rec := &reasonRecorder{}
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, Observer: rec})
		cl := e.h2Client(nil)
		if res, b := get(t, cl, e.url("/ok")); res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("ok: %d %q", res.StatusCode, b)
		}
		l, f := rec.take(t)
		check("complete", l, f, 200, observe.ReasonNone, "")
		if l.ErrorText() != "" {
			t.Errorf("complete: error text %q", l.ErrorText())
		}

		res, err := cl.Get(e.url("/broken"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		var se http2.StreamError
		if !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
			t.Fatalf("broken: %v, want RST_STREAM(INTERNAL_ERROR)", err)
		}
		l, f = rec.take(t)
		// The detail is the response parser's word for a body cut short.
		check("broken", l, f, 0, observe.ReasonBrokenMidResponse, "*", observe.ReasonBrokenMidResponse)
		if want := "upstream broke mid-response: " + l.Detail; l.ErrorText() != want {
			t.Errorf("broken: error text %q, want %q", l.ErrorText(), want)
		}

		rec = &reasonRecorder{}
		e = startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, closedAddr(t))}, Observer: rec})
		res, b := get(t, e.h2Client(nil), e.url("/"))
		if want := "bad gateway: connection refused by upstream\n"; res.StatusCode != 502 || string(b) != want {
			t.Fatalf("refused: %d %q, want 502 %q", res.StatusCode, b, want)
		}
		l, f = rec.take(t)
		check("refused", l, f, 502, observe.ReasonConnect, "connection refused by upstream", observe.ReasonConnect)

		rec = &reasonRecorder{}
		silent, reached := silentOrigin(t)
		e = startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, silent)}, Observer: rec,
			ResponseHeaderTimeout: 100 * time.Millisecond})
		clock := e.manualClock()
		done := goDo(e.h2Client(nil), mustRequest("GET", e.url("/"), nil))
		<-reached
		clock.Advance(100 * time.Millisecond)
		r := <-done
		if want := "gateway timeout: upstream sent no response head in time\n"; r.err != nil || r.res.StatusCode != 504 || string(r.body) != want {
			t.Fatalf("silent: %v %v %q, want 504 %q", r.err, r.res, r.body, want)
		}
		l, f = rec.take(t)
		check("silent", l, f, 504, observe.ReasonHeaderTimeout, "", observe.ReasonHeaderTimeout)
	})
}
