package app

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	pptls "github.com/pollproxy/pollproxy/tls"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// origin is a plain HTTP/1.1 app on loopback that answers with its name;
// /slow waits for release (or two seconds) first.
type origin struct {
	name    string
	addr    string
	started chan struct{} // a /slow request arrived
	release chan struct{}
}

func startOrigin(t *testing.T, name string) *origin {
	t.Helper()
	o := &origin{name: name, started: make(chan struct{}, 16), release: make(chan struct{})}
	o.addr = servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			o.started <- struct{}{}
			select {
			case <-o.release:
			case <-time.After(2 * time.Second):
			}
			fmt.Fprintf(w, "%s slow", o.name)
			return
		}
		w.Header().Set("X-Origin", o.name)
		fmt.Fprintf(w, "%s %s", o.name, r.Header.Get("X-Site"))
	}))
	return o
}

func scrape(t *testing.T, admin string) string {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// filePair writes a self-signed certificate for localhost and returns the
// files and a pool trusting it.
func filePair(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	return servertest.CertFiles(t)
}

// localRoots is a pool trusting the local CA's root in storage.
func localRoots(t *testing.T, storage string) *x509.CertPool {
	t.Helper()
	roots := x509.NewCertPool()
	localRoot(t, storage, roots)
	return roots
}

// localRoot reads the local CA's root from the storage pollproxy uses.
func localRoot(t *testing.T, storage string, roots *x509.CertPool) {
	t.Helper()
	c, err := tlscerts.New(tlscerts.Config{StorageDir: storage})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pemBytes, err := c.RootPEM()
	if err != nil {
		t.Fatal(err)
	}
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("local root: no certificate")
	}
}

func haveBackends(t *testing.T, names ...string) {
	for _, n := range names {
		if netpoll.ValidName(n) != nil {
			t.Skipf("poller %s not available here", n)
		}
	}
}

// running is an instance under test with the log it writes.
type running struct {
	t   *testing.T
	in  *Instance
	log *servertest.SyncBuffer
}

// start loads the Caddyfile at file and starts it; the test's cleanup
// closes it.
func start(t *testing.T, file string, opts Options) *running {
	t.Helper()
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{t: t, log: &servertest.SyncBuffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(r.log, nil))
	opts.Version = "test"
	if r.in, err = Start(cfg, opts); err != nil {
		t.Fatalf("start: %v\n%s", err, r.log)
	}
	t.Cleanup(func() {
		r.in.Close()
		if t.Failed() {
			t.Logf("instance log:\n%s", r.log)
		}
	})
	return r
}

// startBuilt starts a configuration built in code.
func startBuilt(t *testing.T, cfg *config.Config, opts Options) *Instance {
	t.Helper()
	in, err := Start(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in
}

// logged waits for a log line containing s and returns the log so far.
func (r *running) logged(s string, d time.Duration) string {
	r.t.Helper()
	out, ok := r.log.Await(s, d, nil)
	if !ok {
		r.t.Fatalf("no %q in the instance's log after %v", s, d)
	}
	return out
}

// getAsync GETs url on c in the background; the result is "status body"
// or the error.
func getAsync(c *http.Client, url string) <-chan string {
	req, _ := http.NewRequest("GET", url, nil)
	return doAsync(c, req)
}

// doAsync sends req on c in the background; the result is "status body"
// or the error.
func doAsync(c *http.Client, req *http.Request) <-chan string {
	out := make(chan string, 1)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return out
}

// selfSigned is a TLS configuration with a certificate for localhost and
// a pool trusting it.
func selfSigned(t *testing.T) (*stdtls.Config, *x509.CertPool) {
	t.Helper()
	cert, err := pptls.SelfSigned([]string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	return pptls.ServerConfig([]stdtls.Certificate{cert}), roots
}

// runListening starts cmd, a server the test needs (haproxy,
// oauth2-proxy), and waits until it accepts connections on addr; the
// test's cleanup stops it and shows its output when the test failed.
func runListening(t *testing.T, name string, cmd *exec.Cmd, addr string) {
	t.Helper()
	out := &servertest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out)
		}
	})
	var err error
	if !servertest.Within(20*time.Second, func() bool {
		var c net.Conn
		if c, err = net.Dial("tcp", addr); err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("%s did not listen on %s: %v\n%s", name, addr, err, out)
	}
}

// send makes a request with body (none when empty) and returns the
// response's status and body.
func send(t *testing.T, c *http.Client, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(t, c, req)
}

// do sends req and returns the response's status and body.
func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dumpDOM loads url in headless Chromium with flags added, lets virtual
// time run out (only once the page's fetches are done) and returns the
// first group of result in the DOM the page left.
func dumpDOM(t *testing.T, chromium, url string, result *regexp.Regexp, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=30000"}, flags...)
	cmd := exec.CommandContext(ctx, chromium, append(args, "--dump-dom", url)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	m := result.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page wrote no result:\n%s\nchromium's log:\n%s", dom, stderr.String())
	}
	return string(m[1])
}

// runEach runs the exchanges against base with each client of cls, one
// subtest a protocol.
func runEach(t *testing.T, cls map[string]*http.Client, base string, xs []exchange) {
	t.Helper()
	for proto, c := range cls {
		t.Run(proto, func(t *testing.T) {
			for _, x := range xs {
				x.run(t, c, base)
			}
		})
	}
}
