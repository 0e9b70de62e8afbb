//lint:file-ignore SA1019 the tests' HTTP/2 client is x/net's Transport: unlike net/http's HTTP/2 it dials once however many requests wait, and its errors are x/net's (http2.StreamError); tests count dials and match those errors.

package proxy_test

import (
	"context"
	"crypto/sha256"
	stdtls "crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/looptest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// proxyEnv is pollproxy serving TLS on loopback with the reverse proxy on
// every loop.
type proxyEnv struct {
	t     *testing.T
	group *netpoll.Group
	srv   *server.Server
	addr  string
	roots *x509.CertPool
	cfg   proxy.Config
	// certFile is the server's certificate in PEM, for curl.
	certFile string
}

func upstreamAt(t *testing.T, addr string) *upstream.Upstream {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return &upstream.Upstream{Name: addr, Addr: ap}
}

// startProxy runs loops loops over backend with proxy.NewHandler(cfg) on
// each; cfg gets its defaults here.
func startProxy(t *testing.T, backend string, loops int, cfg proxy.Config) *proxyEnv {
	t.Helper()
	cfg = cfg.WithDefaults()
	st := servertest.Start(t, backend, loops, func(l *netpoll.Loop) stream.Handler {
		return proxy.NewHandler(l, cfg)
	}, nil)
	return &proxyEnv{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, cfg: cfg, certFile: st.CertFile}
}

func (e *proxyEnv) tlsConfig(protos ...string) *stdtls.Config {
	return &stdtls.Config{RootCAs: e.roots, ServerName: "localhost", NextProtos: protos}
}

// h2Client dials pollproxy whatever the URL's host, so tests choose the
// :authority freely; dials counts connections.
func (e *proxyEnv) h2Client(dials *atomic.Int32) *http.Client {
	tr := &http2.Transport{
		StrictMaxConcurrentStreams: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *stdtls.Config) (net.Conn, error) {
			if dials != nil {
				dials.Add(1)
			}
			return (&stdtls.Dialer{Config: e.tlsConfig("h2")}).DialContext(ctx, "tcp", e.addr)
		},
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// h1Client is net/http's HTTP/1.1 client to pollproxy.
func (e *proxyEnv) h1Client() *http.Client {
	tr := &http.Transport{
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *stdtls.Conn) http.RoundTripper{},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&stdtls.Dialer{Config: e.tlsConfig("http/1.1")}).DialContext(ctx, "tcp", e.addr)
		},
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func (e *proxyEnv) url(path string) string { return "https://" + e.addr + path }

// manualClock gives the proxy's loops a clock that moves only when the
// test advances it: the proxy's timeouts then fire at a step of the test,
// never because a loaded machine was slow.
func (e *proxyEnv) manualClock() *looptest.Clock { return looptest.NewClock(e.group.Loops()...) }

// advancePast moves clock to a moment before d, where the upstream must
// still hold open origin connections (Advance returns after the due timers
// ran, and a timeout closes its origin connection on the loop), and then
// to d.
func advancePast(t *testing.T, clock *looptest.Clock, d time.Duration, up *upstream.Upstream, open int64, what string) {
	t.Helper()
	clock.Advance(d - time.Millisecond)
	if n := up.Stats().OpenConns; n != open {
		t.Fatalf("%s: %d origin connections open a moment before %v, want %d", what, n, d, open)
	}
	clock.Advance(time.Millisecond)
}

// exchangeResult is what a request sent in the background came to.
type exchangeResult struct {
	res  *http.Response
	body []byte
	err  error
}

// goDo sends req with cl on another goroutine, so that the test can move
// the proxy's clock while the request waits; the result comes on the
// channel.
func goDo(cl *http.Client, req *http.Request) <-chan exchangeResult {
	ch := make(chan exchangeResult, 1)
	go func() {
		var r exchangeResult
		if r.res, r.err = cl.Do(req); r.err == nil {
			r.body, r.err = io.ReadAll(r.res.Body)
			r.res.Body.Close()
		}
		ch <- r
	}()
	return ch
}

// origin is a real net/http server on loopback that records what reached
// it.
type origin struct {
	addr  string
	conns atomic.Int64 // distinct connections
	reqs  atomic.Int64
	mu    sync.Mutex
	seen  []seenRequest
}

type seenRequest struct {
	Method, URI, Host, Proto string
	Header                   http.Header
	Body                     []byte
}

// newOrigin starts an origin running h (nil: record and answer "ok").
func newOrigin(t *testing.T, h http.HandlerFunc) *origin {
	return startOrigin(t, h == nil, h)
}

// newRecordingOrigin records every request (head and body) before h runs.
func newRecordingOrigin(t *testing.T, h http.HandlerFunc) *origin {
	return startOrigin(t, true, h)
}

func startOrigin(t *testing.T, record bool, h http.HandlerFunc) *origin {
	o := &origin{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }
	}
	o.addr = servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.reqs.Add(1)
		if record {
			o.record(r, true)
		}
		h(w, r)
	}), func(srv *http.Server) {
		srv.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				o.conns.Add(1)
			}
		}
		srv.ErrorLog = discardLog
	})
	return o
}

func (o *origin) record(r *http.Request, body bool) seenRequest {
	s := seenRequest{Method: r.Method, URI: r.RequestURI, Host: r.Host, Proto: r.Proto, Header: r.Header.Clone()}
	if body {
		s.Body, _ = io.ReadAll(r.Body)
	}
	o.mu.Lock()
	o.seen = append(o.seen, s)
	o.mu.Unlock()
	return s
}

func (o *origin) last() seenRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[len(o.seen)-1]
}

// pattern generates n deterministic bytes: a pseudo-random block whose
// length is not a power of two, repeated, so a lost, repeated or reordered
// piece changes the digest. It only copies, which keeps 100 MiB cheap
// under the race detector.
type pattern struct{ n, off int64 }

const patternBlock = 1<<20 + 7

var patternBytes = func() []byte {
	b := make([]byte, patternBlock)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	n := 0
	for n < len(b) {
		n += copy(b[n:], patternBytes[(p.off+int64(n))%patternBlock:])
	}
	p.off += int64(n)
	return n, nil
}

// writePattern writes the first n bytes of the pattern to w in 32 KiB
// writes, counting each in written as it is taken, and stops at the first
// error: an origin that shows how far a slow reader let it get.
func writePattern(w io.Writer, n int64, written *atomic.Int64) error {
	buf := make([]byte, 32<<10)
	p := &pattern{n: n}
	for {
		k, _ := p.Read(buf)
		if k == 0 {
			return nil
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		written.Add(int64(k))
	}
}

func patternSum(n int64) []byte {
	h := sha256.New()
	io.Copy(h, &pattern{n: n})
	return h.Sum(nil)
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
