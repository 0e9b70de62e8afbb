package metrics

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/observe"
)

func TestObserverAndCollector(t *testing.T) {
	backends := netpoll.Available()
	if len(backends) < 2 {
		backends = append(backends, backends[0])
	}
	g, err := netpoll.NewGroup(2, backends[:2])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	up := &fakeUpstream{Name: "127.0.0.1:8080", Requests: 4, Reuses: 3, Broken: 1, OpenConns: 2}
	m := New("test")
	m.SetSource(Source{Pollers: strings.Join(backends[:2], ","), Group: g, Upstreams: []observe.Upstream{up},
		AccessLogDropped: func() uint64 { return 7 }, WindowBudget: h2.NewWindowBudget(64 << 20)})
	for i, l := range g.Loops() {
		o := m.ForLoop(l, []observe.Upstream{up})
		o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 200, Duration: time.Millisecond, Reused: true, BytesOut: 10})
		o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 502, Duration: time.Millisecond})
		o.Observe(&observe.RequestLog{Status: 503})
		if i == 0 {
			o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 0})
		}
		if n := testing.AllocsPerRun(100, func() {
			o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 204, Duration: time.Millisecond})
		}); n != 0 {
			t.Errorf("Observe allocates %v times", n)
		}
		o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 200, GRPC: true, GRPCStatus: 0})
		o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 200, GRPC: true, GRPCStatus: 12})
		if i == 0 {
			if n := testing.AllocsPerRun(100, func() {
				o.Observe(&observe.RequestLog{Upstream: up.Name, Status: 200, GRPC: true, GRPCStatus: 12})
			}); n != 0 {
				t.Errorf("Observe of a gRPC response allocates %v times once its series exists", n)
			}
		}
		o.UpstreamFailed(up.Name, observe.ReasonConnect)
		o.UpstreamFailed(up.Name, observe.ReasonHeaderTimeout)
		o.UpstreamFailed(up.Name, observe.ReasonClientGone) // not the upstream's failure
		if i == 0 {
			if n := testing.AllocsPerRun(100, func() { o.UpstreamFailed(up.Name, observe.ReasonConnect) }); n != 0 {
				t.Errorf("UpstreamFailed allocates %v times once its series exists", n)
			}
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	p0, p1 := backends[0], backends[1]
	for _, want := range []string{
		`pollproxy_requests_total{code="2xx",loop="0",poller="` + p0 + `",upstream="127.0.0.1:8080"} 205`, // 102 and 103 gRPC
		`pollproxy_requests_total{code="2xx",loop="1",poller="` + p1 + `",upstream="127.0.0.1:8080"} 104`,
		`pollproxy_requests_total{code="5xx",loop="0",poller="` + p0 + `",upstream=""} 1`,
		`pollproxy_requests_total{code="reset",loop="0",poller="` + p0 + `",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_upstream_reused_requests_total{loop="1",poller="` + p1 + `",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_request_duration_seconds_bucket{loop="0",poller="` + p0 + `",upstream="127.0.0.1:8080",le="0.001"}`,
		`pollproxy_response_body_bytes_total{loop="0",poller="` + p0 + `",upstream="127.0.0.1:8080"} 10`,
		`pollproxy_poller_waits_total{loop="1",poller="` + p1 + `"}`,
		`pollproxy_poller_adds_total{loop="0",poller="` + p0 + `"}`,
		`pollproxy_loop_descriptors{loop="0",poller="` + p0 + `"}`,
		`pollproxy_panics_total{loop="1",poller="` + p1 + `"} 0`,
		`pollproxy_upstream_open_connections{poller="` + p0 + "," + p1 + `",upstream="127.0.0.1:8080"} 2`,
		`pollproxy_upstream_reuse_ratio{poller="` + p0 + "," + p1 + `",upstream="127.0.0.1:8080"} 0.75`,
		`pollproxy_upstream_broken_responses_total{poller="` + p0 + "," + p1 + `",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_upstream_failures_total{loop="0",poller="` + p0 + `",reason="connect",upstream="127.0.0.1:8080"} 102`,
		`pollproxy_upstream_failures_total{loop="1",poller="` + p1 + `",reason="connect",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_upstream_failures_total{loop="1",poller="` + p1 + `",reason="header_timeout",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_grpc_responses_total{grpc_code="OK",loop="1",poller="` + p1 + `",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_grpc_responses_total{grpc_code="Unimplemented",loop="0",poller="` + p0 + `",upstream="127.0.0.1:8080"} 102`,
		`pollproxy_accesslog_dropped_total{poller="` + p0 + "," + p1 + `"} 7`,
		`pollproxy_h2_window_budget_bytes{poller="` + p0 + "," + p1 + `"} 6.7108864e+07`,
		`pollproxy_h2_window_budget_used_bytes{poller="` + p0 + "," + p1 + `"} 0`,
		`pollproxy_h2_window_budget_shortfalls_total{poller="` + p0 + "," + p1 + `"} 0`,
		`pollproxy_h2_window_budget_goaways_total{poller="` + p0 + "," + p1 + `"} 0`,
		`pollproxy_build_info{poller="` + p0 + "," + p1 + `",version="test"} 1`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `grpc_code="Canceled"`) {
		t.Error("a gRPC code no response carried has a series")
	}
	if strings.Contains(text, `reason="client_gone"`) {
		t.Error("a client that went away counted as an upstream failure")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// fakeUpstream is an upstream with fixed counters.
type fakeUpstream observe.UpstreamStats

func (u *fakeUpstream) Stats() observe.UpstreamStats { return observe.UpstreamStats(*u) }

// TestLoopCPUSeries: every loop has a pollproxy_loop_cpu_seconds_total
// series with its poller, and a loop that burned CPU reports it.
func TestLoopCPUSeries(t *testing.T) {
	if !netpoll.ThreadCPUSupported {
		t.Skip("no per-thread CPU clock on this OS")
	}
	backends := netpoll.Available()
	g, err := netpoll.NewGroup(2, backends)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	defer g.Stop()
	l0 := g.Loops()[0]
	done := make(chan struct{})
	l0.Post(func() {
		// Wall time: on a busy machine the thread gets less CPU than
		// this, so the check below asks only for a clear share of it.
		for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		}
	})
	l0.RefreshCPU(func() { close(done) })
	<-done
	m := New("test")
	m.SetSource(Source{Pollers: strings.Join(backends, ","), Group: g})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	var v0 float64
	found := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "pollproxy_loop_cpu_seconds_total{") {
			continue
		}
		found++
		if strings.HasPrefix(line, `pollproxy_loop_cpu_seconds_total{loop="0",poller="`+l0.Backend()+`"} `) {
			v0, _ = strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		}
	}
	if found != 2 {
		t.Errorf("%d loop CPU series, want 2:\n%s", found, body)
	}
	if v0 < 0.005 {
		t.Errorf("loop 0 spun for 50ms but reports %vs of CPU", v0)
	}
}
