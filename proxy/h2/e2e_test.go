//lint:file-ignore SA1019 x/net's http2.Transport dials one connection for concurrent requests (net/http's dialed a second under -race); these tests count or forbid dials.

package h2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// h2Client speaks h2c with prior knowledge over conn, the real x/net client.
func h2Client(conn net.Conn) *http.Client {
	var used atomic.Bool
	tr := &http2.Transport{
		AllowHTTP:                  true,
		StrictMaxConcurrentStreams: true,
		DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			if used.Swap(true) {
				return nil, errors.New("only one connection")
			}
			return conn, nil
		},
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	return b
}

func TestGET(t *testing.T) {
	var got stream.Request
	body := []byte("hello, pollproxy\n")
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		got = *req
		got.Header = append([]stream.Field(nil), req.Header...)
		w.WriteHeader(200, []stream.Field{{Name: "content-type", Value: "text/plain"}, {Name: "x-a", Value: "1"}}, false)
		w.Write(body)
		w.Close(nil)
		return nil
	})
	conn, _ := startServer(t, h, Config{Scheme: "http"}, true, 7)
	cl := h2Client(conn)
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", "http://example.test/a/b?c=d", nil)
		req.Header.Add("Cookie", "a=1")
		req.Header.Add("Cookie", "b=2")
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(b, body) || res.Header.Get("x-a") != "1" || res.ProtoMajor != 2 {
			t.Fatalf("status %d body %q header %v", res.StatusCode, b, res.Header)
		}
	}
	if got.Method != "GET" || got.Scheme != "http" || got.Authority != "example.test" || got.Path != "/a/b?c=d" ||
		got.Proto != "HTTP/2.0" || got.HasBody || got.ContentLength != -1 || !got.RemoteAddr.IsValid() {
		t.Fatalf("request %+v", got)
	}
	if v, _ := got.Get("cookie"); v != "a=1; b=2" {
		t.Fatalf("cookie %q in %v", v, got.Header)
	}
	if _, ok := got.Get("user-agent"); !ok {
		t.Fatalf("no user-agent in %v", got.Header)
	}
}

// echoHandler echoes request bodies, consuming them only as the response
// accepts them and only every tick: the client's upload is paced by us.
type echoHandler struct {
	ts            *testServer
	tick          time.Duration
	maxUnconsumed int
	window        int
	violations    atomic.Int32
}

func (e *echoHandler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	var pending []byte
	unconsumed, toConsume := 0, 0
	ended, closed := false, false
	var trailers []stream.Field
	w.WriteHeader(200, nil, false)
	var timer stream.Timer
	flush := func() {
		for len(pending) > 0 {
			n, err := w.Write(pending)
			if err != nil || n == 0 {
				break
			}
			pending = pending[n:]
			toConsume += n
		}
		if toConsume > 0 && timer == nil {
			timer = e.ts.tr.Clock().AfterFunc(e.tick, func() {
				timer = nil
				unconsumed -= toConsume
				w.Consumed(toConsume)
				toConsume = 0
			})
		}
		if ended && len(pending) == 0 && !closed {
			closed = true
			w.Close(trailers)
		}
	}
	return &events{
		body: func(p []byte) {
			unconsumed += len(p)
			if unconsumed > e.maxUnconsumed {
				e.maxUnconsumed = unconsumed
			}
			if unconsumed > e.window {
				e.violations.Add(1)
			}
			pending = append(pending, p...)
			flush()
		},
		bodyEnd: func(tr []stream.Field) {
			ended = true
			for _, f := range tr {
				trailers = append(trailers, stream.Field{Name: "echo-" + f.Name, Value: f.Value})
			}
			flush()
		},
		writable: flush,
		abort: func(error) {
			if timer != nil {
				timer.Stop()
			}
		},
	}
}

func TestPOSTEchoBackpressure(t *testing.T) {
	// Fixed windows (no autotuning): the bound under test is StreamWindow.
	cfg := Config{Scheme: "http", StreamWindow: 65535, ConnWindow: 128 << 10, MaxConnWindow: 128 << 10, StreamSendBuffer: 32 << 10}
	eh := &echoHandler{tick: time.Millisecond, window: 65535}
	conn, ts := startServer(t, eh, cfg, true, 0)
	eh.ts = ts
	ts.autoAdvance(t, 100*time.Millisecond) // the handler's ticks
	cl := h2Client(conn)
	body := pattern(10 << 20)
	req, _ := http.NewRequest("POST", "http://example.test/echo", bytes.NewReader(body))
	req.Trailer = http.Header{"X-Sum": {"abc"}}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	res.Body.Close()
	if err != nil || n != int64(len(body)) {
		t.Fatalf("read %d: %v", n, err)
	}
	if want := sha256.Sum256(body); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("echoed body differs")
	}
	if res.Trailer.Get("Echo-X-Sum") != "abc" {
		t.Fatalf("trailers %v", res.Trailer)
	}
	ts.lock(func() {
		if eh.violations.Load() != 0 || eh.maxUnconsumed > 65535 {
			t.Errorf("handler held %d bytes, window 65535", eh.maxUnconsumed)
		}
	})
}

