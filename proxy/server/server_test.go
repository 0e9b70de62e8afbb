package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestH2Basics: GET and HEAD over real h2 with ALPN.
func TestH2Basics(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 2, r.forLoop, nil)
		var dials atomic.Int32
		cl := e.h2Client(&dials, nil)
		for i := 0; i < 3; i++ {
			_, b, res := servertest.Get(t, cl, e.url("/hello"))
			if res.StatusCode != 200 || res.ProtoMajor != 2 || b != string(smallBody) ||
				res.Header.Get("content-type") != "text/plain" || res.TLS.NegotiatedProtocol != "h2" {
				t.Fatalf("GET: %d %s %q %v", res.StatusCode, res.Proto, b, res.Header)
			}
		}
		res, err := cl.Head(e.url("/big"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || len(b) != 0 || res.ContentLength != bigSize {
			t.Fatalf("HEAD: %d body %d bytes content-length %d", res.StatusCode, len(b), res.ContentLength)
		}
		if n := dials.Load(); n != 1 {
			t.Fatalf("%d connections for sequential requests, want 1", n)
		}
	})
}

// TestH2EchoLarge: a 10 MiB upload echoed back streams through windows;
// neither the echo handler nor the process holds anything near the body.
func TestH2EchoLarge(t *testing.T) {
	const size = 10 << 20
	want := patternSum(size)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		// Windows fixed at the default 2 MiB (no autotuning), so that is
		// the bound; autotuning's own ceiling is tested in proxy/h2.
		e := startEnv(t, backend, 2, r.forLoop, func(c *server.Config) { c.H2.MaxConnWindow = 2 << 20 })
		cl := e.h2Client(nil, nil)
		hw := servertest.WatchHeap(t)
		req, _ := http.NewRequest("POST", e.url("/echo"), &pattern{n: size})
		req.ContentLength = size
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, res.Body)
		res.Body.Close()
		growth := hw.Stop()
		if err != nil || n != size || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("echo: %d bytes, err %v, digest match %v", n, err, bytes.Equal(h.Sum(nil), want[:]))
		}
		t.Logf("10 MiB echo: peak heap growth %.1f MiB, echo held at most %d KiB", float64(growth)/(1<<20), r.maxPending.Load()>>10)
		if max := r.maxPending.Load(); max > 2<<20 {
			t.Fatalf("echo held %d bytes: the client's window does not bound it", max)
		}
		// The client side (x/net buffers up to its 4 MiB stream window) is
		// in this process too; what matters is that the body is not held whole.
		if growth > size*3/4 {
			t.Fatalf("heap grew by %d bytes for a %d-byte echo", growth, size)
		}
	})
}

// TestH2ConcurrentStreams: 100 streams open at once on one connection
// (the barrier answers none until all 100 are there).
func TestH2ConcurrentStreams(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 2, r.forLoop, nil)
		var dials atomic.Int32
		cl := e.h2Client(&dials, nil)
		servertest.Get(t, cl, e.url("/warm")) // the connection and its SETTINGS first
		const n = 100
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := cl.Get(e.url(fmt.Sprintf("/barrier?n=%d", n)))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != 200 || string(b) != "ok" {
					errs <- fmt.Errorf("status %d body %q err %v", res.StatusCode, b, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if d := dials.Load(); d != 1 {
			t.Fatalf("%d connections, want 1", d)
		}
	})
}

// TestH2LargeResponseSlowReader: 8 MiB read in small pieces with pauses
// arrives intact (the server waits on flow control rather than failing).
func TestH2LargeResponseSlowReader(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		cl := e.h2Client(nil, nil)
		res, err := cl.Get(e.url("/big"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		h := sha256.New()
		buf := make([]byte, 256<<10)
		total := 0
		for i := 0; ; i++ {
			n, err := io.ReadFull(res.Body, buf)
			h.Write(buf[:n])
			total += n
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if i%4 == 0 {
				// Real time: the client's own pace, a slow reader's.
				time.Sleep(20 * time.Millisecond)
			}
		}
		want := sha256.Sum256(bigBody())
		if total != bigSize || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("got %d bytes (want %d), digest match %v", total, bigSize, bytes.Equal(h.Sum(nil), want[:]))
		}
	})
}

// TestH1KeepAliveAndChunked: HTTP/1.1 over TLS reuses its connection and
// streams a chunked upload back.
func TestH1KeepAliveAndChunked(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 2, r.forLoop, nil)
		var dials atomic.Int32
		cl := e.h1Client(&dials)
		for i := 0; i < 5; i++ {
			_, b, res := servertest.Get(t, cl, e.url("/hello"))
			if res.StatusCode != 200 || res.ProtoMajor != 1 || b != string(smallBody) || res.TLS.NegotiatedProtocol != "http/1.1" {
				t.Fatalf("GET: %d %s %q", res.StatusCode, res.Proto, b)
			}
		}
		const size = 3<<20 + 17
		// An io.Reader without a length: net/http sends it chunked.
		req, _ := http.NewRequest("POST", e.url("/echo"), io.MultiReader(&pattern{n: size}))
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, res.Body)
		res.Body.Close()
		want := patternSum(size)
		if err != nil || n != size || !bytes.Equal(h.Sum(nil), want[:]) || len(res.TransferEncoding) == 0 {
			t.Fatalf("chunked echo: %d bytes err %v te %v", n, err, res.TransferEncoding)
		}
		servertest.Get(t, cl, e.url("/after"))
		if d := dials.Load(); d != 1 {
			t.Fatalf("%d connections for keep-alive requests, want 1", d)
		}
		if r.echoes.Load() != 1 {
			t.Fatalf("echo handler ran %d times", r.echoes.Load())
		}
	})
}

