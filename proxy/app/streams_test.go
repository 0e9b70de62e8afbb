package app

import (
	"bufio"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/looptest"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// streamOrigin is a real WebSocket echo origin at /ws and an SSE stream
// at /sse (an event every 20 ms until the client goes).
func streamOrigin(t *testing.T) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, msg, err := c.Read(r.Context())
				if err != nil {
					return
				}
				if c.Write(r.Context(), typ, msg) != nil {
					return
				}
			}
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}))
}

// streamClients dial pollproxy's port whatever the URL's host.
type streamClients struct {
	h1, h2 *http.Client
}

func newStreamClients(t *testing.T, port int, roots *x509.CertPool) streamClients {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	h1 := &http.Transport{DialContext: dial, TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}}}
	h2 := &http.Transport{DialContext: dial, ForceAttemptHTTP2: true, TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{"h2"}}}
	t.Cleanup(h1.CloseIdleConnections)
	t.Cleanup(h2.CloseIdleConnections)
	return streamClients{h1: &http.Client{Transport: h1}, h2: &http.Client{Transport: h2}}
}

func (sc streamClients) ws(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: sc.h1})
	if err != nil {
		t.Fatalf("dial %s: %v (response %v)", url, err, resp)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// echo sends one message and reads it back.
func echo(c *websocket.Conn, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		return err
	}
	_, got, err := c.Read(ctx)
	if err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

// echoUntilClosed echoes on c until it fails and returns when it did.
func echoUntilClosed(t *testing.T, c *websocket.Conn, limit time.Duration) time.Time {
	t.Helper()
	// What closes c here is the shutdown's grace period, a deadline kept
	// off the loops (Instance.Shutdown), which no loop clock moves.
	i := 0
	servertest.Eventually(t, limit, "the WebSocket closed", func() bool {
		i++
		return echo(c, fmt.Sprintf("m%d", i)) != nil
	})
	return time.Now()
}

// streamSite is a site for host on port proxying to origin with a
// stream_close_delay.
func streamSite(host string, port int, origin, delay, cert, key string) string {
	return fmt.Sprintf(`
%s:%d {
	reverse_proxy %s {
		stream_close_delay %s
	}
	tls %s %s
}
`, host, port, origin, delay, cert, key)
}

// TestReloadStreams: WebSockets and an SSE stream keep running across a
// reload that keeps their site and upstream; the ones whose site or
// upstream the reload removed close once stream_close_delay has passed,
// not a moment before, in a way the client sees (the WebSocket read ends,
// the SSE body breaks), and the kept ones go on echoing. The delay runs
// on the loops' clock, which the test moves.
func TestReloadStreams(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		a, b := streamOrigin(t), streamOrigin(t)
		certFile, keyFile, roots := servertest.CertFiles(t, "localhost", "gone.localhost")
		port := servertest.FreePort(t)
		const delay = 600 * time.Millisecond
		global := fmt.Sprintf("{\n\tloops 2\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\n", filepath.Join(dir, "storage"))
		file := filepath.Join(dir, "Caddyfile")
		write := func(sites ...string) {
			os.WriteFile(file, []byte(global+strings.Join(sites, "")), 0o644)
		}
		write(streamSite("localhost", port, a, "600ms", certFile, keyFile),
			streamSite("gone.localhost", port, a, "600ms", certFile, keyFile))
		r := start(t, file, Options{Pollers: []string{backend}})
		clock := looptest.NewClock(r.in.group.Loops()...)
		sc := newStreamClients(t, port, roots)

		kept := sc.ws(t, fmt.Sprintf("wss://localhost:%d/ws", port))
		gone := sc.ws(t, fmt.Sprintf("wss://gone.localhost:%d/ws", port))
		resp, err := sc.h2.Get(fmt.Sprintf("https://gone.localhost:%d/sse", port))
		if err != nil || resp.ProtoMajor != 2 {
			t.Fatalf("sse: %v %v", resp, err)
		}
		defer resp.Body.Close()
		events := bufio.NewReader(resp.Body)
		sseErr := make(chan struct{})
		go func() {
			defer close(sseErr)
			for {
				if _, err := events.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		sseOpen := func(when string) {
			t.Helper()
			select {
			case <-sseErr:
				t.Fatalf("SSE stream ended %s", when)
			default:
			}
		}
		for i, c := range []*websocket.Conn{kept, gone} {
			if err := echo(c, "before"); err != nil {
				t.Fatalf("ws %d before the reload: %v", i, err)
			}
		}
		// Reload returns once every loop has armed its handlers' close
		// delay, and Advance once the timers due have run and what they
		// wrote is on its way: a stream they closed fails its next echo.

		// A reload that changes nothing these streams use: all stay.
		write(streamSite("localhost", port, a, "600ms", certFile, keyFile),
			streamSite("gone.localhost", port, a, "600ms", certFile, keyFile),
			streamSite("other.localhost", port, b, "600ms", certFile, keyFile))
		if err := r.in.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		clock.Advance(2 * delay)
		for i, c := range []*websocket.Conn{kept, gone} {
			if err := echo(c, "after a reload keeping it"); err != nil {
				t.Fatalf("ws %d after a reload that kept its site: %v", i, err)
			}
		}
		sseOpen("by a reload that kept its site")

		// gone.localhost removed: its tunnel and its SSE stream close
		// after the delay, and only then.
		write(streamSite("localhost", port, a, "600ms", certFile, keyFile))
		if err := r.in.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		clock.Advance(delay - time.Millisecond)
		if err := echo(gone, "a moment before the delay"); err != nil {
			t.Fatalf("a removed site's WebSocket closed before stream_close_delay: %v", err)
		}
		sseOpen("before stream_close_delay")
		clock.Advance(time.Millisecond)
		if err := echo(gone, "at the delay"); err == nil {
			t.Fatal("a removed site's WebSocket still echoes after stream_close_delay")
		}
		select {
		case <-sseErr:
		case <-time.After(10 * time.Second):
			t.Fatal("a removed site's SSE stream still open")
		}
		for i := 0; i < 100; i++ {
			if err := echo(kept, fmt.Sprintf("kept %d", i)); err != nil {
				t.Fatalf("the kept site's WebSocket after another site's removal: %v", err)
			}
		}

		// localhost moved to origin b: its tunnel to a closes after the
		// delay; a new one reaches b.
		write(streamSite("localhost", port, b, "600ms", certFile, keyFile))
		if err := r.in.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		clock.Advance(delay - time.Millisecond)
		if err := echo(kept, "a moment before the delay"); err != nil {
			t.Fatalf("a removed upstream's WebSocket closed before stream_close_delay: %v", err)
		}
		clock.Advance(time.Millisecond)
		if err := echo(kept, "at the delay"); err == nil {
			t.Fatal("a removed upstream's WebSocket still echoes after stream_close_delay")
		}
		fresh := sc.ws(t, fmt.Sprintf("wss://localhost:%d/ws", port))
		if err := echo(fresh, "to b"); err != nil {
			t.Fatalf("new WebSocket after the reload: %v", err)
		}
		fresh.Close(websocket.StatusNormalClosure, "")
	})
}

// TestShutdownLetsTunnelsRun: Shutdown (SIGTERM) stops accepting and
// sends GOAWAY, but an open WebSocket keeps echoing until grace_period
// ends; then it is closed and Shutdown says so.
func TestShutdownLetsTunnelsRun(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		a := streamOrigin(t)
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tgrace_period 1s\n}\n",
			filepath.Join(dir, "storage"))+streamSite("localhost", port, a, "10s", certFile, keyFile)), 0o644)
		r := start(t, file, Options{Pollers: []string{backend}})
		c := newStreamClients(t, port, roots).ws(t, fmt.Sprintf("wss://localhost:%d/ws", port))
		if err := echo(c, "before"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		started := time.Now()
		go func() { done <- r.in.Shutdown() }()
		r.logged("shutting down", 5*time.Second)
		for i := 0; time.Since(started) < 600*time.Millisecond; i++ {
			if err := echo(c, fmt.Sprintf("draining %d", i)); err != nil {
				t.Fatalf("echo %d during the grace period: %v", i, err)
			}
		}
		closedAt := echoUntilClosed(t, c, 10*time.Second)
		if d := closedAt.Sub(started); d < time.Second {
			t.Errorf("tunnel closed %v into a 1s grace period", d)
		}
		if err := <-done; err == nil || !strings.Contains(err.Error(), "still open after 1s") {
			t.Errorf("shutdown with a tunnel open past the deadline: %v", err)
		}
	})
}
