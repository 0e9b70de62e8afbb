package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// startPlain runs one site body on a plain-HTTP port that also takes
// h2c, on backend, and returns its address.
func startPlain(t *testing.T, backend, body string) string {
	t.Helper()
	dir := t.TempDir()
	port := servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage %s
	servers {
		protocols h1 h2 h2c
	}
}

http://127.0.0.1:%d {
%s
}
`, backend, filepath.Join(dir, "storage"), port, body)), 0o644)
	start(t, file, Options{})
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// TestNoContentLength204: a 204 carries no Content-Length, also to a HEAD
// over HTTP/1.1 and over h2 (RFC 9110 §8.6), though respond 204 gives
// one. FuzzSites found both.
func TestNoContentLength204(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := startPlain(t, backend, "\trespond 204")
		for _, method := range []string{"GET", "HEAD"} {
			h1, err := dialH1(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// The strict readers refuse a 204 with a length.
			if a, err := h1.roundTrip(fuzzRequest{method: method, target: "/"}, addr); err != nil || a.status != 204 {
				t.Errorf("HTTP/1.1 %s: %d %v", method, a.status, err)
			}
			h1.Close()
			h2, err := dialH2(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if a, err := h2.roundTrip(fuzzRequest{h2: true, method: method, target: "/"}, addr); err != nil || a.status != 204 {
				t.Errorf("h2 %s: %d %v", method, a.status, err)
			}
			h2.Close()
		}
	})
}

// TestHeadNoContent: the answer to a HEAD carries no DATA over h2, also
// one pollproxy writes itself (a 502 with its text body when the origin
// refuses), and also when a route changed the method. FuzzSites found
// the 502's body sent.
func TestHeadNoContent(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dead := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
		origin := servertest.Origin(t, http.HandlerFunc(fuzzOrigin))
		addr := startPlain(t, backend, fmt.Sprintf("\treverse_proxy /dead %s\n\tmethod /get GET\n\treverse_proxy %s", dead, origin))
		for _, x := range []struct {
			target string
			status int
		}{{"/dead", 502}, {"/get", 200}} {
			h2, err := dialH2(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// The strict reader refuses DATA in an answer to a HEAD.
			if a, err := h2.roundTrip(fuzzRequest{h2: true, method: "HEAD", target: x.target}, addr); err != nil || a.status != x.status {
				t.Errorf("h2 HEAD %s: %d %v, want %d", x.target, a.status, err, x.status)
			}
			h2.Close()
		}
	})
}

// TestMethodHeadRespond: a method directive that makes a request a HEAD
// leaves respond's answer to the client's method: the DELETE a client
// sent gets the body its Content-Length announces. FuzzSites found the
// head with that length and no body, which HTTP/1.1 refused: the
// connection closed without an answer.
func TestMethodHeadRespond(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := startPlain(t, backend, "\tmethod * HEAD\n\trespond \"teapot\" 418")
		for _, method := range []string{"DELETE", "HEAD"} {
			h1, err := dialH1(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if a, err := h1.roundTrip(fuzzRequest{method: method, target: "/"}, addr); err != nil || a.status != 418 {
				t.Errorf("HTTP/1.1 %s: %d %v", method, a.status, err)
			}
			h1.Close()
			h2, err := dialH2(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if a, err := h2.roundTrip(fuzzRequest{h2: true, method: method, target: "/"}, addr); err != nil || a.status != 418 {
				t.Errorf("h2 %s: %d %v", method, a.status, err)
			}
			h2.Close()
		}
	})
}

// TestHeadRefused: a HEAD that HTTP/1.1 refuses after reading its head
// (an expectation it cannot meet) gets the refusal without a body.
// FuzzSites found the text of the 417 after it.
func TestHeadRefused(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := startPlain(t, backend, "\trespond \"fine\"")
		for _, method := range []string{"HEAD", "GET"} {
			h1, err := dialH1(addr, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// The strict reader refuses bytes after the answer.
			a, err := h1.roundTrip(fuzzRequest{method: method, target: "/", fields: [][2]string{{"Expect", "a"}}}, addr)
			if err != nil || a.status != 417 {
				t.Errorf("%s with Expect: a: %d %v, want 417", method, a.status, err)
			}
			h1.Close()
		}
	})
}

// TestMethodHeadProxied: a route that turns a GET into a HEAD before
// reverse_proxy gets the origin's length with no body, a head the front
// end cannot send to a GET. The client is told at once, the stream reset
// (HTTP/1.1: the connection closed), instead of waiting for an answer
// that never comes (HTTP/1.1) or reading a length with no body (h2).
// FuzzSites found both.
func TestMethodHeadProxied(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, http.HandlerFunc(fuzzOrigin))
		addr := startPlain(t, backend, fmt.Sprintf("\tmethod HEAD\n\treverse_proxy %s", origin))
		waited := func(proto string, err error) {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("%s: the client waited for an answer that never came: %v", proto, err)
			}
		}
		h1, err := dialH1(addr, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_, err = h1.roundTrip(fuzzRequest{method: "GET", target: "/"}, addr)
		h1.Close()
		waited("HTTP/1.1", err)
		h2, err := dialH2(addr, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		a, err := h2.roundTrip(fuzzRequest{h2: true, method: "GET", target: "/"}, addr)
		h2.Close()
		waited("h2", err)
		if err == nil {
			t.Errorf("h2: a head with the origin's length and no body reached the client: %d", a.status)
		}
	})
}
