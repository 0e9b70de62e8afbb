package proxy_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// TestReadBodyTimeout: a request body that stops arriving gets a 408
// once ReadBodyTimeout (Caddy's read_body) has passed, not a moment
// before, on h2 and HTTP/1.1; the origin's connection, which holds half a
// request, is closed and never reused; the upstream is not marked as
// failing; the next request is served.
func TestReadBodyTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		bodyErrs := make(chan error, 4)
		reached := make(chan struct{}, 4) // the origin has the first 10 bytes of a body
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			io.ReadFull(r.Body, make([]byte, 10))
			reached <- struct{}{}
			_, err := io.ReadAll(r.Body)
			bodyErrs <- err
			io.WriteString(w, "ok")
		})
		up := upstreamAt(t, o.addr)
		const timeout = 300 * time.Millisecond
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{up}, ReadBodyTimeout: timeout})
		clock := e.manualClock()
		// expire moves the clock past the body's timeout once the origin
		// has what was sent of it (so the proxy has no more to forward).
		expire := func(proto string) {
			t.Helper()
			<-reached
			advancePast(t, clock, timeout, up, 1, proto)
		}

		// h2: a body of 100 bytes declared, 10 sent.
		pr, pw := io.Pipe()
		defer pw.Close()
		req, _ := http.NewRequest("POST", "https://localhost/upload", pr)
		req.ContentLength = 100
		go pw.Write([]byte("0123456789"))
		done := goDo(e.h2Client(nil), req)
		expire("h2")
		if r := <-done; r.err != nil || r.res.StatusCode != 408 {
			t.Fatalf("h2 slow body: %v %v %q, want 408", r.err, r.res, r.body)
		}
		if err := <-bodyErrs; err == nil {
			t.Fatal("h2: the origin read a whole body")
		}

		// HTTP/1.1: the same, and the connection is closed after the 408.
		c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("http/1.1"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n0123456789")
		expire("h1")
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(res.Body)
		if res.StatusCode != 408 || !res.Close {
			t.Fatalf("h1 slow body: %d close=%v, want 408 and close", res.StatusCode, res.Close)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("h1 connection after the 408: %v, want EOF", err)
		}
		if err := <-bodyErrs; err == nil {
			t.Fatal("h1: the origin read a whole body")
		}

		// A body that ends in time, and a GET, reuse nothing half-sent.
		res, b := do(t, e.h2Client(nil), mustRequest("POST", "https://localhost/upload", strings.NewReader("whole")))
		if res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("after the timeouts: %d %q", res.StatusCode, b)
		}
		<-bodyErrs
		s := up.Stats()
		if s.Failures != 0 || s.Retries != 0 || s.Connects != 3 {
			t.Errorf("upstream stats %+v: want 3 connections, no failure, no retry", s)
		}
	})
}

func mustRequest(method, url string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		panic(err)
	}
	return req
}

// TestBodyWithoutLength: a request body of unknown length (h2 DATA with no
// content-length, HTTP/1.1 chunked) reaches the origin whole as a chunked
// body, several DATA frames and records of it, then the body after it on
// the same origin connection.
func TestBodyWithoutLength(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%v %d %x %v", r.TransferEncoding, n, h.Sum(nil), err)
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		body := make([]byte, 1<<20+17)
		for i := range body {
			body[i] = byte(i * 7)
		}
		sum := sha256.Sum256(body)
		want := fmt.Sprintf("[chunked] %d %x <nil>", len(body), sum)
		for _, c := range []struct {
			name string
			cl   *http.Client
		}{{"h2", e.h2Client(nil)}, {"h1", e.h1Client()}} {
			for i := 0; i < 2; i++ {
				// An io.Reader without a length: no content-length.
				req := mustRequest("POST", "https://localhost/upload", io.MultiReader(bytes.NewReader(body)))
				res, b := do(t, c.cl, req)
				if res.StatusCode != 200 || string(b) != want {
					t.Fatalf("%s, upload %d: %d %q, want %q", c.name, i, res.StatusCode, b, want)
				}
			}
		}
	})
}
