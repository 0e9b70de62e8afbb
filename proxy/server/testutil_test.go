//lint:file-ignore SA1019 x/net's http2.Transport dials one connection for concurrent requests (net/http's dialed a second under -race); these tests count or forbid dials.

package server_test

import (
	"context"
	"crypto/sha256"
	stdtls "crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// env is a running group and server over real loopback sockets.
type env struct {
	t        *testing.T
	group    *netpoll.Group
	srv      *server.Server
	addr     string
	roots    *x509.CertPool
	certFile string
}

// startEnv starts loops loops over backend and a TLS server on them
// serving what newHandler returns; everything is torn down at cleanup.
func startEnv(t *testing.T, backend string, loops int, newHandler func(*netpoll.Loop) stream.Handler, edit func(*server.Config)) *env {
	t.Helper()
	st := servertest.Start(t, backend, loops, newHandler, edit)
	return &env{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, certFile: st.CertFile}
}

func (e *env) tlsConfig(protos ...string) *stdtls.Config {
	return &stdtls.Config{RootCAs: e.roots, ServerName: "localhost", NextProtos: protos}
}

// h2Client is the x/net HTTP/2 client over TLS with ALPN; dials counts the
// connections it opened.
func (e *env) h2Client(dials *atomic.Int32, edit func(*stdtls.Config)) *http.Client {
	tr := &http2.Transport{
		StrictMaxConcurrentStreams: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *stdtls.Config) (net.Conn, error) {
			if dials != nil {
				dials.Add(1)
			}
			cfg := e.tlsConfig("h2")
			if edit != nil {
				edit(cfg)
			}
			d := &stdtls.Dialer{Config: cfg}
			return d.DialContext(ctx, "tcp", e.addr)
		},
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// h1Client is net/http's client restricted to HTTP/1.1.
func (e *env) h1Client(dials *atomic.Int32) *http.Client {
	tr := &http.Transport{
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *stdtls.Conn) http.RoundTripper{},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials != nil {
				dials.Add(1)
			}
			d := &stdtls.Dialer{Config: e.tlsConfig("http/1.1")}
			return d.DialContext(ctx, "tcp", e.addr)
		},
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func (e *env) url(path string) string { return "https://" + e.addr + path }

// loopStats sums the poller counters of every loop.
func (e *env) loopStats() netpoll.Stats {
	var sum netpoll.Stats
	for _, s := range e.group.Stats() {
		sum.Adds += s.Adds
		sum.Mods += s.Mods
		sum.Dels += s.Dels
		sum.Events += s.Events
		sum.Descriptors += s.Descriptors
	}
	return sum
}

// pattern is a deterministic, non-repeating-looking body generator.
type pattern struct {
	n, off int64
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	for i := range b {
		x := p.off + int64(i)
		b[i] = byte(x*7 + x>>10)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func patternSum(n int64) [32]byte {
	h := sha256.New()
	io.Copy(h, &pattern{n: n})
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}
