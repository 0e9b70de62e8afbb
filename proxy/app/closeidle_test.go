package app

import (
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/phpfpmtest"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// connCount counts an origin's open connections: accepted and not yet
// closed, as the origin itself sees them.
type connCount struct {
	open, seen atomic.Int64
}

func (c *connCount) hook(srv *http.Server) {
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			c.open.Add(1)
			c.seen.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.open.Add(-1)
		}
	}
}

// countedOrigins are the origins behind the instance under test, one per
// kind of pooled connection: HTTP/1.1, HTTPS, h2c, and FastCGI (a real
// php-fpm, behind a relay that counts the connections it is handed).
type countedOrigins struct {
	h1, tls, h2c, fcgi       connCount
	h1Addr, tlsAddr, h2cAddr string
	fcgiAddr, fcgiRoot       string
	certFile                 string
	release                  chan struct{} // ends /h1/slow
	slow                     chan struct{} // a /h1/slow request arrived
}

func startCountedOrigins(t *testing.T) *countedOrigins {
	t.Helper()
	o := &countedOrigins{release: make(chan struct{}), slow: make(chan struct{}, 1)}
	says := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/slow") {
				o.slow <- struct{}{}
				<-o.release
			}
			fmt.Fprint(w, name)
		})
	}
	o.h1Addr = servertest.Origin(t, says("h1"), o.h1.hook)
	o.h2cAddr = servertest.Origin(t, says("h2c"), o.h2c.hook, func(s *http.Server) {
		s.Protocols = new(http.Protocols)
		s.Protocols.SetHTTP1(true)
		s.Protocols.SetUnencryptedHTTP2(true)
	})
	certFile, keyFile, _ := servertest.CertFiles(t)
	cert, err := stdtls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(says("tls"))
	o.tls.hook(ts.Config)
	ts.TLS = &stdtls.Config{Certificates: []stdtls.Certificate{cert}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	o.tlsAddr, o.certFile = ts.Listener.Addr().String(), certFile
	if testing.Short() {
		return o
	}
	fpm := phpfpmtest.Start(t, 0)
	o.fcgiRoot = phpfpmtest.Site(t, map[string]string{"index.php": "<?php echo 'fcgi';"})
	o.fcgiAddr = countingRelay(t, fpm.Addr, &o.fcgi)
	return o
}

// countingRelay passes connections to target and counts those open: one
// ends when the proxy closes its side (EOF, or an error) or target does.
func countingRelay(t *testing.T, target string, c *connCount) string {
	t.Helper()
	return servertest.ServeConns(t, func(in net.Conn) {
		c.open.Add(1)
		c.seen.Add(1)
		defer c.open.Add(-1)
		out, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer out.Close()
		// Plain copies: io.Copy between two TCP connections splices
		// through pipes that the runtime keeps for reuse, which would
		// blur the count of the process's descriptors.
		go func() {
			io.Copy(struct{ io.Writer }{in}, struct{ io.Reader }{out})
			in.Close()
		}()
		io.Copy(struct{ io.Writer }{out}, struct{ io.Reader }{in})
	})
}

func (o *countedOrigins) counts() []*connCount {
	if o.fcgiAddr == "" {
		return []*connCount{&o.h1, &o.tls, &o.h2c}
	}
	return []*connCount{&o.h1, &o.tls, &o.h2c, &o.fcgi}
}

// keepLong keeps idle origin connections far longer than a test runs
// (the pools' default is 4s): only a close of pollproxy's own closes them.
// php_fastcgi has no such option, and keeps the default.
const keepLong = "\t\t\ttransport http {\n\t\t\t\tkeepalive 5m\n\t\t\t}\n"

// site is a site body proxying /h1/, /tls/, /h2c/ and /fcgi/ to o's origins.
func (o *countedOrigins) site() string {
	s := fmt.Sprintf("\thandle /h1/* {\n\t\treverse_proxy %s {\n%s\t\t}\n\t}\n"+
		"\thandle /tls/* {\n\t\treverse_proxy https://%s {\n\t\t\ttransport http {\n\t\t\t\ttls_trust_pool file %s\n\t\t\t\tkeepalive 5m\n\t\t\t}\n\t\t}\n\t}\n"+
		"\thandle /h2c/* {\n\t\treverse_proxy h2c://%s {\n%s\t\t}\n\t}\n", o.h1Addr, keepLong, o.tlsAddr, o.certFile, o.h2cAddr, keepLong)
	if o.fcgiAddr != "" {
		s += fmt.Sprintf("\thandle_path /fcgi/* {\n\t\troot * %s\n\t\tphp_fastcgi %s\n\t}\n", o.fcgiRoot, o.fcgiAddr)
	}
	return s
}