// TestTLSVersions: TLS 1.2 and TLS 1.3 clients both get h2.
func TestTLSVersions(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		for _, v := range []uint16{stdtls.VersionTLS12, stdtls.VersionTLS13} {
			cl := e.h2Client(nil, func(c *stdtls.Config) { c.MinVersion, c.MaxVersion = v, v })
			_, b, res := servertest.Get(t, cl, e.url("/hello"))
			if res.TLS.Version != v || res.StatusCode != 200 || b != string(smallBody) {
				t.Fatalf("version %x: negotiated %x, status %d", v, res.TLS.Version, res.StatusCode)
			}
			h1 := e.h1Client(nil)
			h1.Transport.(*http.Transport).DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				cfg := e.tlsConfig("http/1.1")
				cfg.MinVersion, cfg.MaxVersion = v, v
				return (&stdtls.Dialer{Config: cfg}).DialContext(ctx, "tcp", e.addr)
			}
			_, _, res = servertest.Get(t, h1, e.url("/hello"))
			if res.TLS.Version != v || res.StatusCode != 200 {
				t.Fatalf("h1 version %x: negotiated %x", v, res.TLS.Version)
			}
		}
		// Below the floor: TLS 1.1 is refused.
		_, err := stdtls.Dial("tcp", e.addr, &stdtls.Config{RootCAs: e.roots, ServerName: "localhost", MaxVersion: stdtls.VersionTLS11})
		if err == nil {
			t.Fatal("TLS 1.1 handshake succeeded")
		}
	})
}

// TestGarbageClient: a client that sends junk instead of a ClientHello is
// cut off while another connection keeps being served.
func TestGarbageClient(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		cl := e.h2Client(nil, nil)
		servertest.Get(t, cl, e.url("/hello"))

		stop := make(chan struct{})
		served := make(chan int)
		go func() {
			n := 0
			defer func() { served <- n }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := cl.Get(e.url("/hello"))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				n++
			}
		}()
		for _, junk := range [][]byte{
			[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
			bytes.Repeat([]byte{0x16, 0x03, 0x01, 0xff, 0xff}, 200),
			{0x16, 0x03, 0x03, 0x00, 0x05, 0x01, 0, 0, 0, 0},
		} {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(junk)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.Copy(io.Discard, c)
			c.Close()
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("junk %q...: connection left open", junk[:5])
			}
		}
		close(stop)
		if n := <-served; n == 0 {
			t.Fatal("the well-behaved client got nothing served meanwhile")
		}
		if s := e.srv.Stats(); s.HandshakeErrors < 3 {
			t.Fatalf("stats %+v: want 3 handshake errors", s)
		}
	})
}

// TestSteadyStateCostsNoPollerCalls: N requests on one h2 connection
// register one descriptor and change nothing afterwards.
func TestSteadyStateCostsNoPollerCalls(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 2, r.forLoop, nil)
		before := e.loopStats()
		cl := e.h2Client(nil, nil)
		const n = 200
		for i := 0; i < n; i++ {
			_, b, res := servertest.Get(t, cl, e.url("/hello"))
			if res.StatusCode != 200 || b != string(smallBody) {
				t.Fatalf("request %d: %d", i, res.StatusCode)
			}
		}
		after := e.loopStats()
		adds, mods, dels := after.Adds-before.Adds, after.Mods-before.Mods, after.Dels-before.Dels
		t.Logf("%d requests: adds %d mods %d dels %d events %d", n, adds, mods, dels, after.Events-before.Events)
		if adds != 1 || dels != 0 || mods != 0 {
			t.Fatalf("%d requests on 1 connection cost adds=%d mods=%d dels=%d, want 1/0/0", n, adds, mods, dels)
		}
	})
}

