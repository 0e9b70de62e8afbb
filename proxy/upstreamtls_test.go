package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// testCA is a certificate authority for origins and clients of a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a certificate for hosts (a server's) or for cn (a
// client's), valid until notAfter.
func (ca *testCA) issue(t *testing.T, cn string, hosts []string, notAfter time.Time, client bool) stdtls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return stdtls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// writePEM writes cert (and its key) to files in dir.
func writePEM(t *testing.T, cert stdtls.Certificate) (certFile, keyFile string) {
	t.Helper()
	c, k, err := pptls.EncodePEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, c, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// tlsOrigin is a Go HTTPS origin on loopback that counts its connections
// and full handshakes.
type tlsOrigin struct {
	*origin
	mu      sync.Mutex
	resumed []bool   // per request: the connection resumed a session
	peers   []string // per request: the client certificate's name, or ""
}

func startTLSOrigin(t *testing.T, cfg *stdtls.Config, h http.HandlerFunc) *tlsOrigin {
	return startTLSOriginWith(t, cfg, h, nil)
}

// startTLSOriginWith is startTLSOrigin with edit applied to the server
// before it starts (nil: none).
func startTLSOriginWith(t *testing.T, cfg *stdtls.Config, h http.HandlerFunc, edit func(*http.Server)) *tlsOrigin {
	o := &tlsOrigin{origin: &origin{}}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+r.Host) }
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.reqs.Add(1)
		peer := ""
		if len(r.TLS.PeerCertificates) > 0 {
			peer = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		o.mu.Lock()
		o.resumed = append(o.resumed, r.TLS.DidResume)
		o.peers = append(o.peers, peer)
		o.mu.Unlock()
		h(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	srv.Config.ErrorLog = discardLog
	srv.TLS = cfg
	if edit != nil {
		edit(srv.Config)
	}
	srv.StartTLS()
	o.addr = srv.Listener.Addr().String()
	t.Cleanup(srv.Close)
	return o
}

// upstreamTLS is an HTTPS transport for the test: its own handshake pool
// and, when logTo is set, a failure log writing there; flush waits for
// the log's lines.
func upstreamTLS(t *testing.T, cfg *stdtls.Config, logTo io.Writer) (tr *upstream.TLS, flush func()) {
	pool := pptls.NewHandshakePool(4, 64, 0)
	t.Cleanup(pool.Close)
	var fl *upstream.FailureLog
	flush = func() {}
	if logTo != nil {
		fl = upstream.NewFailureLog(slog.New(slog.NewTextHandler(logTo, nil)))
		var once sync.Once
		flush = func() { once.Do(fl.Close) }
		t.Cleanup(flush)
	}
	if cfg.NextProtos == nil {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return upstream.NewTLS(cfg, 0, pool, fl), flush
}

// TestTLSUpstream: requests over h2 and h1 reach a Go HTTPS origin
// verified against a trust pool, all over one kept-alive connection, with
// Host set to the upstream as Caddy does; large bodies go both ways
// intact.
func TestTLSUpstream(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	const down = 16 << 20
	o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}},
		func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/upload":
				h := sha256.New()
				n, err := io.Copy(h, r.Body)
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
			case "/download":
				io.Copy(w, &pattern{n: down})
			default:
				io.WriteString(w, "ok "+r.Host)
			}
		})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o.conns.Store(0)
		up := upstreamAt(t, o.addr)
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		cfg := proxy.Config{Upstreams: []*upstream.Upstream{up}, TLS: tr}
		cfg.HeaderUp = []route.HeaderOp{hostUpstreamOp(t)}
		e := startProxy(t, backend, 1, cfg)
		for _, c := range []struct {
			name string
			cl   *http.Client
		}{{"h2", e.h2Client(nil)}, {"h1", e.h1Client()}} {
			for i := range 20 {
				res, err := c.cl.Get(e.url("/x"))
				if err != nil {
					t.Fatalf("%s request %d: %v", c.name, i, err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || string(b) != "ok "+o.addr {
					t.Fatalf("%s request %d: %d %q, want 200 %q", c.name, i, res.StatusCode, b, "ok "+o.addr)
				}
			}
			const upN = 8<<20 + 3
			res, err := c.cl.Post(e.url("/upload"), "application/octet-stream", &pattern{n: upN})
			if err != nil {
				t.Fatalf("%s upload: %v", c.name, err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if want := fmt.Sprintf("%d %x", upN, patternSum(upN)); string(b) != want {
				t.Fatalf("%s upload: origin got %q, want %q", c.name, b, want)
			}
			res, err = c.cl.Get(e.url("/download"))
			if err != nil {
				t.Fatalf("%s download: %v", c.name, err)
			}
			h := sha256.New()
			n, err := io.Copy(h, res.Body)
			res.Body.Close()
			if err != nil || n != down || !bytes.Equal(h.Sum(nil), patternSum(down)) {
				t.Fatalf("%s download: %d bytes, %v; want %d intact", c.name, n, err, down)
			}
		}
		if n := o.conns.Load(); n != 1 {
			t.Fatalf("origin saw %d connections for every request in turn, want 1 kept alive", n)
		}
		if s := up.Stats(); s.Connects != 1 || s.Reuses != s.Requests-1 {
			t.Fatalf("upstream stats %+v: want one connect, every other request reused", s)
		}
	})
}

// hostUpstreamOp is the Host edit the configuration adds for HTTPS
// upstreams (config.Proxy.ProxyConfig).
func hostUpstreamOp(t *testing.T) route.HeaderOp {
	op, err := route.ParseUpstreamHeaderOp([]string{"Host", "{upstream_hostport}"})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestTLSUpstreamResumes: a new connection to the origin resumes the
// session of the one before (the transport's session cache), on every
// loop.
func TestTLSUpstreamResumes(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}}, nil)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o.mu.Lock()
		o.resumed = nil
		o.mu.Unlock()
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		// One request per connection: each request is a new handshake.
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr,
			Pool: proxy.PoolConfig{MaxRequests: 1}})
		cl := e.h1Client()
		for i := range 4 {
			res, err := cl.Get(e.url("/"))
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("request %d: status %d", i, res.StatusCode)
			}
		}
		o.mu.Lock()
		got := append([]bool(nil), o.resumed...)
		o.mu.Unlock()
		if len(got) != 4 || got[0] {
			t.Fatalf("resumed per request %v: want 4, the first a full handshake", got)
		}
		for i, r := range got[1:] {
			if !r {
				t.Fatalf("request %d: a full handshake, want the session resumed (%v)", i+2, got)
			}
		}
	})
}

