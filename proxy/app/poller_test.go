//lint:file-ignore SA1019 countingH2 is x/net's Transport: unlike net/http's HTTP/2 it dials once however many requests wait, so a second dial means a lost connection.

package app

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// switchSetup is a running instance with a Caddyfile on disk, the pair of
// backends to switch between and the addresses to reach it.
type switchSetup struct {
	*running
	file     string
	conf     func(poller string) []byte
	roots    *x509.CertPool
	addr     string // the HTTPS listener
	base     string // https://localhost:port
	admin    string
	from, to string
}

func startSwitchable(t *testing.T, origin string, loops int) *switchSetup {
	t.Helper()
	names := netpoll.Available()
	if len(names) < 2 {
		t.Skip("one poller backend here: nothing to switch to")
	}
	dir := t.TempDir()
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
	s := &switchSetup{roots: roots, file: filepath.Join(dir, "Caddyfile"), from: names[0], to: names[1],
		addr: fmt.Sprintf("127.0.0.1:%d", port), base: fmt.Sprintf("https://localhost:%d", port),
		admin: fmt.Sprintf("127.0.0.1:%d", adminPort)}
	s.conf = func(poller string) []byte {
		return []byte(fmt.Sprintf(`{
	poller %s
	loops %d
	admin %s
	storage %s
	default_bind 127.0.0.1
}

localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, poller, loops, s.admin, filepath.Join(dir, "storage"), port, origin, certFile, keyFile))
	}
	os.WriteFile(s.file, s.conf(s.from), 0o644)
	s.running = start(t, s.file, Options{})
	return s
}

// post sends names to /poller as a JSON string and returns the status
// and answer.
func (s *switchSetup) post(t *testing.T, names string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(names)
	return s.postJSON(t, string(body))
}

// postJSON sends body to /poller as application/json.
func (s *switchSetup) postJSON(t *testing.T, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+s.admin+"/poller", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// countingH2 is an x/net/http2 client over one TLS connection that counts
// the connections it dials: a second dial means the first was lost.
func countingH2(addr string, roots *x509.CertPool, dials *atomic.Int64) *http.Client {
	tr := &http2.Transport{
		TLSClientConfig: &stdtls.Config{RootCAs: roots, NextProtos: []string{"h2"}, ServerName: "localhost"},
		DialTLSContext: func(ctx context.Context, network, _ string, cfg *stdtls.Config) (net.Conn, error) {
			dials.Add(1)
			d := stdtls.Dialer{Config: cfg}
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// countingH1 is an HTTP/1.1 keep-alive client that counts its dials.
func countingH1(addr string, roots *x509.CertPool, conns int, dials *atomic.Int64) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:     &stdtls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}, ServerName: "localhost"},
		MaxConnsPerHost:     conns,
		MaxIdleConnsPerHost: conns,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// TestPollerSwitchAdminAndReload switches a running instance through POST
// /poller and through a reload whose poller line changed, with a request
// in flight and an idle h2 connection that both survive, and refuses bad
// bodies with a 400 that says why.
func TestPollerSwitchAdminAndReload(t *testing.T) {
	o := startOrigin(t, "A")
	s := startSwitchable(t, o.addr, 2)
	var dials atomic.Int64
	c := countingH2(s.addr, s.roots, &dials)
	if code, body, _ := servertest.Get(t, c, s.base+"/"); code != 200 || body != "A " {
		t.Fatalf("before: %d %q", code, body)
	}
	slow := getAsync(c, s.base+"/slow")
	<-o.started

	split := s.from + " " + s.to
	code, answer := s.post(t, split)
	if code != 200 {
		t.Fatalf("POST /poller %q: %d %s", split, code, answer)
	}
	want := fmt.Sprintf("loop 0 %s (unchanged)\nloop 1 %s (was %s;", s.from, s.to, s.from)
	if !strings.HasPrefix(answer, want) {
		t.Errorf("POST /poller answered %q, want it to start %q", answer, want)
	}
	if got := strings.Join(s.in.Backends(), " "); got != split {
		t.Errorf("backends %q after POST, want %q", got, split)
	}
	resp, err := http.Get("http://" + s.admin + "/poller")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("loop 0 %s\nloop 1 %s\n", s.from, s.to); string(b) != want {
		t.Errorf("GET /poller: %q, want %q", b, want)
	}
	m := scrape(t, s.admin)
	for _, want := range []string{
		`pollproxy_poller_waits_total{loop="1",poller="` + s.to + `"}`,
		`pollproxy_build_info{poller="` + s.from + "," + s.to + `",version="test"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics after POST lack %s", want)
		}
	}

	for _, bad := range []struct{ body, want string }{
		{"", "poller: want a backend"},
		{"select", `poller: unknown backend "select"`},
		{"auto " + s.from, "auto is only allowed alone"},
	} {
		if code, answer := s.post(t, bad.body); code != 400 || !strings.Contains(answer, bad.want) {
			t.Errorf("POST %q: %d %q, want 400 with %q", bad.body, code, answer, bad.want)
		}
	}
	if code, answer := s.postJSON(t, "epoll"); code != 400 || !strings.Contains(answer, "want a JSON body") {
		t.Errorf("POST a body that is not JSON: %d %q", code, answer)
	}
	if code, answer := s.postJSON(t, fmt.Sprintf("[%q, %q]", s.from, s.to)); code != 200 || !strings.Contains(answer, "loop 1 "+s.to) {
		t.Errorf("POST a JSON array: %d %q", code, answer)
	}
	if resp, err := http.Head("http://" + s.admin + "/poller"); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD /poller: %v %v", resp, err)
	}
	req, _ := http.NewRequest("DELETE", "http://"+s.admin+"/poller", strings.NewReader("[]"))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("DELETE /poller: %v %v", resp, err)
	}

	// A reload whose poller line changed applies it live.
	os.WriteFile(s.file, s.conf(s.to), 0o644)
	if err := s.in.Reload(); err != nil {
		t.Fatal(err)
	}
	s.logged("msg=reloaded", time.Second)
	if got := strings.Join(s.in.Backends(), " "); got != s.to+" "+s.to {
		t.Errorf("backends %q after the reload, want %s on both", got, s.to)
	}
	if strings.Contains(s.log.String(), "option=poller") {
		t.Error("the reload still says the poller applies after a restart")
	}
	// A reload that leaves the line alone leaves the loops where POST put them.
	if code, answer := s.post(t, s.from); code != 200 {
		t.Fatalf("POST: %d %s", code, answer)
	}
	if err := s.in.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.in.Backends(), " "); got != s.from+" "+s.from {
		t.Errorf("backends %q after a reload with the same line, want the POSTed %s", got, s.from)
	}

	close(o.release)
	if got := <-slow; got != "200 A slow" {
		t.Errorf("request in flight across three switches: %q", got)
	}
	if code, body, _ := servertest.Get(t, c, s.base+"/"); code != 200 || body != "A " {
		t.Errorf("after: %d %q", code, body)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the client dialed %d connections: one was lost in a switch", n)
	}
	if m := scrape(t, s.admin); !strings.Contains(m, `pollproxy_requests_total{code="2xx",loop="`) ||
		!strings.Contains(m, `pollproxy_build_info{poller="`+s.from+`",version="test"} 1`) {
		t.Errorf("metrics after switching back:\n%s", m)
	}
}