// fill sends concurrent requests to every origin, over both client
// protocols, so that every loop's pools keep idle connections, and
// checks the answers.
func (o *countedOrigins) fill(t *testing.T, cls map[string]*http.Client, base string) {
	t.Helper()
	paths := map[string]string{"/h1/x": "h1", "/tls/x": "tls", "/h2c/x": "h2c"}
	if o.fcgiAddr != "" {
		paths["/fcgi/index.php"] = "fcgi"
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, c := range cls {
		for path, want := range paths {
			for range 4 {
				wg.Go(func() {
					code, body, err := servertest.Fetch(c, base+path)
					if err != nil || code != 200 || body != want {
						errs <- fmt.Errorf("%s: %d %q %v, want 200 %q", path, code, body, err, want)
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, c := range o.counts() {
		if c.seen.Load() == 0 || c.open.Load() == 0 {
			t.Fatalf("origin %d: %d connections seen, %d open: no idle pooled connection to test", i, c.seen.Load(), c.open.Load())
		}
	}
}

// closeIdleInstance starts site body on backend, with the loops' own
// descriptors counted; it returns the port, clients, and the instance.
func closeIdleInstance(t *testing.T, backend, file, body string) (int, map[string]*http.Client, *running) {
	t.Helper()
	dir := filepath.Dir(file)
	certFile, keyFile, roots := filePair(t, dir)
	port := servertest.FreePort(t)
	write := func(body string) {
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 2\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\thttp_port off\n}\n\nlocalhost:%d {\n\ttls %s %s\n%s}\n",
			backend, filepath.Join(dir, "storage"), port, certFile, keyFile, body)), 0o644)
	}
	write(body)
	r := start(t, file, Options{})
	return port, clients(fmt.Sprintf("127.0.0.1:%d", port), roots), r
}

func descriptors(in *Instance) int64 {
	var n int64
	for _, s := range in.group.Stats() {
		n += s.Descriptors
	}
	return n
}

// TestCloseClosesIdleOriginConns: closing an instance closes every idle
// pooled origin connection (HTTP/1.1, TLS, h2c, FastCGI), which the
// origins see end, and leaves no descriptor of the instance: none in its
// loops' tables, and the process holds no more than before it started. A
// stopped loop closes nothing itself, so idle connections left in the
// pools used to stay open until the process exited, and a php-fpm kept a
// worker for each.
func TestCloseClosesIdleOriginConns(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := startCountedOrigins(t)
		file := filepath.Join(t.TempDir(), "Caddyfile")
		fds := openFDs(t)
		port, cls, r := closeIdleInstance(t, backend, file, o.site())
		o.fill(t, cls, fmt.Sprintf("https://localhost:%d", port))
		for _, c := range cls {
			c.CloseIdleConnections()
		}
		r.in.Close()
		if n := descriptors(r.in); n != 0 {
			t.Errorf("%d descriptors still registered with the closed loops", n)
		}
		for i, c := range o.counts() {
			servertest.Eventually(t, 10*time.Second, fmt.Sprintf("origin %d seeing every connection closed", i), func() bool { return c.open.Load() == 0 })
		}
		if fds >= 0 {
			if !servertest.Within(10*time.Second, func() bool { return openFDs(t) <= fds }) {
				t.Errorf("the process holds %d descriptors, %d before the instance started: %s", openFDs(t), fds, listFDs())
			}
		}
	})
}

// TestReloadClosesDroppedOriginConns: a reload that routes the site
// elsewhere closes the idle connections of the pools it replaced, and a
// request in flight to a dropped upstream finishes first, then its
// connection closes too. They used to stay open until their idle
// timeout (keepalive), and for ever once the loops stopped.
func TestReloadClosesDroppedOriginConns(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := startCountedOrigins(t)
		var other connCount
		otherAddr := servertest.Origin(t, servertest.Says("other"), other.hook)
		file := filepath.Join(t.TempDir(), "Caddyfile")
		port, cls, r := closeIdleInstance(t, backend, file, o.site())
		base := fmt.Sprintf("https://localhost:%d", port)
		o.fill(t, cls, base)

		slow := make(chan string, 1)
		go func() {
			code, body, err := servertest.Fetch(cls["h2"], base+"/h1/slow")
			slow <- fmt.Sprint(code, " ", body, " ", err)
		}()
		<-o.slow

		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(file, []byte(strings.Replace(string(text), o.site(), fmt.Sprintf("\treverse_proxy %s {\n%s\t}\n", otherAddr, keepLong), 1)), 0o644)
		if err := r.in.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		if code, body, err := servertest.Fetch(cls["h2"], base+"/h1/x"); err != nil || code != 200 || body != "other" {
			t.Fatalf("after the reload: %d %q %v, want 200 \"other\"", code, body, err)
		}
		for i, c := range o.counts()[1:] {
			servertest.Eventually(t, 10*time.Second, fmt.Sprintf("origin %d seeing every connection closed", i+1), func() bool { return c.open.Load() == 0 })
		}
		// The HTTP/1.1 origin's idle connections close as the others'
		// do, and it hears so as late: wait for them, down to the one
		// the request in flight holds.
		servertest.Eventually(t, 10*time.Second, "the HTTP/1.1 origin seeing its idle connections closed", func() bool { return o.h1.open.Load() <= 1 })
		if n := o.h1.open.Load(); n != 1 {
			t.Fatalf("HTTP/1.1 origin: %d connections open, want the one of the request in flight", n)
		}
		close(o.release)
		if got := <-slow; got != "200 h1 <nil>" {
			t.Fatalf("request in flight across the reload: %s, want 200 h1", got)
		}
		servertest.Eventually(t, 10*time.Second, "the HTTP/1.1 origin seeing the last connection closed", func() bool { return o.h1.open.Load() == 0 })
		if other.open.Load() == 0 {
			t.Fatal("the new upstream kept no connection")
		}
	})
}

// openFDs is the process's open descriptors, or -1 where /proc does not
// list them.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func listFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+l)
	}
	return strings.Join(out, " ")
}
