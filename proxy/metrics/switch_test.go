package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/observe"
)

// TestLabelsFollowSwitch: after a live poller switch, a loop's requests
// and poller counters carry its new backend, and the process's backend set
// is the one SetPollers gave.
func TestLabelsFollowSwitch(t *testing.T) {
	backends := netpoll.Available()
	if len(backends) < 2 {
		t.Skip("one poller backend here: nothing to switch to")
	}
	from, to := backends[0], backends[1]
	g, err := netpoll.NewGroup(1, []string{from})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer func() { g.Stop(); g.Close() }()
	up := &fakeUpstream{Name: "127.0.0.1:8080"}
	m := New("test")
	m.SetSource(Source{Pollers: from, Group: g, Upstreams: []observe.Upstream{up}})
	l := g.Loops()[0]
	o := m.ForLoop(l, []observe.Upstream{up})
	onLoop := func(f func()) {
		done := make(chan struct{})
		l.Post(func() { f(); close(done) })
		<-done
	}
	req := &observe.RequestLog{Upstream: up.Name, Status: 200, Duration: time.Millisecond}
	onLoop(func() { o.Observe(req); o.Observe(&observe.RequestLog{Status: 502}) })
	if _, err := g.Switch([]string{to}); err != nil {
		t.Fatal(err)
	}
	m.SetPollers(to)
	onLoop(func() { o.Observe(req); o.Observe(req); o.Observe(&observe.RequestLog{Status: 502}) })

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`pollproxy_requests_total{code="2xx",loop="0",poller="` + from + `",upstream="127.0.0.1:8080"} 1`,
		`pollproxy_requests_total{code="2xx",loop="0",poller="` + to + `",upstream="127.0.0.1:8080"} 2`,
		`pollproxy_requests_total{code="5xx",loop="0",poller="` + to + `",upstream=""} 1`,
		`pollproxy_poller_waits_total{loop="0",poller="` + to + `"}`,
		`pollproxy_build_info{poller="` + to + `",version="test"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `pollproxy_poller_waits_total{loop="0",poller="`+from+`"}`) {
		t.Error("the loop's poller counters still carry its old backend")
	}
	if t.Failed() {
		t.Log(text)
	}
}
