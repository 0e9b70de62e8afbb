package servertest

import (
	"crypto/x509"
	"path/filepath"
	"testing"

	pptls "github.com/pollproxy/pollproxy/tls"
)

// CertFiles writes a self-signed certificate for names (default
// localhost) and its key into the test's temporary directory, for a
// Caddyfile's "tls CERT KEY", and returns the files and a pool that trusts
// the certificate.
func CertFiles(t testing.TB, names ...string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	if len(names) == 0 {
		names = []string{"localhost"}
	}
	cert, err := pptls.SelfSigned(names)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := pptls.WritePEM(cert, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	return certFile, keyFile, roots
}
