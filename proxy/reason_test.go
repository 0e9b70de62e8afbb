package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/observe"
)

// reasonRecorder is an Observer that keeps each request's report and
// each upstream failure it hears of.
type reasonRecorder struct {
	mu       sync.Mutex
	logs     []observe.RequestLog
	failures []observe.Reason
}

func (r *reasonRecorder) Observe(l *observe.RequestLog) {
	r.mu.Lock()
	r.logs = append(r.logs, *l)
	r.mu.Unlock()
}

func (r *reasonRecorder) UpstreamFailed(_ string, why observe.Reason) {
	r.mu.Lock()
	r.failures = append(r.failures, why)
	r.mu.Unlock()
}

// take returns what was recorded since the last call, once a request's
// report is in.
func (r *reasonRecorder) take(t *testing.T) (observe.RequestLog, []observe.Reason) {
	t.Helper()
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.logs) > 0
	}, "the request's report")
	r.mu.Lock()
	defer r.mu.Unlock()
	l, f := r.logs[len(r.logs)-1], r.failures
	r.logs, r.failures = nil, nil
	return l, f
}

// TestEndReasons: how a request ended reaches the client, the access
// log's report (reason, detail, status) and the upstream failure counter
// (reason label), over real sockets, for a complete response and for
// endings of each kind: pollproxy's own answer before a head, a reset
// after one.
func TestEndReasons(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/broken" {
				w.Header().Set("Content-Length", strconv.Itoa(1<<20))
				w.Write(make([]byte, 16<<10))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // net/http closes the connection
			}
			io.WriteString(w, "ok")
		})
		// detail "*": any, but some.
		check := func(label string, l observe.RequestLog, failures []observe.Reason, status int, reason observe.Reason, detail string, failure ...observe.Reason) {
			t.Helper()
			if l.Status != status || l.Reason != reason || detail != "*" && l.Detail != detail || detail == "*" && l.Detail == "" {
				t.Errorf("%s: report status %d reason %v detail %q, want %d %v %q", label, l.Status, l.Reason, l.Detail, status, reason, detail)
			}
			if len(failures) != len(failure) || len(failure) > 0 && failures[0] != failure[0] {
				t.Errorf("%s: upstream failures %v, want %v", label, failures, failure)
			}
		}

		rec := &reasonRecorder{}
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*proxy.Upstream{upstream(t, o.addr)}, Observer: rec})
		cl := e.h2Client(nil)
		if res, b := get(t, cl, e.url("/ok")); res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("ok: %d %q", res.StatusCode, b)
		}
		l, f := rec.take(t)
		check("complete", l, f, 200, observe.ReasonNone, "")
		if l.ErrorText() != "" {
			t.Errorf("complete: error text %q", l.ErrorText())
		}

		res, err := cl.Get(e.url("/broken"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		var se http2.StreamError
		if !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
			t.Fatalf("broken: %v, want RST_STREAM(INTERNAL_ERROR)", err)
		}
		l, f = rec.take(t)
		// The detail is the response parser's word for a body cut short.
		check("broken", l, f, 0, observe.ReasonBrokenMidResponse, "*", observe.ReasonBrokenMidResponse)
		if want := "upstream broke mid-response: " + l.Detail; l.ErrorText() != want {
			t.Errorf("broken: error text %q, want %q", l.ErrorText(), want)
		}

		rec = &reasonRecorder{}
		e = startProxy(t, backend, 1, proxy.Config{Upstreams: []*proxy.Upstream{upstream(t, closedAddr(t))}, Observer: rec})
		res, b := get(t, e.h2Client(nil), e.url("/"))
		if want := "bad gateway: connection refused by upstream\n"; res.StatusCode != 502 || string(b) != want {
			t.Fatalf("refused: %d %q, want 502 %q", res.StatusCode, b, want)
		}
		l, f = rec.take(t)
		check("refused", l, f, 502, observe.ReasonConnect, "connection refused by upstream", observe.ReasonConnect)

		rec = &reasonRecorder{}
		e = startProxy(t, backend, 1, proxy.Config{Upstreams: []*proxy.Upstream{upstream(t, silentOrigin(t))}, Observer: rec,
			ResponseHeaderTimeout: 100 * time.Millisecond})
		res, b = get(t, e.h2Client(nil), e.url("/"))
		if want := "gateway timeout: upstream sent no response head in time\n"; res.StatusCode != 504 || string(b) != want {
			t.Fatalf("silent: %d %q, want 504 %q", res.StatusCode, b, want)
		}
		l, f = rec.take(t)
		check("silent", l, f, 504, observe.ReasonHeaderTimeout, "", observe.ReasonHeaderTimeout)
	})
}