// TestShutdownGraceful: Shutdown sends GOAWAY, the request in flight still
// completes, then the connection closes and Shutdown returns.
func TestShutdownGraceful(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		tc, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("h2"))
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(tc, http2.ClientPreface)
		fr := http2.NewFramer(tc, tc)
		fr.WriteSettings()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock("GET", "/slow"), EndStream: true, EndHeaders: true})

		select {
		case <-r.slowStarted:
		case <-time.After(5 * time.Second):
			t.Fatal("request never reached the handler")
		}
		shut := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			shut <- e.srv.Shutdown(ctx)
		}()

		var goaways []uint32
		status, body := "", []byte(nil)
		ended, goawayBeforeEnd := false, false
		dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
			if f.Name == ":status" {
				status = f.Value
			}
		})
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if ended && (err == io.EOF || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset")) {
					break
				}
				t.Fatalf("read frame: %v (ended %v)", err, ended)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					fr.WritePing(true, f.Data)
				}
			case *http2.GoAwayFrame:
				goaways = append(goaways, f.LastStreamID)
				if !ended {
					goawayBeforeEnd = true
				}
			case *http2.HeadersFrame:
				dec.Write(f.HeaderBlockFragment())
				ended = ended || f.StreamEnded()
			case *http2.DataFrame:
				body = append(body, f.Data()...)
				ended = ended || f.StreamEnded()
			}
		}
		if !goawayBeforeEnd || len(goaways) == 0 || goaways[len(goaways)-1] != 1 {
			t.Fatalf("GOAWAYs %v (one before the response ended: %v), want the last naming stream 1", goaways, goawayBeforeEnd)
		}
		if status != "200" || string(body) != "ok" {
			t.Fatalf("in-flight request: status %q body %q", status, body)
		}
		tc.Close()
		select {
		case err := <-shut:
			if err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		case <-time.After(9 * time.Second):
			t.Fatal("Shutdown did not return")
		}
		if _, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
			// The listener is closed: a connect is refused (or, with
			// SO_REUSEPORT siblings gone, nothing listens).
			t.Fatal("still accepting after Shutdown")
		}
	})
}

// TestCurl drives the server with curl over h2 and HTTP/1.1, verifying
// the certificate.
func TestCurl(t *testing.T) {
	curl := testenv.Tool(t, "curl", "curl")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 2, r.forLoop, nil)
		upload := filepath.Join(t.TempDir(), "upload")
		data := bytes.Repeat([]byte("pollproxy "), 100000)
		os.WriteFile(upload, data, 0o644)
		for _, proto := range []struct{ flag, version string }{{"--http2", "2"}, {"--http1.1", "1.1"}} {
			out, err := exec.Command(curl, "-sS", "--cacert", e.certFile, proto.flag,
				"-w", "\n%{http_version} %{http_code}", e.url("/hello"), e.url("/again")).CombinedOutput()
			want := string(smallBody) + "\n" + proto.version + " 200"
			if err != nil || string(out) != want+want {
				t.Fatalf("curl %s: %v\n%s", proto.flag, err, out)
			}
			out, err = exec.Command(curl, "-sS", "--cacert", e.certFile, proto.flag,
				"--data-binary", "@"+upload, "-o", "-", e.url("/echo")).Output()
			if err != nil || !bytes.Equal(out, data) {
				t.Fatalf("curl %s echo: %v, %d bytes back of %d", proto.flag, err, len(out), len(data))
			}
		}
	})
}

// TestNghttp drives the server with nghttp2's client.
func TestNghttp(t *testing.T) {
	nghttp := testenv.Tool(t, "nghttp", "nghttp2-client")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		out, err := exec.Command(nghttp, "-nv", e.url("/hello"), e.url("/big")).CombinedOutput()
		s := string(out)
		if err != nil || strings.Count(s, ":status: 200") != 2 || !strings.Contains(s, "recv DATA frame") ||
			!strings.Contains(s, "END_STREAM") {
			t.Fatalf("nghttp: %v\n%s", err, s)
		}
		if !strings.Contains(s, "send GOAWAY") && !strings.Contains(s, "GOAWAY") {
			// nghttp ends with its own GOAWAY; its absence means it died early.
			t.Fatalf("nghttp did not finish the session:\n%s", s)
		}
	})
}

// TestBodyRightBehindHandshake: a client that sends its request and a
// large body right behind its Finished, before the server's handshake
// worker is done, is served (input beyond the session's limit waits in
// the socket instead of failing the connection).
func TestBodyRightBehindHandshake(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		r := newRoutes()
		e := startEnv(t, backend, 1, r.forLoop, nil)
		const size = 1 << 20
		body := make([]byte, size)
		(&pattern{n: size}).Read(body)
		req := append([]byte(fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", size)), body...)
		for i := 0; i < 10; i++ {
			raw, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			raw.SetDeadline(time.Now().Add(10 * time.Second))
			// The whole request in one write: on loopback it lands in the
			// server's receive queue at once.
			tc := stdtls.Client(raw, e.tlsConfig("http/1.1"))
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			werr := make(chan error, 1)
			go func() { _, err := tc.Write(req); werr <- err }()
			res, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				t.Fatalf("try %d: %v (handshake errors %d)", i, err, e.srv.Stats().HandshakeErrors)
			}
			got, err := io.ReadAll(res.Body)
			tc.Close()
			if err != nil || res.StatusCode != 200 || !bytes.Equal(got, body) {
				t.Fatalf("try %d: status %d, %d of %d bytes, err %v", i, res.StatusCode, len(got), size, err)
			}
			if err := <-werr; err != nil {
				t.Fatalf("try %d: write: %v", i, err)
			}
		}
	})
}

// requestBlock is the header block of an https request to localhost, as a
// fresh HPACK encoder writes it: a client's first request, for tests that
// write frames by hand.
func requestBlock(method, path string) []byte {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "localhost"}, {":path", path}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return hb.Bytes()
}
