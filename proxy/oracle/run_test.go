package oracle

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// request is one request the oracle sends to a site.
type request struct {
	method, path string
	header       [][2]string
	body         string
	chunked      bool // the body without a length (chunked on HTTP/1.1)
	h1only       bool // fields HTTP/2 cannot carry (Connection)
}

func (r request) String() string {
	s := r.method + " " + r.path
	for _, h := range r.header {
		s += " [" + h[0] + ": " + h[1] + "]"
	}
	if r.body != "" {
		s += " +body"
		if r.chunked {
			s += "(chunked)"
		}
	}
	return s
}

// answers are one server's answers to a plan's requests by case name
// (site, protocol, request), each as its compared fields.
type answers map[string]map[string]string

// clients are the ways the oracle asks: HTTP/1.1 and HTTP/2 over TLS to
// the https port, plain HTTP/1.1 to the http port (the redirects).
type clients struct {
	h1, h2, plain *http.Client
}

func newClients(p *plan) clients {
	dial := func(port int) func(ctx context.Context, network, addr string) (net.Conn, error) {
		return func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
		}
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	only := func(h2 bool) *http.Protocols {
		var p http.Protocols
		p.SetHTTP1(!h2)
		p.SetHTTP2(h2)
		return &p
	}
	// A configuration each: a transport may change the one it is given
	// (the HTTP/2 one adds "h2" to NextProtos).
	skip := func() *stdtls.Config { return &stdtls.Config{InsecureSkipVerify: true} }
	h1 := &http.Transport{DialContext: dial(p.https), TLSClientConfig: skip(), DisableCompression: true, Protocols: only(false)}
	h2 := &http.Transport{DialContext: dial(p.https), TLSClientConfig: skip(), DisableCompression: true, Protocols: only(true)}
	plain := &http.Transport{DialContext: dial(p.http), DisableCompression: true}
	mk := func(rt http.RoundTripper) *http.Client {
		return &http.Client{Transport: rt, CheckRedirect: noRedirect, Timeout: 10 * time.Second}
	}
	return clients{mk(h1), mk(h2), mk(plain)}
}

func (c clients) close() {
	c.h1.Transport.(*http.Transport).CloseIdleConnections()
	c.h2.Transport.(*http.Transport).CloseIdleConnections()
	c.plain.Transport.(*http.Transport).CloseIdleConnections()
}

// ask sends every request of the plan, one at a time (the origin's log
// is read between them), and returns the answers.
func ask(t *testing.T, p *plan, o *origin) answers {
	c := newClients(p)
	defer c.close()
	out := answers{}
	for _, s := range p.sites {
		for _, r := range s.src.requestsFor() {
			for _, proto := range []string{"h1", "h2"} {
				if proto == "h2" && r.h1only {
					continue
				}
				cl := c.h1
				if proto == "h2" {
					cl = c.h2
				}
				got := send(cl, "https://"+s.host+fmt.Sprintf(":%d", p.https), r, o)
				if want := map[string]string{"h1": "HTTP/1.1", "h2": "HTTP/2.0"}[proto]; got["error"] == "" && got["proto"] != want {
					t.Errorf("%s %s: answered over %s, want %s", s.label, r, got["proto"], want)
				}
				if got["error"] != "" {
					t.Logf("%s %s %s: no answer from this server", s.label, proto, r)
				}
				out[s.label+" "+proto+" "+r.String()] = got
			}
		}
		// Caddy's HTTP->HTTPS redirect for the site's name.
		r := request{method: "GET", path: "/redirected/path?q=1"}
		out[s.label+" http "+r.String()] = send(c.plain, "http://"+s.host+fmt.Sprintf(":%d", p.http), r, o)
	}
	return out
}

// toHTTP is r as a request to base: its body (chunked when r says so),
// User-Agent "oracle" unless r sets it (empty: none is sent), and a Host
// field as the request's host.
func (r request) toHTTP(base string) (*http.Request, error) {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(strings.NewReader(r.body))
		}
	}
	req, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "oracle")
	for _, h := range r.header {
		if strings.EqualFold(h[0], "User-Agent") && h[1] == "" {
			req.Header.Set("User-Agent", "") // Go's client then sends none
			continue
		}
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	return req, nil
}

// send makes one request and returns its answer's fields: the status,
// every response field (lower-case name: values in order), the body
// (decoded when encoded) and what the origin received.
func send(c *http.Client, base string, r request, o *origin) map[string]string {
	req, err := r.toHTTP(base)
	if err != nil {
		return map[string]string{"error": err.Error()}
	}
	mark := o.mark()
	got := map[string]string{}
	resp, err := c.Do(req)
	if err != nil {
		got["error"] = "no answer" // the messages differ (reset, EOF, protocol error)
	} else {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			got["body error"] = "body cut"
		}
		got["status"] = fmt.Sprint(resp.StatusCode)
		got["proto"] = resp.Proto
		for name, vs := range resp.Header {
			got["resp "+strings.ToLower(name)] = strings.Join(vs, "\n")
		}
		got["body"] = decode(resp.Header.Get("Content-Encoding"), b)
	}
	for i, rec := range o.since(mark) {
		k := fmt.Sprintf("origin%d ", i+1)
		got[k+"request"] = rec.method + " " + rec.target + " " + rec.proto
		got[k+"upstream"] = rec.upstream
		for _, f := range rec.fields {
			key := k + strings.ToLower(f[0])
			if v, ok := got[key]; ok {
				got[key] = v + "\n" + f[1]
			} else {
				got[key] = f[1]
			}
		}
		got[k+"body"] = rec.body
	}
	return got
}

