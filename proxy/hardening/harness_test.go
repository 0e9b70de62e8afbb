//lint:file-ignore SA1019 the well-behaved client is x/net's HTTP/2 Transport: it dials once however many requests wait, and the attacks are measured against a known number of connections.

package hardening

import (
	"bufio"
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// Small limits and timeouts, so that every defence triggers fast.
const (
	tMaxStreams       = 16
	tMaxHeaderList    = 16 << 10
	tMaxEarlyResets   = 50
	tMaxGlitches      = 200
	tHandshakeTimeout = 500 * time.Millisecond
	tH1HeaderTimeout  = 500 * time.Millisecond
	tH1IdleTimeout    = 700 * time.Millisecond
	tH2IdleTimeout    = 700 * time.Millisecond
	tSettingsTimeout  = 700 * time.Millisecond
	tMaxHeadSize      = 8 << 10
	tPoolIdleTimeout  = 300 * time.Millisecond
)

func testH2Config() h2.Config {
	return h2.Config{
		MaxConcurrentStreams: tMaxStreams,
		MaxHeaderListSize:    tMaxHeaderList,
		MaxEarlyResets:       tMaxEarlyResets,
		MaxGlitches:          tMaxGlitches,
		SettingsTimeout:      tSettingsTimeout,
		IdleTimeout:          tH2IdleTimeout,
	}
}

func testH1Config() h1.ServerConfig {
	return h1.ServerConfig{
		Limits:        h1.Limits{MaxHeadSize: tMaxHeadSize},
		HeaderTimeout: tH1HeaderTimeout,
		IdleTimeout:   tH1IdleTimeout,
	}
}

// env is a pollproxy server (two loops, TLS, both front ends, the reverse
// proxy) in front of one origin, torn down at cleanup.
type env struct {
	t     testing.TB
	group *netpoll.Group
	srv   *server.Server
	addr  string
	roots *x509.CertPool
	up    *upstream.Upstream
}

type setup struct {
	loops  int // default 2
	server func(*server.Config)
	proxy  func(*proxy.Config)
}

// startProxy runs the proxy over the named poller backend in front of
// origin.
func startProxy(t testing.TB, backend, origin string, s setup) *env {
	t.Helper()
	loops := s.loops
	if loops <= 0 {
		loops = 2
	}
	up := &upstream.Upstream{Name: origin, Addr: netip.MustParseAddrPort(origin)}
	pcfg := proxy.Config{
		Upstreams:             []*upstream.Upstream{up},
		ConnectTimeout:        time.Second,
		ResponseHeaderTimeout: time.Second,
		ReadTimeout:           time.Second,
		Pool:                  proxy.PoolConfig{IdleTimeout: tPoolIdleTimeout},
		// Failing-origin tests must not mark the only upstream down.
		Health: upstream.Health{MaxFails: -1},
	}
	if s.proxy != nil {
		s.proxy(&pcfg)
	}
	pcfg = pcfg.WithDefaults()
	st := servertest.Start(t, backend, loops, func(l *netpoll.Loop) stream.Handler { return proxy.NewHandler(l, pcfg) }, func(c *server.Config) {
		c.H2, c.H1, c.HandshakeTimeout = testH2Config(), testH1Config(), tHandshakeTimeout
		if s.server != nil {
			s.server(c)
		}
	})
	return &env{t: t, group: st.Group, srv: st.Server, addr: st.Addr, roots: st.Roots, up: up}
}

func (e *env) tlsConfig(protos ...string) *stdtls.Config {
	return &stdtls.Config{RootCAs: e.roots, ServerName: "localhost", NextProtos: protos}
}

// h2Client is a well-behaved client: x/net's HTTP/2 Transport.
func (e *env) h2Client() (*http.Client, *http2.Transport) {
	tr := &http2.Transport{
		DialTLSContext: func(ctx context.Context, network, addr string, _ *stdtls.Config) (net.Conn, error) {
			d := &stdtls.Dialer{Config: e.tlsConfig("h2")}
			return d.DialContext(ctx, "tcp", e.addr)
		},
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, tr
}

func (e *env) url(path string) string { return "https://" + e.addr + path }

// get fetches path with a well-behaved h2 client and returns status and body.
func (e *env) get(path string) (int, string, error) {
	c, tr := e.h2Client()
	defer tr.CloseIdleConnections()
	resp, err := c.Get(e.url(path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// prober is a well-behaved client on its own connection(s) that keeps
// fetching / while an attack runs.
type prober struct {
	ok, fail atomic.Int64
	lastErr  atomic.Value
	stop     chan struct{}
	done     chan struct{}
}

// probe starts a prober; fresh makes it open a new connection (a new TLS
// handshake) for every request.
func (e *env) probe(fresh bool) *prober {
	p := &prober{stop: make(chan struct{}), done: make(chan struct{})}
	c, tr := e.h2Client()
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			if fresh {
				tr.CloseIdleConnections()
			}
			resp, err := c.Get(e.url("/"))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				p.fail.Add(1)
				p.lastErr.Store(err.Error())
			} else {
				p.ok.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return p
}

// check waits for a few more responses (service goes on after the
// attack), stops the prober and asserts that every request got a 200.
func (p *prober) check(t testing.TB) {
	t.Helper()
	target := p.ok.Load() + 3
	eventually(3*time.Second, func() bool { return p.ok.Load() >= target })
	close(p.stop)
	<-p.done
	ok, fail := p.ok.Load(), p.fail.Load()
	t.Logf("well-behaved client: %d ok, %d failed", ok, fail)
	if fail > 0 {
		t.Errorf("well-behaved client failed %d times (last: %v)", fail, p.lastErr.Load())
	}
	if ok < 3 {
		t.Errorf("well-behaved client got only %d responses", ok)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// goodOrigin is a well-behaved HTTP/1.1 origin: "/" answers "ok", "/big"
// answers 8 MiB, "/slow" answers after 300 ms.
func goodOrigin(t testing.TB) string {
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		w.Write(big)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		io.WriteString(w, "slow")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// ---- a raw HTTP/2 client: any frame, any header block ----

type frameEv struct {
	typ    http2.FrameType
	id     uint32
	flags  http2.Flags
	code   http2.ErrCode
	status string
	n      int
	debug  string
	eof    bool
	err    error
}

type rawH2 struct {
	t    testing.TB
	conn *stdtls.Conn
	fr   *http2.Framer

	wmu  sync.Mutex // writes: framer, encoder
	enc  *hpack.Encoder
	hbuf bytes.Buffer

	mu     sync.Mutex
	evs    []frameEv
	cursor int
	signal chan struct{}
	closed chan struct{}
}

// dialH2 opens a TLS connection with ALPN h2, writes the preface and
// SETTINGS, and reads frames on a goroutine (acknowledging SETTINGS).
func (e *env) dialH2(t testing.TB, settings ...http2.Setting) *rawH2 {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := stdtls.DialWithDialer(d, "tcp", e.addr, e.tlsConfig("h2"))
	if err != nil {
		t.Fatal(err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN %q", p)
	}
	rc := &rawH2{t: t, conn: conn, signal: make(chan struct{}, 1), closed: make(chan struct{})}
	rc.fr = http2.NewFramer(conn, conn)
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rc.fr.MaxHeaderListSize = 1 << 20
	rc.enc = hpack.NewEncoder(&rc.hbuf)
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	go rc.read()
	// Wait for the server's SETTINGS (acknowledged by the reader) so that
	// no ack is written in the middle of a header block later.
	if ev, ok := rc.wait(3*time.Second, func(ev frameEv) bool {
		return ev.typ == http2.FrameSettings && ev.flags&http2.FlagSettingsAck == 0
	}); !ok {
		t.Fatalf("no SETTINGS from the server: %+v", ev)
	}
	rc.mu.Lock()
	rc.cursor = 0
	rc.mu.Unlock()
	return rc
}

func (rc *rawH2) push(ev frameEv) {
	rc.mu.Lock()
	rc.evs = append(rc.evs, ev)
	rc.mu.Unlock()
	select {
	case rc.signal <- struct{}{}:
	default:
	}
}

func (rc *rawH2) read() {
	defer close(rc.closed)
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			rc.push(frameEv{eof: true, err: err})
			return
		}
		ev := frameEv{typ: f.Header().Type, id: f.Header().StreamID, flags: f.Header().Flags}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			ev.code = f.ErrCode
			ev.debug = string(f.DebugData())
		case *http2.RSTStreamFrame:
			ev.code = f.ErrCode
		case *http2.MetaHeadersFrame:
			ev.status = f.PseudoValue("status")
		case *http2.DataFrame:
			ev.n = len(f.Data())
		case *http2.SettingsFrame:
			if !f.IsAck() {
				rc.wmu.Lock()
				rc.conn.SetWriteDeadline(time.Now().Add(time.Second))
				rc.fr.WriteSettingsAck()
				rc.wmu.Unlock()
			}
		}
		rc.push(ev)
	}
}

// wait returns the next frame event (after the cursor) matching pred.
func (rc *rawH2) wait(timeout time.Duration, pred func(frameEv) bool) (frameEv, bool) {
	deadline := time.After(timeout)
	for {
		rc.mu.Lock()
		for rc.cursor < len(rc.evs) {
			ev := rc.evs[rc.cursor]
			rc.cursor++
			if pred(ev) {
				rc.mu.Unlock()
				return ev, true
			}
			if ev.eof {
				rc.cursor--
				rc.mu.Unlock()
				return ev, false
			}
		}
		rc.mu.Unlock()
		select {
		case <-rc.signal:
		case <-deadline:
			return frameEv{}, false
		}
	}
}

// all returns every event seen so far.
func (rc *rawH2) all() []frameEv {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]frameEv(nil), rc.evs...)
}

// expectGoAway waits for a GOAWAY, asserts its code, and then for the
// connection to be closed by the server.
func (rc *rawH2) expectGoAway(code http2.ErrCode, timeout time.Duration) frameEv {
	rc.t.Helper()
	ev, ok := rc.wait(timeout, func(ev frameEv) bool { return ev.typ == http2.FrameGoAway })
	if !ok {
		rc.t.Fatalf("no GOAWAY within %v (last event %+v)", timeout, ev)
	}
	if ev.code != code {
		rc.t.Fatalf("GOAWAY %v (%q), want %v", ev.code, ev.debug, code)
	}
	rc.expectClosed(3 * time.Second)
	return ev
}

func (rc *rawH2) expectClosed(timeout time.Duration) {
	rc.t.Helper()
	select {
	case <-rc.closed:
	case <-time.After(timeout):
		rc.t.Fatalf("connection still open %v after the cut", timeout)
	}
}

// expectRST waits for RST_STREAM on id and asserts its code.
func (rc *rawH2) expectRST(id uint32, code http2.ErrCode) {
	rc.t.Helper()
	ev, ok := rc.wait(3*time.Second, func(ev frameEv) bool {
		return ev.id == id && (ev.typ == http2.FrameRSTStream || ev.typ == http2.FrameHeaders)
	})
	if !ok || ev.typ != http2.FrameRSTStream {
		rc.t.Fatalf("stream %d: got %+v, want RST_STREAM %v", id, ev, code)
	}
	if ev.code != code {
		rc.t.Fatalf("stream %d: RST_STREAM %v, want %v", id, ev.code, code)
	}
}

// response waits for the response of stream id: its status, or the
// RST_STREAM code, or a GOAWAY.
func (rc *rawH2) response(id uint32) frameEv {
	rc.t.Helper()
	ev, ok := rc.wait(5*time.Second, func(ev frameEv) bool {
		return (ev.id == id && (ev.typ == http2.FrameRSTStream || ev.typ == http2.FrameHeaders)) ||
			ev.typ == http2.FrameGoAway
	})
	if !ok {
		rc.t.Fatalf("stream %d: no response (last %+v)", id, ev)
	}
	return ev
}

// block hpack-encodes name/value pairs as given: nothing is checked.
// Call with wmu held (the encoder's table follows the send order).
func (rc *rawH2) block(kv ...string) []byte {
	rc.hbuf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), rc.hbuf.Bytes()...)
}

// headers sends one HEADERS frame with END_HEADERS carrying kv.
func (rc *rawH2) headers(id uint32, endStream bool, kv ...string) error {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return rc.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: rc.block(kv...), EndStream: endStream, EndHeaders: true,
	})
}