// TestTLSUpstreamVerifyFails: a certificate that does not verify — from
// an unknown CA, for another name, expired — is a 502 to the client, one
// log line naming the upstream and the reason, an upstream failure of
// reason tls, and a passive health failure; never a silent accept.
func TestTLSUpstreamVerifyFails(t *testing.T) {
	ca, other := newTestCA(t, "origin CA"), newTestCA(t, "unknown CA")
	cases := []struct {
		name   string
		cert   stdtls.Certificate
		reason string
	}{
		{"unknown CA", other.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false), "unknown authority"},
		{"wrong name", ca.issue(t, "origin", []string{"127.0.0.2"}, time.Now().Add(time.Hour), false), "is valid for 127.0.0.2, not 127.0.0.1"},
		{"expired", ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(-time.Hour), false), "expired"},
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{c.cert}}, nil)
				var logged servertest.SyncBuffer
				tr, flush := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, &logged)
				rec := &reasonRecorder{}
				up := upstreamAt(t, o.addr)
				e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, TLS: tr, Observer: rec,
					Health: upstream.Health{MaxFails: 1, FailDuration: time.Hour}})
				res, err := e.h2Client(nil).Get(e.url("/"))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 502 || !strings.Contains(string(b), c.reason) {
					t.Fatalf("status %d %q, want 502 naming %q", res.StatusCode, b, c.reason)
				}
				l, failures := rec.take(t)
				if l.Reason != observe.ReasonTLS || len(failures) != 1 || failures[0] != observe.ReasonTLS {
					t.Fatalf("reported %v, failures %v: want one of reason tls", l.Reason, failures)
				}
				if up.Healthy(time.Now()) {
					t.Fatal("the upstream is still healthy after its certificate failed")
				}
				if n := o.reqs.Load(); n != 0 {
					t.Fatalf("the origin served %d requests", n)
				}
				flush()
				lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], "upstream="+o.addr) || !strings.Contains(lines[0], c.reason) {
					t.Fatalf("log %q: want one line naming upstream %s and %q", logged.String(), o.addr, c.reason)
				}
			})
		}
	})
}

