package proxy_test

import (
	"bufio"
	"context"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// echoOrigin is a real WebSocket origin (coder/websocket) that echoes
// every message; ended receives how each connection's read loop ended.
func echoOrigin(t *testing.T) (*origin, chan error) {
	ended := make(chan error, 16)
	return newOrigin(t, echoHandler(ended)), ended
}

// echoHandler is echoOrigin's handler: a WebSocket that echoes every
// message and sends how its read loop ended to ended.
func echoHandler(ended chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(32 << 20)
		ctx := context.Background()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				ended <- err
				c.CloseNow()
				return
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				ended <- err
				return
			}
		}
	}
}

func wsDial(t *testing.T, ctx context.Context, e *proxyEnv, cl *http.Client, path string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "wss://"+e.addr+path, &websocket.DialOptions{HTTPClient: cl})
	if err != nil {
		t.Fatalf("dial: %v (response %v)", err, resp)
	}
	c.SetReadLimit(32 << 20)
	return c
}

// TestWebSocketH1Echo: a real WebSocket client over HTTP/1.1 Upgrade
// through pollproxy to a real WebSocket origin, 10,000 echoes, then a
// clean close handshake both ways; the connection never went to the pool.
func TestWebSocketH1Echo(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, ended := echoOrigin(t)
		up := upstreamAt(t, o.addr)
		e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{up}})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := wsDial(t, ctx, e, e.h1Client(), "/ws")
		for i := 0; i < 10000; i++ {
			msg := fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%300))
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			_, got, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if string(got) != msg {
				t.Fatalf("echo %d: got %q", i, got)
			}
		}
		if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("close: %v", err)
		}
		select {
		case err := <-ended:
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("origin saw %v, want a normal close", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("origin never saw the close")
		}
		// A tunnel's connection is never pooled: the next request opens
		// one of its own.
		waitFor(t, func() bool { return up.Stats().OpenConns == 0 }, "the tunnel's backend connection closed")
	})
}

// TestWebSocketH1OriginDies: the origin drops the connection without a
// close handshake; the client's read fails promptly.
func TestWebSocketH1OriginDies(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			c.Write(context.Background(), websocket.MessageText, []byte("hello"))
			c.CloseNow()
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := wsDial(t, ctx, e, e.h1Client(), "/")
		_, got, err := c.Read(ctx)
		if err != nil || string(got) != "hello" {
			t.Fatalf("first read: %q %v", got, err)
		}
		if _, _, err := c.Read(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read after the origin died: %v, want a prompt error", err)
		}
	})
}

// TestWebSocketH1ClientVanishes: the client's socket goes away mid-tunnel
// (no close handshake); the origin's read ends.
func TestWebSocketH1ClientVanishes(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, ended := echoOrigin(t)
		up := upstreamAt(t, o.addr)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}})
		conn, _ := rawUpgrade(t, e, "websocket", "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n")
		conn.(*stdtls.Conn).NetConn().(*net.TCPConn).SetLinger(0)
		conn.Close() // a reset, not a close
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("origin read ended without an error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("origin never noticed the client vanished")
		}
		waitFor(t, func() bool { return up.Stats().OpenConns == 0 }, "the tunnel's backend connection closed")
	})
}

// rawUpgrade sends an HTTP/1.1 Upgrade request over TLS and reads the 101.
func rawUpgrade(t *testing.T, e *proxyEnv, proto, extra string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "GET /t HTTP/1.1\r\nhost: localhost\r\nconnection: Upgrade\r\nupgrade: %s\r\n%s\r\n", proto, extra)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the upgrade response: %v", err)
	}
	if resp.StatusCode != 101 || !strings.EqualFold(resp.Header.Get("Upgrade"), proto) ||
		!strings.EqualFold(resp.Header.Get("Connection"), "upgrade") {
		t.Fatalf("upgrade response: %d %v", resp.StatusCode, resp.Header)
	}
	return conn, br
}

// rawTunnelOrigin is an origin speaking the upgrade by hand, so a test
// controls each direction's close: it answers 101, then runs f on the
// switched connection.
func rawTunnelOrigin(t *testing.T, f func(c *net.TCPConn, br *bufio.Reader)) string {
	return servertest.ServeConns(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\nX-Origin: raw\r\n\r\n", req.Header.Get("Upgrade"))
		f(c.(*net.TCPConn), br)
	})
}

// TestTunnelH1HalfClose: each direction ends on its own. The client ends
// its direction (close_notify and FIN) and still reads the origin's
// answer; the origin ends its direction first and still reads the
// client's bytes.
func TestTunnelH1HalfClose(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		t.Run("client first", func(t *testing.T) {
			addr := rawTunnelOrigin(t, func(c *net.TCPConn, br *bufio.Reader) {
				all, err := io.ReadAll(br) // until the client's half-close
				if err != nil {
					return
				}
				fmt.Fprintf(c, "got %d bytes: %s", len(all), all)
				c.CloseWrite()
				io.Copy(io.Discard, br)
			})
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
			conn, br := rawUpgrade(t, e, "x-test", "")
			io.WriteString(conn, "ping pong")
			tc := conn.(*stdtls.Conn)
			if err := tc.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			tc.NetConn().(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("read after our half-close: %v", err)
			}
			if string(got) != "got 9 bytes: ping pong" {
				t.Fatalf("got %q", got)
			}
		})
		t.Run("origin first", func(t *testing.T) {
			done := make(chan string, 1)
			addr := rawTunnelOrigin(t, func(c *net.TCPConn, br *bufio.Reader) {
				io.WriteString(c, "hello")
				c.CloseWrite()
				all, _ := io.ReadAll(br)
				done <- string(all)
			})
			e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
			conn, br := rawUpgrade(t, e, "x-test", "")
			got, err := io.ReadAll(br)
			if err != nil || string(got) != "hello" {
				t.Fatalf("origin's direction: %q %v", got, err)
			}
			// Our direction is still open.
			io.WriteString(conn, "still here")
			conn.(*stdtls.Conn).CloseWrite()
			select {
			case s := <-done:
				if s != "still here" {
					t.Fatalf("origin read %q", s)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the origin never saw our bytes and half-close")
			}
		})
	})
}

// TestUpgradeRefusedIsOrdinary: an origin that answers an upgrade request
// with 200 sends an ordinary response, and the connection stays usable.
func TestUpgradeRefusedIsOrdinary(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newRecordingOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		conn, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		for i := 0; i < 2; i++ {
			io.WriteString(conn, "GET /u HTTP/1.1\r\nhost: localhost\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "plain" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			seen := o.last()
			if seen.Header.Get("Upgrade") != "websocket" || !strings.EqualFold(seen.Header.Get("Connection"), "upgrade") {
				t.Fatalf("origin saw %v", seen.Header)
			}
		}
	})
}

// waitFor is servertest.Eventually with this package's bound: cond is made
// true by other goroutines (the loop, an origin), not by a timer.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	servertest.Eventually(t, 10*time.Second, what, cond)
}
