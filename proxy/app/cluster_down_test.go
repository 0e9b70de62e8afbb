package app

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	pptls "github.com/pollproxy/pollproxy/tls"
	"github.com/pollproxy/pollproxy/tls/acmetest"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
	"github.com/pollproxy/pollproxy/tls/redisstore"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

// downFile is clusterFile's configuration plus a site whose certificate
// comes from files, which needs no storage.
func downFile(t *testing.T, poller, redisAddr, acmeDir string, port, admin int, origin, cert, key string) string {
	t.Helper()
	file := clusterFile(t, poller, redisAddr, acmeDir, port, admin, origin)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, fmt.Sprintf(`
files.localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, port, origin, cert, key)...)
	file = filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// onlyNameCert writes a self-signed certificate for name alone (not
// localhost, as pptls.SelfSigned's would: it would answer for the ACME
// site) and returns its files and a pool trusting it.
func onlyNameCert(t *testing.T, name string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour * 30),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{name},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	cert := stdtls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := pptls.WritePEM(cert, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(leaf)
	return certFile, keyFile, roots
}

// TestClusterStartsWithoutRedis starts an instance while its Redis is
// down. It starts, reports the outage (log line, pollproxy_storage_up 0)
// and serves what needs no storage: the site whose certificate comes from
// files. Handshakes for the ACME site and the tls internal site fail (no
// local CA is made up, so the cluster's root stays the one in Redis).
// Once Redis is started, both are served within seconds, without waiting
// for certmagic's retry backoff (a minute): the local CA site under the
// root now in Redis, the ACME site under Pebble's root after one order.
// A second instance started afterwards serves the same ACME certificate
// without a second order, and a local CA certificate under the same root.
func TestClusterStartsWithoutRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and an ACME test CA")
	}
	haveBackends(t, "epoll", "poll")
	srv := redistest.Start(t)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	p := acmetest.Start(t, ctx)
	o := startOrigin(t, "O")

	certFile, keyFile, fileRoots := onlyNameCert(t, "files.localhost")

	pa, pb := servertest.FreePort(t), servertest.FreePort(t)
	startBalancer(t, p.TLSPort, fmt.Sprintf("127.0.0.1:%d", pa), fmt.Sprintf("127.0.0.1:%d", pb))
	edit := func(c *tlscerts.Config) {
		c.CARoots = p.TLSRoots
		c.TLSALPNPort = p.TLSPort
	}
	adminA := servertest.FreePort(t)
	a := start(t, downFile(t, "epoll", srv.Addr, p.DirURL, pa, adminA, o.addr, certFile, keyFile), Options{EditCerts: edit})
	addrA := fmt.Sprintf("127.0.0.1:%d", pa)

	// Down: loud, and serving what needs no storage.
	if _, ok := a.log.Await("certificate storage unreachable: certificates cannot be loaded", 10*time.Second, nil); !ok {
		t.Fatalf("no outage log line:\n%s", a.log)
	}
	if _, ok := a.log.Await("these names get their certificates when it answers", 10*time.Second, nil); !ok {
		t.Fatalf("no log line for the names waiting for storage:\n%s", a.log)
	}
	if m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminA)); !strings.Contains(m, "pollproxy_storage_up 0") ||
		!strings.Contains(m, "pollproxy_storage_errors_total") {
		t.Fatalf("metrics with Redis down lack pollproxy_storage_up 0 and errors:\n%s", m)
	}
	awaitLeaf(t, addrA, "files.localhost", fileRoots, 5*time.Second)
	c := servertest.H2Client(addrA, fileRoots)
	if status, body, _ := servertest.GetH2(t, c, fmt.Sprintf("https://files.localhost:%d/", pa)); status != 200 || !strings.HasPrefix(body, "O") {
		t.Fatalf("files.localhost with Redis down: %d %q", status, body)
	}
	c.CloseIdleConnections()
	for _, name := range []string{"localhost", "internal.localhost"} {
		if _, _, err := leafOf(addrA, name, nil); err == nil || !strings.Contains(err.Error(), "remote error") {
			t.Fatalf("%s with Redis down: %v, want the server to fail the handshake", name, err)
		}
	}
	if n := p.Orders(); n != 0 {
		t.Fatalf("pebble received %d orders while Redis was down", n)
	}

	// Redis returns: both waiting sites are served within seconds.
	srv.Restart()
	back := time.Now()
	st, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}, KeyPrefix: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acmeRoots := p.IssuingRoot(t)
	const bound = 20 * time.Second // certmagic's first retry, and the wait list's fallback, come after a minute
	leafA, _ := awaitLeaf(t, addrA, "localhost", acmeRoots, bound)
	var rootPEM []byte
	// Redis, certmagic and the instance retry on their own timers, off
	// the loops. Read the root, never create it: the instance must have.
	if !servertest.Within(bound-time.Since(back), func() bool {
		rootPEM, err = st.Load(ctx, "pollproxy/ca/local/root.crt")
		return rootPEM != nil
	}) {
		t.Fatalf("no local CA root in Redis %v after it returned: %v", bound, err)
	}
	localRoots := x509.NewCertPool()
	if !localRoots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("local CA root in Redis: %q", rootPEM)
	}
	_, rootA := awaitLeaf(t, addrA, "internal.localhost", localRoots, bound-time.Since(back))
	t.Logf("both sites served %v after Redis returned", time.Since(back).Round(100*time.Millisecond))
	if m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminA)); !strings.Contains(m, "pollproxy_storage_up 1") {
		t.Fatalf("metrics after Redis returned lack pollproxy_storage_up 1:\n%s", m)
	}
	if !strings.Contains(a.log.String(), "certificate storage reachable again") {
		t.Fatalf("no recovery log line:\n%s", a.log)
	}

	// A second instance shares what the first stored.
	pbAdmin := servertest.FreePort(t)
	start(t, downFile(t, "poll", srv.Addr, p.DirURL, pb, pbAdmin, o.addr, certFile, keyFile), Options{EditCerts: edit})
	addrB := fmt.Sprintf("127.0.0.1:%d", pb)
	leafB, _ := awaitLeaf(t, addrB, "localhost", acmeRoots, 20*time.Second)
	if !bytes.Equal(leafA.Raw, leafB.Raw) {
		t.Fatalf("the instances serve different certificates for localhost: serials %v and %v", leafA.SerialNumber, leafB.SerialNumber)
	}
	if n := p.Orders(); n != 1 {
		t.Fatalf("pebble received %d orders, want 1\n%s", n, p.Logs)
	}
	_, rootB := awaitLeaf(t, addrB, "internal.localhost", localRoots, 10*time.Second)
	if !bytes.Equal(rootA.Raw, rootB.Raw) {
		t.Fatal("the instances' local CA certificates chain to different roots")
	}
}
