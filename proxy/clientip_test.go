package proxy_test

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// logRecorder is an Observer keeping what the access log would print.
type logRecorder struct {
	mu   sync.Mutex
	logs []observe.RequestLog
}

func (r *logRecorder) Observe(l *observe.RequestLog) {
	r.mu.Lock()
	r.logs = append(r.logs, *l)
	r.mu.Unlock()
}

func (r *logRecorder) last() observe.RequestLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs[len(r.logs)-1]
}

// TestForwardedFields: what reaches the origin over real h2 and HTTP/1.1
// connections. Without trusted proxies a client's X-Forwarded-For, -Proto
// and -Host are replaced (it cannot forge its address); from a trusted
// proxy they are kept and the peer appended. The access log names the same
// client.
func TestForwardedFields(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newRecordingOrigin(t, nil)
		send := func(cl *http.Client, url string) {
			t.Helper()
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Add("X-Forwarded-For", "6.6.6.6")
			req.Header.Add("X-Forwarded-For", "192.0.2.1")
			req.Header.Set("X-Forwarded-Proto", "http")
			req.Header.Set("X-Forwarded-Host", "forged.example")
			req.Header.Set("X-Real-IP", "198.51.100.3")
			if res, _ := do(t, cl, req); res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
		}
		check := func(label string, rec *logRecorder, xff, proto, host, client string) {
			t.Helper()
			s := o.last()
			got := []string{strings.Join(s.Header.Values("X-Forwarded-For"), "|"), strings.Join(s.Header.Values("X-Forwarded-Proto"), "|"), strings.Join(s.Header.Values("X-Forwarded-Host"), "|")}
			if want := []string{xff, proto, host}; strings.Join(got, " ; ") != strings.Join(want, " ; ") {
				t.Errorf("%s: origin saw X-Forwarded-For/Proto/Host %q, want %q", label, got, want)
			}
			if l := rec.last(); l.ClientIP.String() != client {
				t.Errorf("%s: access log client %s, want %s", label, l.ClientIP, client)
			}
		}

		for _, c := range []struct {
			name                     string
			trusted                  []netip.Prefix
			ipHeaders                []string
			xff, proto, host, client string
		}{
			{"untrusted", nil, nil, "127.0.0.1", "https", "app.example", "127.0.0.1"},
			{"trusted", route.PrivateRanges(), nil, "6.6.6.6, 192.0.2.1, 127.0.0.1", "http", "forged.example", "6.6.6.6"},
			{"X-Real-IP", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, []string{"X-Real-IP"},
				"6.6.6.6, 192.0.2.1, 127.0.0.1", "http", "forged.example", "198.51.100.3"},
			{"other proxy trusted", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, nil, "127.0.0.1", "https", "app.example", "127.0.0.1"},
		} {
			rec := &logRecorder{}
			e := startProxy(t, backend, 2, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}, Observer: rec,
				TrustedProxies: c.trusted, ClientIPHeaders: c.ipHeaders})
			send(e.h2Client(nil), "https://app.example/a")
			check("h2 "+c.name, rec, c.xff, c.proto, c.host, c.client)
			send(e.h1Client(), "https://app.example/a")
			check("h1 "+c.name, rec, c.xff, c.proto, c.host, c.client)
		}
	})
}