func TestLargeResponse(t *testing.T) {
	body := pattern(8 << 20)
	cfg := Config{Scheme: "http", HighWater: 64 << 10}
	conn, ts := startServer(t, staticHandler(body), cfg, true, 0)
	cl := h2Client(conn)
	res, err := cl.Get("http://example.test/big")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	res.Body.Close()
	if err != nil || n != int64(len(body)) {
		t.Fatalf("read %d: %v", n, err)
	}
	if want := sha256.Sum256(body); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("body differs")
	}
	ts.lock(func() {
		// DATA stops at the high-water mark; one frame may overshoot.
		if ts.tr.MaxBuffered > 64<<10+32<<10 {
			t.Errorf("transport buffered up to %d bytes, high water 64 KiB", ts.tr.MaxBuffered)
		}
	})
}

func TestConcurrentStreams(t *testing.T) {
	cfg := Config{Scheme: "http"} // 100 streams: what the x/net client assumes before our SETTINGS
	var mu sync.Mutex
	maxOpen := 0
	var ts *testServer
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		if n := len(ts.sc.streams); n > maxOpen {
			mu.Lock()
			maxOpen = n
			mu.Unlock()
		}
		body := []byte(req.Path)
		// Answer later, so that streams overlap.
		ts.tr.Clock().AfterFunc(2*time.Millisecond, func() {
			w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: fmt.Sprint(len(body))}}, false)
			w.Write(body)
			w.Close(nil)
		})
		return nil
	})
	conn, ts0 := startServer(t, h, cfg, true, 0)
	ts = ts0
	ts.autoAdvance(t, 100*time.Millisecond) // the delayed answers
	cl := h2Client(conn)
	// 80 concurrent workers, 4 requests each. (The x/net client stalls
	// when more requests than MAX_CONCURRENT_STREAMS wait on one
	// connection, against any server, so stay below it.)
	var wg sync.WaitGroup
	errs := make(chan error, 320)
	for w := 0; w < 80; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				path := fmt.Sprintf("/r/%d/%d", w, i)
				res, err := cl.Get("http://example.test" + path)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if string(b) != path {
					errs <- fmt.Errorf("got %q for %s", b, path)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxOpen > 100 || maxOpen < 2 {
		t.Fatalf("max open streams %d", maxOpen)
	}
}

func TestEarlyHintsAndTrailers(t *testing.T) {
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(103, []stream.Field{{Name: "link", Value: "</s.css>; rel=preload"}}, false)
		w.WriteHeader(200, []stream.Field{{Name: "trailer", Value: "x-t"}}, false)
		w.Write([]byte("body"))
		w.Close([]stream.Field{{Name: "x-t", Value: "done"}})
		return nil
	})
	conn, _ := startServer(t, h, Config{Scheme: "http"}, true, 3)
	cl := h2Client(conn)
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, " ", hdr.Get("Link")))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://example.test/", nil)
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "body" || res.Trailer.Get("X-T") != "done" {
		t.Fatalf("body %q trailer %v", b, res.Trailer)
	}
	if len(hints) != 1 || !strings.HasPrefix(hints[0], "103 </s.css>") {
		t.Fatalf("hints %v", hints)
	}
}

func TestGracefulShutdown(t *testing.T) {
	var ts *testServer
	var pending []stream.ResponseWriter
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		if req.Path == "/slow" {
			pending = append(pending, w)
			ts.sc.Shutdown()
			ts.tr.Clock().AfterFunc(50*time.Millisecond, func() {
				w.WriteHeader(200, nil, false)
				w.Write([]byte("late"))
				w.Close(nil)
			})
			return nil
		}
		w.WriteHeader(200, nil, true)
		return nil
	})
	conn, ts0 := startServer(t, h, Config{Scheme: "http"}, true, 0)
	ts = ts0
	// The late answer fires; the shutdown PING's timeout (1 s) does not:
	// the client's acknowledgement ends the first step.
	ts.autoAdvance(t, 100*time.Millisecond)
	cl := h2Client(conn)
	res, err := cl.Get("http://example.test/slow")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "late" {
		t.Fatalf("body %q", b)
	}
	select {
	case <-ts.tr.done:
	case <-time.After(5 * time.Second):
		t.Fatal("connection not closed after graceful shutdown")
	}
}
