package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	pptls "github.com/pollproxy/pollproxy/tls"
	"go.uber.org/zap"
)

func newTestManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.StorageDir == "" {
		cfg.StorageDir = t.TempDir()
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rootPool(t *testing.T, c *Manager) (*x509.CertPool, *x509.Certificate) {
	t.Helper()
	p, err := c.RootPEM()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("RootPEM is not a PEM certificate: %q", p)
	}
	root, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(root)
	return pool, root
}

// hello is a ClientHello for serverName over a connection that is not
// there (certmagic logs the connection's addresses).
func hello(t *testing.T, serverName string) *stdtls.ClientHelloInfo {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &stdtls.ClientHelloInfo{ServerName: serverName, Conn: a}
}

// certFor asks TLSConfig's GetCertificate for serverName, as a handshake
// with that SNI would.
func certFor(t *testing.T, c *Manager, serverName string) *stdtls.Certificate {
	t.Helper()
	cert, err := c.TLSConfig().GetCertificate(hello(t, serverName))
	if err != nil {
		t.Fatalf("GetCertificate(%q): %v", serverName, err)
	}
	return cert
}

func parseChain(t *testing.T, cert *stdtls.Certificate) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for _, der := range cert.Certificate {
		x, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func verifyChain(chain []*x509.Certificate, roots *x509.CertPool, name string) error {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		DNSName:       name,
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func TestManagerInternalVerifies(t *testing.T) {
	c := newTestManager(t, Config{})
	start := time.Now()
	if err := c.AddInternal("localhost", "127.0.0.1", "::1", "[::1]", "App.Test."); err != nil {
		t.Fatal(err)
	}
	t.Logf("local CA and four leaves in %v", time.Since(start))
	roots, root := rootPool(t, c)
	if !root.IsCA || root.MaxPathLen != 1 || root.Subject.Organization[0] != localCAOrganization {
		t.Fatalf("root: IsCA %v MaxPathLen %d subject %v", root.IsCA, root.MaxPathLen, root.Subject)
	}
	if d := time.Until(root.NotAfter); d < LocalRootValidity-time.Hour {
		t.Fatalf("root valid for %v only", d)
	}

	for _, name := range []string{"localhost", "127.0.0.1", "::1", "app.test"} {
		cert := certFor(t, c, name)
		chain := parseChain(t, cert)
		if len(chain) != 2 {
			t.Fatalf("%s: chain of %d certificates, want leaf and intermediate", name, len(chain))
		}
		leaf, interm := chain[0], chain[1]
		if err := verifyChain(chain, roots, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if interm.Equal(root) || !interm.IsCA || !interm.MaxPathLenZero {
			t.Fatalf("%s: intermediate %v is not a path-length-0 CA below the root", name, interm.Subject)
		}
		if leaf.IsCA {
			t.Fatalf("%s: leaf is a CA", name)
		}
		if life := leaf.NotAfter.Sub(leaf.NotBefore); life > LocalLeafValidity+localBackdate || life < LocalLeafValidity {
			t.Fatalf("%s: leaf lifetime %v", name, life)
		}
		if err := leaf.VerifyHostname("other.test"); err == nil {
			t.Fatalf("%s: leaf also valid for other.test", name)
		}
	}
	// Unknown names have no certificate.
	if _, err := c.TLSConfig().GetCertificate(hello(t, "unknown.test")); err == nil {
		t.Fatal("a certificate for a name never added")
	}
}

func TestManagerInternalFast(t *testing.T) {
	// The dev proxy issues at startup, which must stay well under a
	// second; -race slows crypto down, hence the margin.
	c := newTestManager(t, Config{})
	start := time.Now()
	if err := c.AddInternal("localhost", "127.0.0.1", "::1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RootFile(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("first start took %v", d)
	}
	c.Close()
	c2 := newTestManager(t, Config{StorageDir: c.StorageDir()})
	start = time.Now()
	if err := c2.AddInternal("localhost", "127.0.0.1", "::1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("start from storage took %v", d)
	}
}

func TestManagerSharedStorage(t *testing.T) {
	dir := t.TempDir()
	// Two instances racing to create the CA end up with one.
	var a, b *Manager
	var roots [2][]byte
	var errs [2]error
	var wg sync.WaitGroup
	for i, cp := range []**Manager{&a, &b} {
		*cp = newTestManager(t, Config{StorageDir: dir})
		wg.Add(1)
		go func() {
			defer wg.Done()
			roots[i], errs[i] = (*cp).RootPEM()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(roots[0], roots[1]) {
		t.Fatal("two instances over one storage have different roots")
	}

	if err := a.AddInternal("shared.test"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddInternal("shared.test"); err != nil {
		t.Fatal(err)
	}
	ca, cb := certFor(t, a, "shared.test"), certFor(t, b, "shared.test")
	if !bytes.Equal(ca.Certificate[0], cb.Certificate[0]) {
		t.Fatal("second instance issued its own leaf instead of loading the stored one")
	}
	pool, _ := rootPool(t, b)
	if err := verifyChain(parseChain(t, ca), pool, "shared.test"); err != nil {
		t.Fatal(err)
	}

	// A third instance, started later, sees the same root, stored in the
	// file RootFile names.
	c := newTestManager(t, Config{StorageDir: dir})
	f, err := c.RootFile()
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(dir, f); err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("root file %s outside storage %s", f, dir)
	}
	third, _ := c.RootPEM()
	if !bytes.Equal(third, roots[0]) {
		t.Fatal("third instance has another root")
	}
}

func TestLocalCAIntermediateReplaced(t *testing.T) {
	storage := &certmagic.FileStorage{Path: t.TempDir()}
	now := time.Now()
	ca := &localCA{storage: storage, now: func() time.Time { return now }}
	ctx := context.Background()
	first, err := ca.load(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ca.load(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if !again.interm.Equal(first.interm) {
		t.Fatal("a usable intermediate was replaced")
	}

	// Close to its end the intermediate is replaced, under the same root,
	// and leaves are signed by the new one.
	now = now.Add(LocalIntermediateValidity - LocalLeafValidity)
	later, err := ca.load(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if later.interm.Equal(first.interm) || !later.root.Equal(first.root) {
		t.Fatal("expiring intermediate kept, or root changed")
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{"later.test"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, _ := x509.ParseCertificateRequest(csrDER)
	issued, err := ca.Issue(ctx, csr)
	if err != nil {
		t.Fatal(err)
	}
	var chain []*x509.Certificate
	for rest := issued.Certificate; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		x, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, x)
	}
	if len(chain) != 2 || !chain[1].Equal(later.interm) {
		t.Fatal("leaf not chained to the new intermediate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(first.root)
	inter := x509.NewCertPool()
	inter.AddCert(chain[1])
	if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: "later.test", Roots: roots, Intermediates: inter, CurrentTime: now}); err != nil {
		t.Fatal(err)
	}

	// A CSR whose signature does not hold, or without names, is refused.
	bad := *csr
	bad.Signature = append([]byte(nil), csr.Signature...)
	bad.Signature[len(bad.Signature)-1] ^= 1
	if _, err := ca.Issue(ctx, &bad); err == nil {
		t.Fatal("CSR with a broken signature signed")
	}
	noNames, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	csr, _ = x509.ParseCertificateRequest(noNames)
	if _, err := ca.Issue(ctx, csr); err == nil {
		t.Fatal("CSR without names signed")
	}
}

func TestLocalCAKeepsDamagedRoot(t *testing.T) {
	storage := &certmagic.FileStorage{Path: t.TempDir()}
	ca := &localCA{storage: storage, now: time.Now}
	ctx := context.Background()
	root, err := ca.rootPEM(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Delete(ctx, keysFor(DefaultCA).rootKey); err != nil {
		t.Fatal(err)
	}
	if err := storage.Delete(ctx, keysFor(DefaultCA).intermKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.load(ctx, true); err == nil {
		t.Fatal("issuing without the root key")
	}
	after, _ := storage.Load(ctx, localRootCertKey)
	if !bytes.Equal(after, root) {
		t.Fatal("a root that clients may trust was replaced")
	}
}

// serveTLS accepts TLS connections with cfg on a loopback listener, each
// handshaken and then closed.
func serveTLS(t *testing.T, cfg *stdtls.Config) string {
	t.Helper()
	ln, err := stdtls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if conn.(*stdtls.Conn).Handshake() == nil {
					io.Copy(io.Discard, conn)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func dialTLS(addr string, cfg *stdtls.Config) (stdtls.ConnectionState, error) {
	conn, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return stdtls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

func TestManagerHandshake(t *testing.T) {
	c := newTestManager(t, Config{})
	if err := c.AddInternal("localhost", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	// A certificate file pair, for a name of its own.
	dir := t.TempDir()
	self, err := pptls.SelfSigned([]string{"files.test"})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := pptls.WritePEM(self, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if err := c.AddFilePair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if err := c.AddFilePair(certFile, filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("missing key file: %v", err)
	}

	addr := serveTLS(t, c.TLSConfig())
	roots, _ := rootPool(t, c)
	selfPool := x509.NewCertPool()
	selfPool.AddCert(self.Leaf)

	for _, tc := range []struct {
		name, serverName string
		roots            *x509.CertPool
		version          uint16
	}{
		{"internal name, TLS 1.3", "localhost", roots, stdtls.VersionTLS13},
		{"internal name, TLS 1.2", "localhost", roots, stdtls.VersionTLS12},
		// Clients send no SNI for an IP address: the listener's address
		// picks the certificate.
		{"internal IP, no SNI", "127.0.0.1", roots, stdtls.VersionTLS13},
		{"file pair", "files.test", selfPool, stdtls.VersionTLS13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := dialTLS(addr, &stdtls.Config{
				ServerName: tc.serverName,
				RootCAs:    tc.roots,
				NextProtos: []string{"h2", "http/1.1"},
				MinVersion: tc.version,
				MaxVersion: tc.version,
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.NegotiatedProtocol != "h2" || st.Version != tc.version {
				t.Fatalf("ALPN %q version %x", st.NegotiatedProtocol, st.Version)
			}
			if len(st.VerifiedChains) == 0 {
				t.Fatal("no verified chain")
			}
		})
	}

	// The local root does not vouch for the file pair's name, nor the file
	// pair's certificate for an internal name; unknown names fail.
	if _, err := dialTLS(addr, &stdtls.Config{ServerName: "files.test", RootCAs: roots}); err == nil {
		t.Fatal("file pair verified against the local root")
	}
	if _, err := dialTLS(addr, &stdtls.Config{ServerName: "unknown.test", RootCAs: roots}); err == nil {
		t.Fatal("handshake for an unknown name")
	}
}

func TestManagerTLSConfig(t *testing.T) {
	c := newTestManager(t, Config{})
	cfg := c.TLSConfig()
	if !slices.Equal(cfg.NextProtos, []string{"h2", "http/1.1", ACMETLSALPNProtocol}) {
		t.Fatalf("NextProtos %q", cfg.NextProtos)
	}
	if cfg.MinVersion != stdtls.VersionTLS12 || !slices.Equal(cfg.CipherSuites, pptls.ServerConfig(nil).CipherSuites) {
		t.Fatalf("MinVersion %x suites %v", cfg.MinVersion, cfg.CipherSuites)
	}
	if cfg.GetCertificate == nil || len(cfg.Certificates) != 0 {
		t.Fatal("certificates not chosen by GetCertificate")
	}
	cfg.NextProtos[0] = "changed"
	if c.TLSConfig().NextProtos[0] != "h2" {
		t.Fatal("TLSConfig results share NextProtos")
	}
}

func TestManagerNames(t *testing.T) {
	c := newTestManager(t, Config{})
	if err := c.AddInternal(); err == nil {
		t.Fatal("AddInternal without names")
	}
	if err := c.AddInternal("ok.test", " "); err == nil {
		t.Fatal("empty name accepted")
	}
	if err := c.AddInternal("dev.test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.AddACME(ctx, "DEV.test")
	if err == nil || !strings.Contains(err.Error(), "local CA") {
		t.Fatalf("a local CA name given to ACME too: %v", err)
	}
	// The failed claim changed nothing: the name is still served.
	certFor(t, c, "dev.test")

	for name, want := range map[string]bool{
		"localhost": true, "app.localhost": true, "printer.local": true, "db.internal": true,
		"127.0.0.1": true, "::1": true, "[::1]": true, "10.0.0.1": true, "203.0.113.7": true,
		"intranet": true, "example.com": false, "www.example.org": false, "*.example.com": false,
	} {
		if got := UsesInternalByDefault(name); got != want {
			t.Errorf("UsesInternalByDefault(%q) = %v", name, got)
		}
	}
	if err := c.Add(context.Background(), "auto.localhost", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	certFor(t, c, "auto.localhost")
	certFor(t, c, "192.0.2.1")
}

func TestManagerHTTPChallengeHandlerPassesThrough(t *testing.T) {
	c := newTestManager(t, Config{})
	h := c.HTTPChallengeHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app")
	}))
	// Not a challenge, or a token this account never asked for: the
	// application answers.
	for _, path := range []string{"/", "/.well-known/acme-challenge/unknown-token"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://example.test"+path, nil))
		if rec.Body.String() != "app" {
			t.Fatalf("%s: %d %q", path, rec.Code, rec.Body.String())
		}
	}
}

func TestManagerStorageDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	t.Setenv(StorageEnv, dir)
	if d, err := DefaultStorageDir(); err != nil || d != dir {
		t.Fatalf("DefaultStorageDir = %q, %v", d, err)
	}
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.StorageDir() != dir {
		t.Fatalf("storage %q", c.StorageDir())
	}
	if _, err := New(Config{StorageDir: dir, HTTPPort: 70000}); err == nil {
		t.Fatal("port out of range accepted")
	}
}

func TestManagerLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	z := newZapLogger(l, slog.LevelDebug).Named("cm").With(zap.String("k", "v"))
	z.Debug("hidden")
	z.Info("shown", zap.String("name", "a.test"))
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, "msg=shown") ||
		!strings.Contains(out, "name=a.test") || !strings.Contains(out, "k=v") || !strings.Contains(out, "logger=cm") {
		t.Fatalf("log output %q", out)
	}
	buf.Reset()
	w := newZapLogger(l, slog.LevelWarn)
	w.Info("quiet")
	w.Error("loud", zap.Error(errors.New("boom")))
	if out := buf.String(); strings.Contains(out, "quiet") || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "boom") {
		t.Fatalf("log output %q", out)
	}
}

func TestManagerInternalRenewal(t *testing.T) {
	c := newTestManager(t, Config{})
	if err := c.AddInternal("renew.test"); err != nil {
		t.Fatal(err)
	}
	// The cache's maintenance renews a local-CA certificate with the
	// local CA, other certificates with ACME.
	if cfg, _ := c.configFor(certmagic.Certificate{Names: []string{"renew.test"}}); cfg != c.internal.cfg {
		t.Fatal("local-CA certificate maintained by the ACME config")
	}
	if cfg, _ := c.configFor(certmagic.Certificate{Names: []string{"files.test"}}); cfg != c.acme.cfg {
		t.Fatal("other certificate not maintained by the ACME config")
	}
	before := certFor(t, c, "renew.test")
	if err := c.internal.cfg.RenewCertSync(context.Background(), "renew.test", true); err != nil {
		t.Fatal(err)
	}
	// Renewal writes storage (the maintenance pass then reloads the
	// cache); an instance starting now serves the renewed leaf.
	c2 := newTestManager(t, Config{StorageDir: c.StorageDir()})
	if err := c2.AddInternal("renew.test"); err != nil {
		t.Fatal(err)
	}
	after := certFor(t, c2, "renew.test")
	if bytes.Equal(before.Certificate[0], after.Certificate[0]) {
		t.Fatal("renewal stored no new leaf")
	}
	roots, _ := rootPool(t, c)
	if err := verifyChain(parseChain(t, after), roots, "renew.test"); err != nil {
		t.Fatal(err)
	}
}