// TestTLSUpstreamInsecure: tls_insecure_skip_verify accepts a certificate
// nothing vouches for.
func TestTLSUpstreamInsecure(t *testing.T) {
	other := newTestCA(t, "unknown CA")
	o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{other.issue(t, "origin", []string{"other.example"}, time.Now().Add(-time.Hour), false)}}, nil)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{InsecureSkipVerify: true}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr})
		res, err := e.h1Client().Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d, want 200", res.StatusCode)
		}
	})
}

// TestTLSUpstreamClientAuth: an origin that requires a client
// certificate gets the transport's (tls_client_auth); without one it
// refuses, and the client gets a 502.
func TestTLSUpstreamClientAuth(t *testing.T) {
	ca, clients := newTestCA(t, "origin CA"), newTestCA(t, "client CA")
	o := startTLSOrigin(t, &stdtls.Config{
		Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)},
		ClientAuth:   stdtls.RequireAndVerifyClientCert, ClientCAs: clients.pool,
	}, nil)
	clientCert := clients.issue(t, "pollproxy client", nil, time.Now().Add(time.Hour), true)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, withCert := range []bool{true, false} {
			cfg := &stdtls.Config{RootCAs: ca.pool}
			if withCert {
				cfg.Certificates = []stdtls.Certificate{clientCert}
			}
			tr, _ := upstreamTLS(t, cfg, nil)
			rec := &reasonRecorder{}
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr, Observer: rec})
			before := o.reqs.Load()
			res, err := e.h2Client(nil).Get(e.url("/"))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if !withCert {
				if res.StatusCode != 502 || o.reqs.Load() != before {
					t.Fatalf("without a client certificate: status %d, origin served %d; want 502, none", res.StatusCode, o.reqs.Load()-before)
				}
				if _, failures := rec.take(t); len(failures) != 1 {
					t.Fatalf("failures %v, want one", failures)
				}
				continue
			}
			o.mu.Lock()
			peer := o.peers[len(o.peers)-1]
			o.mu.Unlock()
			if res.StatusCode != 200 || peer != "pollproxy client" {
				t.Fatalf("with a client certificate: status %d, origin saw %q", res.StatusCode, peer)
			}
		}
	})
}

// TestTLSUpstreamNginx: nginx with ssl as the origin. Many h2 requests
// share kept-alive TLS connections; with one request per connection the
// next handshakes resume (nginx's $ssl_session_reused); and with
// proxy_protocol v2 the PROXY header precedes the ClientHello, which
// nginx (listen … ssl proxy_protocol) reads before its handshake.
func TestTLSUpstreamNginx(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	certFile, keyFile := writePEM(t, ca.issue(t, "nginx", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false))
	ssl := fmt.Sprintf("ssl_certificate %s; ssl_certificate_key %s; ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:tls:1m; ", certFile, keyFile)
	plain := startNginxServer(t, "ssl", ssl+`location / { return 200 "$ssl_protocol $ssl_session_reused $connection"; }`)
	pp := startNginxServer(t, "ssl proxy_protocol", ssl+`location / { return 200 "$proxy_protocol_addr $ssl_protocol"; }`)
	get := func(t *testing.T, cl *http.Client, e *proxyEnv) string {
		t.Helper()
		res, err := cl.Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d %q", res.StatusCode, b)
		}
		return string(b)
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Run("keepalive", func(t *testing.T) {
			tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
			up := upstreamAt(t, plain)
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, TLS: tr})
			cl := e.h2Client(nil)
			conns := map[string]bool{}
			for i := range 200 {
				f := strings.Fields(get(t, cl, e))
				if len(f) != 3 || f[0] != "TLSv1.3" {
					t.Fatalf("request %d: nginx answered %q", i, f)
				}
				conns[f[2]] = true
			}
			if len(conns) != 1 {
				t.Fatalf("200 requests in turn over %d nginx connections, want 1", len(conns))
			}
		})
		t.Run("resume", func(t *testing.T) {
			tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, plain)}, TLS: tr,
				Pool: proxy.PoolConfig{MaxRequests: 1}})
			cl := e.h1Client()
			var reused []string
			for range 3 {
				reused = append(reused, strings.Fields(get(t, cl, e))[1])
			}
			if reused[0] != "." || reused[1] != "r" || reused[2] != "r" {
				t.Fatalf("nginx's $ssl_session_reused per connection %q, want . r r", reused)
			}
		})
		t.Run("proxy_protocol", func(t *testing.T) {
			tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, pp)}, TLS: tr,
				Pool: proxy.PoolConfig{ProxyProtocol: 2}})
			if got := get(t, e.h1Client(), e); got != "127.0.0.1 TLSv1.3" {
				t.Fatalf("nginx answered %q, want the client's address and TLS 1.3", got)
			}
		})
	})
}

