package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestClientCertPlaceholders: over a real TLS handshake with client_auth,
// the client certificate's placeholders read the certificate the client
// sent, and without one what Caddy's empty certificate gives; on every
// backend.
func TestClientCertPlaceholders(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(77), Subject: pkix.Name{CommonName: "client-one"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	clientCert := stdtls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\n\nlocalhost:%d {\n\ttls %s %s {\n\t\tclient_auth {\n\t\t\tmode request\n\t\t}\n\t}\n\trespond \"{tls_client_subject}|{tls_client_serial}|{http.request.tls.client.san.dns_names}\"\n}\n",
			backend, filepath.Join(dir, "storage"), port, certFile, keyFile)), 0o644)
		start(t, file, Options{})
		for name, certs := range map[string][]stdtls.Certificate{"with": {clientCert}, "without": nil} {
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &stdtls.Config{RootCAs: roots, Certificates: certs},
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, network, addr)
				}}}
			resp, err := c.Get(fmt.Sprintf("https://localhost:%d/", port))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "CN=client-one|77|[]"
			if name == "without" {
				want = "|<nil>|[]"
			}
			if string(b) != want {
				t.Errorf("%s a client certificate: %q, want %q", name, b, want)
			}
		}
	})
}
