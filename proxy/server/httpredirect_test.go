package server_test

import (
	"bufio"
	stdtls "crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server"
)

// TestHTTPRedirect: with http_redirect, plain HTTP sent to the TLS
// listener, also split across writes, gets a 308 to the same URL over
// https and the connection closes; TLS clients are served as before.
func TestHTTPRedirect(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startEnv(t, backend, 1, newRoutes().forLoop, func(c *server.Config) { c.HTTPRedirect = true })
		for _, tc := range []struct {
			parts []string
			want  string
		}{
			{[]string{"GET /a/b?c=d HTTP/1.1\r\nHost: example.com:8443\r\n\r\n"}, "https://example.com:8443/a/b?c=d"},
			{[]string{"PO", "ST /form HTTP/1.1\r\nHost: ex", "ample.com\r\nContent-Length: 3\r\n\r\nabc"}, "https://example.com/form"},
			{[]string{"HEAD / HTTP/1.0\r\nHost: h.test\r\n\r\n"}, "https://h.test/"},
		} {
			parts, want := tc.parts, tc.want
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			for _, p := range parts {
				c.Write([]byte(p))
				time.Sleep(5 * time.Millisecond) // separate reads, most of the time
			}
			br := bufio.NewReader(c)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%q: %v", parts, err)
			}
			if res.StatusCode != 308 || res.Header.Get("Location") != want {
				t.Errorf("%q: %d %q, want 308 %q", parts, res.StatusCode, res.Header.Get("Location"), want)
			}
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Errorf("%q: after the redirect: %q", parts, rest)
			}
			c.Close()
		}
		// TLS as before.
		c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
		if err != nil {
			t.Fatalf("TLS beside http_redirect: %v", err)
		}
		c.Close()
	})
}

// TestNoHTTPRedirect: without http_redirect, plain HTTP on the TLS
// listener is a failed handshake, no HTTP answer.
func TestNoHTTPRedirect(t *testing.T) {
	e := startEnv(t, netpoll.Available()[0], 1, newRoutes().forLoop, nil)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		t.Error("an HTTP answer without http_redirect")
	}
}
