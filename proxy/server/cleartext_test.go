//lint:file-ignore SA1019 the h2c client is x/net's Transport, as in the other tests of this package.

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	stdtls "crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// cleartext makes the test server a plain-HTTP one; h2c allows HTTP/2
// with prior knowledge too.
func cleartext(h2c bool) func(*server.Config) {
	return func(c *server.Config) { c.TLS, c.Cleartext, c.H2C = nil, true, h2c }
}

// plainH1Client is net/http's HTTP/1.1 client over TCP; dials counts the
// connections it opened.
func plainH1Client(t *testing.T, dials *atomic.Int32) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// TestCleartextH1: a cleartext server answers HTTP/1.1 on one kept-alive
// connection: small and large responses, an uploaded body echoed back.
func TestCleartextH1(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startEnv(t, backend, 2, newRoutes().forLoop, cleartext(false))
		if !e.srv.Cleartext() {
			t.Fatal("server is not cleartext")
		}
		var dials atomic.Int32
		cl := plainH1Client(t, &dials)
		base := "http://" + e.addr
		for i := 0; i < 3; i++ {
			_, b, res := servertest.Get(t, cl, base+"/hello")
			if res.StatusCode != 200 || res.ProtoMajor != 1 || b != string(smallBody) || res.TLS != nil {
				t.Fatalf("GET /hello: %d %s %q", res.StatusCode, res.Proto, b)
			}
		}
		_, b, res := servertest.Get(t, cl, base+"/big")
		if res.StatusCode != 200 || sha256.Sum256([]byte(b)) != sha256.Sum256(bigBody()) {
			t.Fatalf("GET /big: %d, %d bytes", res.StatusCode, len(b))
		}
		up := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		req, _ := http.NewRequest("POST", base+"/echo", bytes.NewReader(up))
		req.Header.Set("Content-Type", "application/octet-stream")
		if _, b, _ = servertest.Do(t, cl, req); b != string(up) {
			t.Fatalf("POST /echo: %d of %d bytes back", len(b), len(up))
		}
		if n := dials.Load(); n != 1 {
			t.Errorf("%d connections for 5 requests, want 1 kept alive", n)
		}
	})
}

// TestCleartextH2C: with h2c allowed, a client with prior knowledge speaks
// HTTP/2 over TCP, the preface split over several writes; without h2c the
// preface is an HTTP/1.1 request line the front end refuses.
func TestCleartextH2C(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startEnv(t, backend, 1, newRoutes().forLoop, cleartext(true))
		tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *stdtls.Config) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &dribble{Conn: c}, nil
		}}
		t.Cleanup(tr.CloseIdleConnections)
		cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		_, b, res := servertest.Get(t, cl, "http://"+e.addr+"/big")
		if res.StatusCode != 200 || res.ProtoMajor != 2 || sha256.Sum256([]byte(b)) != sha256.Sum256(bigBody()) {
			t.Fatalf("h2c GET /big: %d %s, %d bytes", res.StatusCode, res.Proto, len(b))
		}
		// HTTP/1.1 still works on the same listener.
		var dials atomic.Int32
		_, b, res = servertest.Get(t, plainH1Client(t, &dials), "http://"+e.addr+"/hello")
		if res.StatusCode != 200 || res.ProtoMajor != 1 || b != string(smallBody) {
			t.Fatalf("h1 GET /hello: %d %s %q", res.StatusCode, res.Proto, b)
		}

		off := startEnv(t, backend, 1, newRoutes().forLoop, cleartext(false))
		c, err := net.Dial("tcp", off.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, http2.ClientPreface)
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 4") && !strings.HasPrefix(line, "HTTP/1.1 5") {
			t.Fatalf("h2c off: the preface got %q, want an HTTP/1.1 error status", line)
		}
	})
}

// dribble writes its first writes a few bytes at a time, so the server
// sees the HTTP/2 preface in pieces.
type dribble struct {
	net.Conn
	writes int
}

func (d *dribble) Write(p []byte) (int, error) {
	if d.writes++; d.writes > 1 {
		return d.Conn.Write(p)
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), 5)
		m, err := d.Conn.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		time.Sleep(time.Millisecond)
	}
	return n, nil
}