// do runs f with the write lock held and a write deadline set.
func (rc *rawH2) do(f func(fr *http2.Framer) error) error {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return f(rc.fr)
}

// flood calls write(i) up to n times from a goroutine until a write
// fails (the server cut the connection); it returns when done.
func (rc *rawH2) flood(n int, write func(i int) error) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			select {
			case <-rc.closed:
				return
			default:
			}
			if write(i) != nil {
				return
			}
		}
	}()
	return done
}

func getReq(e *env, path string, extra ...string) []string {
	return append([]string{":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", path}, extra...)
}

// ---- raw HTTP/1.1 over TLS ----

func (e *env) dialH1(t testing.TB) *stdtls.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := stdtls.DialWithDialer(d, "tcp", e.addr, e.tlsConfig("http/1.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readStatus reads one response from conn and returns its status code.
func readStatus(conn net.Conn, timeout time.Duration) (int, error) {
	conn.SetReadDeadline(time.Now().Add(timeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitClosed reports whether the peer closed conn within timeout.
func waitClosed(conn net.Conn, timeout time.Duration) error {
	conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 4096)
	for {
		_, err := conn.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return err
		}
		return nil
	}
}

// eventually is servertest.Within: it reports whether cond held within
// timeout.
func eventually(timeout time.Duration, cond func() bool) bool {
	return servertest.Within(timeout, cond)
}

// stdtlsDial completes a TLS handshake with the given ALPN protocol and
// sends nothing more.
func stdtlsDial(e *env, proto string) (*stdtls.Conn, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return stdtls.DialWithDialer(d, "tcp", e.addr, e.tlsConfig(proto))
}