func decode(enc string, b []byte) string {
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return "undecodable gzip"
		}
		d, err := io.ReadAll(zr)
		if err != nil {
			return "undecodable gzip"
		}
		return string(d)
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return "undecodable zstd"
		}
		defer zr.Close()
		d, err := io.ReadAll(zr)
		if err != nil {
			return "undecodable zstd"
		}
		return string(d)
	}
	return string(b)
}

// runCaddy serves the plan with Caddy and returns its answers.
func runCaddy(t *testing.T, bin string, p *plan, o *origin, certs *strings.Replacer) answers {
	out, exited, stop := startCaddy(t, bin, certs.Replace(p.caddy))
	defer stop()
	if err := ready(p, exited); err != nil {
		t.Fatalf("Caddy: %v\nits Caddyfile:\n%s\nits output:\n%s", err, p.caddy, out)
	}
	return ask(t, p, o)
}

// runPollproxy serves the plan with pollproxy (one loop of backend) and
// returns its answers.
func runPollproxy(t *testing.T, backend string, p *plan, o *origin, certs *strings.Replacer) answers {
	in, log := startPollproxy(t, backend, certs.Replace(p.pollproxy))
	defer in.Close()
	if err := ready(p, nil); err != nil {
		t.Fatalf("pollproxy: %v\n%s", err, log)
	}
	return ask(t, p, o)
}

// caddyfileIn writes caddyfile, with STORAGE standing for a storage
// folder, into a new temporary folder, and returns the folder and the
// file.
func caddyfileIn(t *testing.T, caddyfile string) (dir, file string) {
	dir = t.TempDir()
	file = filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(strings.ReplaceAll(caddyfile, "STORAGE", filepath.Join(dir, "storage"))), 0o644)
	return dir, file
}

// startCaddy runs Caddy (bin) on caddyfile (caddyfileIn), with its HOME
// and XDG folders beside it. out is what it prints; exited gets its exit
// and is then closed; stop kills it (by its PID) and waits for it.
func startCaddy(t *testing.T, bin, caddyfile string) (out *servertest.SyncBuffer, exited <-chan error, stop func()) {
	p, out, exited := startCaddyProcess(t, bin, caddyfile)
	return out, exited, func() {
		p.Kill()
		<-exited
	}
}

// startCaddyProcess is startCaddy with Caddy's process in hand, for a
// test that signals it; the caller kills it and drains exited.
func startCaddyProcess(t *testing.T, bin, caddyfile string) (p *os.Process, out *servertest.SyncBuffer, exited <-chan error) {
	dir, file := caddyfileIn(t, caddyfile)
	cmd := exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
	out = &servertest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		close(done) // a ready may have taken the value: a wait for the exit must not block
	}()
	return cmd.Process, out, done
}

// startPollproxy starts pollproxy on caddyfile (caddyfileIn) with one
// loop of backend, as the oracle compares it; log is its log.
func startPollproxy(t *testing.T, backend, caddyfile string) (in *app.Instance, log *servertest.SyncBuffer) {
	_, file := caddyfileIn(t, caddyfile)
	cfg, err := app.Load(file)
	if err != nil {
		t.Fatalf("pollproxy: %v\nits Caddyfile:\n%s", err, caddyfile)
	}
	log = &servertest.SyncBuffer{}
	in, err = app.Start(cfg, app.Options{Pollers: []string{backend}, Loops: 1, LoopsSet: true,
		Logger: slog.New(slog.NewTextHandler(log, nil)), Version: "oracle"})
	if err != nil {
		t.Fatalf("pollproxy: %v\n%s", err, log)
	}
	return in, log
}

// certificate writes a self-signed certificate for names and returns the
// replacer that puts its files in a plan's Caddyfile.
func certificate(t *testing.T, names []string) *strings.Replacer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "oracle"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return strings.NewReplacer("CERTFILE", cert, "KEYFILE", keyFile)
}

// untilAnswers waits, against another process's clock (30 s for its
// start-up), until answers reports that the server started answers,
// failing the test if it exits first or never answers; what is the
// failure's wording ("answer", "handshake").
func untilAnswers(t *testing.T, exited <-chan error, what string, answers func() bool) {
	t.Helper()
	if !servertest.Within(30*time.Second, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("exited: %v", err)
		default:
		}
		return answers()
	}) {
		t.Fatalf("no %s from the server", what)
	}
}

// ready waits until every site completes a TLS handshake (its
// certificate is there) and the http port accepts connections.
func ready(p *plan, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range p.sites {
		for {
			select {
			case err := <-exited:
				return fmt.Errorf("exited: %v", err)
			default:
			}
			d := &net.Dialer{Timeout: time.Second}
			c, err := stdtls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", p.https),
				&stdtls.Config{InsecureSkipVerify: true, ServerName: s.host})
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no TLS handshake for %s: %v", s.host, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.http))
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("http port: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