// TestTLSUpstreamWebSocket: WebSockets through pollproxy to a wss origin,
// from an HTTP/1.1 Upgrade and from an h2 extended CONNECT (RFC 8441):
// the tunnel runs over the TLS connection, both ways, and the client's
// close reaches the origin.
func TestTLSUpstreamWebSocket(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	ended := make(chan error, 4)
	o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}},
		echoHandler(ended))
	originClosed := func(t *testing.T, ctx context.Context) {
		t.Helper()
		select {
		case err := <-ended:
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("the origin's read ended with %v, want the client's close", err)
			}
		case <-ctx.Done():
			t.Fatal("the origin never saw the close")
		}
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t.Run("h1", func(t *testing.T) {
			c := wsDial(t, ctx, e, e.h1Client(), "/ws")
			for i := range 200 {
				msg := bytes.Repeat([]byte{byte(i)}, 1+i*331)
				if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				_, got, err := c.Read(ctx)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("read %d: %d bytes, %v", i, len(got), err)
				}
			}
			if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
				t.Fatalf("close: %v", err)
			}
			originClosed(t, ctx)
		})
		t.Run("h2", func(t *testing.T) {
			c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
			c.connect(1, "websocket", "sec-websocket-version", "13")
			if st, _ := c.status(1); st != "200" {
				t.Fatalf("status %s", st)
			}
			var buf []byte
			for i := range 200 {
				msg := fmt.Sprintf("h2 message %d %s", i, strings.Repeat("y", i*37))
				c.fr.WriteData(1, false, wsFrame(1, []byte(msg)))
				for {
					op, p, rest, ok := wsParse(buf)
					if ok {
						if op != 1 || string(p) != msg {
							t.Fatalf("echo %d: op %d, %d bytes", i, op, len(p))
						}
						buf = rest
						break
					}
					d, end, rst := c.readData(1, 1)
					if end || rst != 0 {
						t.Fatalf("echo %d: stream ended (rst %v)", i, rst)
					}
					buf = append(buf, d...)
				}
			}
			c.fr.WriteData(1, true, wsFrame(8, []byte{0x03, 0xe8}))
			if _, end, rst := c.readData(1, -1); !end || rst != 0 {
				t.Fatalf("no END_STREAM after the close handshake (rst %v)", rst)
			}
			originClosed(t, ctx)
		})
	})
}

// TestTLSUpstreamSlowClient: TestSlowClientDownload over a TLS origin:
// the origin is held back by the client's window, through the record
// layer, not buffered by pollproxy.
func TestTLSUpstreamSlowClient(t *testing.T) {
	size := int64(64 << 20)
	if raceEnabled {
		size = 16 << 20
	}
	ca := newTestCA(t, "origin CA")
	cert := ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		slowClientDownload(t, size, func(h http.HandlerFunc) *proxyEnv {
			o := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{cert}}, h)
			tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
			return startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr})
		})
	})
}

// TestTLSUpstreamFailover: a request whose first upstream's certificate
// does not verify moves to the next upstream (lb_retries), as after a
// refused connect; and an origin that never finishes its handshake is a
// 504 once tls_timeout passed.
func TestTLSUpstreamFailover(t *testing.T) {
	ca, other := newTestCA(t, "origin CA"), newTestCA(t, "unknown CA")
	bad := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{other.issue(t, "bad", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}}, nil)
	good := startTLSOrigin(t, &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "good", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}}, nil)
	// silent takes connections and never answers a ClientHello.
	silent := servertest.ServeConns(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, bad.addr), upstreamAt(t, good.addr)},
			TLS: tr, Policy: proxy.First, Retries: 1})
		res, err := e.h1Client().Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || bad.reqs.Load() != 0 || good.reqs.Load() == 0 {
			t.Fatalf("status %d, requests served by the bad origin %d, the good one %d: want 200 from the good one",
				res.StatusCode, bad.reqs.Load(), good.reqs.Load())
		}

		tr2, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		tr2.Timeout = 50 * time.Millisecond
		e2 := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, silent)}, TLS: tr2})
		res, err = e2.h1Client().Get(e2.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 504 {
			t.Fatalf("an origin silent in its handshake: status %d, want 504", res.StatusCode)
		}
	})
}

