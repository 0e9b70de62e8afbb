package upstream_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// awaitHealth waits for the active checks to give up's verdict. The checks
// run on their own goroutine and their own ticker, so the test waits for
// the verdict rather than for a time.
func awaitHealth(t *testing.T, up *upstream.Upstream, unhealthy bool) {
	t.Helper()
	servertest.Eventually(t, 5*time.Second, fmt.Sprintf("%s unhealthy %v", up.Name, unhealthy), func() bool { return up.Unhealthy() == unhealthy })
}

// healthOrigin is an origin whose /healthz answers ok, or sick when told
// to, and counts the checks and what they asked for.
type healthOrigin struct {
	sick   atomic.Bool
	status atomic.Int32 // 0: 200
	checks atomic.Int64
	asked  atomic.Value // "host x-check" of the last check
}

func (o *healthOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	o.checks.Add(1)
	o.asked.Store(r.Host + " " + r.Header.Get("X-Check"))
	if s := o.status.Load(); s != 0 {
		w.WriteHeader(int(s))
	}
	if o.sick.Load() {
		io.WriteString(w, "sick")
	} else {
		io.WriteString(w, "ok")
	}
}

// upstreamOf is the Upstream for an httptest server, as proxy/app makes it.
func upstreamOf(t *testing.T, srv *httptest.Server) *upstream.Upstream {
	t.Helper()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return &upstream.Upstream{Name: ap.String(), Addr: ap}
}

// TestActiveHealth: an upstream whose checks fail (by body or by status)
// health_fails times in a row is taken out of rotation, and put back after
// health_passes good ones; the checks carry health_headers (Host sets the
// host asked for), and an upstream no longer checked is back in rotation.
func TestActiveHealth(t *testing.T) {
	o := &healthOrigin{}
	srv := httptest.NewServer(o)
	defer srv.Close()
	up := upstreamOf(t, srv)

	hc := upstream.NewHealthChecker()
	defer hc.Close()
	cfg := upstream.ActiveHealth{URI: "/healthz", Interval: 10 * time.Millisecond, Timeout: time.Second,
		Body: regexp.MustCompile(`^ok$`), Passes: 2, Fails: 2,
		Headers: http.Header{"Host": {"health.internal"}, "X-Check": {"1"}}}
	hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{up: cfg})
	for o.checks.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	if up.Unhealthy() || !up.Healthy(time.Now()) {
		t.Fatal("healthy origin out of rotation")
	}
	if h, _ := o.asked.Load().(string); h != "health.internal 1" {
		t.Errorf("check asked for host and X-Check %q", h)
	}

	o.sick.Store(true) // 200, but the body does not match
	awaitHealth(t, up, true)
	if up.Healthy(time.Now()) {
		t.Error("Healthy while the active checks fail")
	}
	o.sick.Store(false)
	awaitHealth(t, up, false)

	o.status.Store(503) // body matches, status does not
	awaitHealth(t, up, true)
	o.status.Store(0)
	awaitHealth(t, up, false)

	o.sick.Store(true)
	awaitHealth(t, up, true)
	hc.Update(nil)
	if up.Unhealthy() {
		t.Fatal("still out of rotation after its checks stopped")
	}
}

// TestActiveHealthPortAndSocket: health_port checks another port of the
// upstream's address, and an upstream on a Unix socket is checked over
// that socket.
func TestActiveHealthPortAndSocket(t *testing.T) {
	o := &healthOrigin{}
	o.sick.Store(true)
	health := httptest.NewServer(o)
	defer health.Close()
	app := httptest.NewServer(http.NotFoundHandler()) // the upstream's own port: no /healthz
	defer app.Close()
	up := upstreamOf(t, app)

	sock := filepath.Join(t.TempDir(), "app.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	unixOrigin := &healthOrigin{}
	unixOrigin.sick.Store(true)
	unixSrv := httptest.NewUnstartedServer(unixOrigin)
	unixSrv.Listener = l
	unixSrv.Start()
	defer unixSrv.Close()
	unixUp := &upstream.Upstream{Name: "unix/" + sock, Path: sock}

	hc := upstream.NewHealthChecker()
	defer hc.Close()
	port := netip.MustParseAddrPort(health.Listener.Addr().String()).Port()
	body := regexp.MustCompile(`^ok$`)
	hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{
		up:     {URI: "/healthz", Port: int(port), Interval: 10 * time.Millisecond, Body: body},
		unixUp: {URI: "/healthz", Interval: 10 * time.Millisecond, Body: body},
	})
	awaitHealth(t, up, true)
	awaitHealth(t, unixUp, true)
	o.sick.Store(false)
	unixOrigin.sick.Store(false)
	awaitHealth(t, up, false)
	awaitHealth(t, unixUp, false)
	if o.checks.Load() == 0 || unixOrigin.checks.Load() == 0 {
		t.Errorf("checks: health port %d, socket %d", o.checks.Load(), unixOrigin.checks.Load())
	}
}

// TestActiveHealthUpstream: health_upstream checks another address (a
// sidecar) for the upstream, asking for that host, and health_headers'
// {http.reverse_proxy.active.target_upstream} names the upstream meant.
func TestActiveHealthUpstream(t *testing.T) {
	sidecar := &healthOrigin{}
	sidecar.sick.Store(true)
	side := httptest.NewServer(sidecar)
	defer side.Close()
	app := httptest.NewServer(http.NotFoundHandler()) // the upstream itself has no /healthz
	defer app.Close()
	up := upstreamOf(t, app)
	sideAddr := side.Listener.Addr().String()

	hc := upstream.NewHealthChecker()
	defer hc.Close()
	hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{
		up: {URI: "/healthz", Upstream: sideAddr, Interval: 10 * time.Millisecond, Body: regexp.MustCompile(`^ok$`),
			Headers: http.Header{"X-Check": {upstream.TargetUpstream}}},
	})
	awaitHealth(t, up, true)
	sidecar.sick.Store(false)
	awaitHealth(t, up, false)
	if got, want := sidecar.asked.Load(), sideAddr+" "+up.Name; got != want {
		t.Errorf("the sidecar was asked %q, want %q", got, want)
	}
}

// TestActiveHealthH2C: checks of an h2c upstream speak HTTP/2 with prior
// knowledge, which is all such an origin takes (an HTTP/1.1 check would
// find it dead), and still see its status.
func TestActiveHealthH2C(t *testing.T) {
	o := &healthOrigin{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// net/http's server with HTTP/2 over cleartext alone: prior
	// knowledge only, as a gRPC server takes it.
	protos := new(http.Protocols)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2", 500)
			return
		}
		o.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	up := &upstream.Upstream{Name: ap.String(), Addr: ap}
	hc := upstream.NewHealthChecker()
	defer hc.Close()
	hc.Update(map[*upstream.Upstream]upstream.ActiveHealth{up: {URI: "/healthz", Interval: 10 * time.Millisecond,
		Timeout: time.Second, Passes: 1, Fails: 1, H2C: true}})
	servertest.Eventually(t, 5*time.Second, "three checks", func() bool { return o.checks.Load() >= 3 })
	if up.Unhealthy() {
		t.Fatal("an h2c upstream answering 200 is unhealthy")
	}
	o.status.Store(503)
	awaitHealth(t, up, true)
	o.status.Store(0)
	awaitHealth(t, up, false)
}
