package testca

import (
	"crypto/x509"
	"testing"
)

// TestClientVerifies: a client certificate verifies against its CA for
// client auth, and not against another CA.
func TestClientVerifies(t *testing.T) {
	ca, other := New(t, "ca"), New(t, "other")
	c := ca.Client(t, "alice")
	if c.Leaf.Subject.CommonName != "alice" {
		t.Fatalf("common name %q", c.Leaf.Subject.CommonName)
	}
	pool := func(ca *CA) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(ca.Cert)
		return p
	}
	opts := x509.VerifyOptions{Roots: pool(ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := c.Leaf.Verify(opts); err != nil {
		t.Fatalf("against its CA: %v", err)
	}
	opts.Roots = pool(other)
	if _, err := c.Leaf.Verify(opts); err == nil {
		t.Fatal("verified against another CA")
	}
}