// TestTLSUpstreamServerName: tls_server_name names the server an upstream
// given by address is verified for, and is the SNI the origin sees.
func TestTLSUpstreamServerName(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	var sni sync.Map
	o := startTLSOrigin(t, &stdtls.Config{
		Certificates: []stdtls.Certificate{ca.issue(t, "app", []string{"app.internal"}, time.Now().Add(time.Hour), false)},
		GetConfigForClient: func(hello *stdtls.ClientHelloInfo) (*stdtls.Config, error) {
			sni.Store(hello.ServerName, true)
			return nil, nil
		},
	}, nil)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool, ServerName: "app.internal"}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, TLS: tr})
		res, err := e.h1Client().Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if _, ok := sni.Load("app.internal"); res.StatusCode != 200 || !ok {
			t.Fatalf("status %d, SNI app.internal seen %v: want 200 with that name", res.StatusCode, ok)
		}
	})
}

// TestTLSUpstreamClosedInHandshake: an origin that reads the ClientHello
// and closes the connection without an alert is a 502 whose reason says
// so.
func TestTLSUpstreamClosedInHandshake(t *testing.T) {
	closing := servertest.ServeConns(t, func(c net.Conn) {
		var hdr [5]byte
		if _, err := io.ReadFull(c, hdr[:]); err == nil {
			io.CopyN(io.Discard, c, int64(hdr[3])<<8|int64(hdr[4]))
		}
	})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{InsecureSkipVerify: true}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, closing)}, TLS: tr})
		res, err := e.h1Client().Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 502 || !strings.Contains(string(b), "closed the connection during the TLS handshake") {
			t.Fatalf("%d %q, want a 502 saying the origin closed during the handshake", res.StatusCode, b)
		}
	})
}

// TestTLSUpstreamTunnelHalfClose: TestTunnelH1HalfClose's client-first
// case over a TLS origin. The client's half-close reaches the origin as
// a close_notify and then the socket's FIN, in that order, and the
// origin's answer still comes back through the tunnel.
func TestTLSUpstreamTunnelHalfClose(t *testing.T) {
	ca := newTestCA(t, "origin CA")
	cfg := &stdtls.Config{Certificates: []stdtls.Certificate{ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false)}}
	sawFIN := make(chan error, 1)
	addr := servertest.ServeConns(t, func(raw net.Conn) {
		raw.SetDeadline(time.Now().Add(20 * time.Second))
		ec := &eofConn{Conn: raw}
		c := stdtls.Server(ec, cfg)
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", req.Header.Get("Upgrade"))
		// crypto/tls reports the close_notify as io.EOF, and a bare FIN
		// at a record's end as io.EOF too: only the socket's reads tell
		// them apart. The alert ends the stream before the socket does.
		all, err := io.ReadAll(br)
		if err != nil {
			sawFIN <- fmt.Errorf("reading the client's bytes: %v", err)
			return
		}
		if ec.eof {
			sawFIN <- fmt.Errorf("the socket ended with no close_notify before it")
			return
		}
		// After the alert, the socket's own end: a read of the raw
		// connection finds EOF, not more bytes.
		var b [1]byte
		if n, err := raw.Read(b[:]); n != 0 || err != io.EOF {
			sawFIN <- fmt.Errorf("after close_notify the socket read %d bytes, %v; want EOF", n, err)
			return
		}
		sawFIN <- nil
		fmt.Fprintf(c, "got %d bytes: %s", len(all), all)
		c.CloseWrite()
		raw.(*net.TCPConn).CloseWrite()
	})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}, TLS: tr})
		conn, br := rawUpgrade(t, e, "x-test", "")
		io.WriteString(conn, "ping pong")
		tc := conn.(*stdtls.Conn)
		if err := tc.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		tc.NetConn().(*net.TCPConn).CloseWrite()
		if err := <-sawFIN; err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(br)
		if err != nil {
			t.Fatalf("read after our half-close: %v", err)
		}
		if string(got) != "got 9 bytes: ping pong" {
			t.Fatalf("got %q", got)
		}
	})
}

// eofConn notes whether a read of its connection found EOF.
type eofConn struct {
	net.Conn
	eof bool
}

func (c *eofConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}
