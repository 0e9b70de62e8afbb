package certs

import (
	"crypto/x509"
	"testing"
)

// TestCACertificates: a CA's root and intermediate, as trust pools take
// them, are those storage holds: made on first use (a named CA with its
// pki parameters), the same again afterwards and for another Manager on
// the same storage, and the intermediate is the root's.
func TestCACertificates(t *testing.T) {
	c := newTestManager(t, Config{CAs: map[string]LocalCA{"corp": {Name: "Corp CA"}}})
	root, err := c.CACertificates("corp", false)
	if err != nil {
		t.Fatal(err)
	}
	interm, err := c.CACertificates("corp", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(root) != 1 || len(interm) != 1 {
		t.Fatalf("%d roots, %d intermediates; want one of each", len(root), len(interm))
	}
	if !root[0].IsCA || root[0].Subject.Organization[0] != "Corp CA" {
		t.Fatalf("root %v (CA %v)", root[0].Subject, root[0].IsCA)
	}
	if err := interm[0].CheckSignatureFrom(root[0]); err != nil || interm[0].Equal(root[0]) {
		t.Fatalf("intermediate not signed by the root: %v", err)
	}
	local, err := c.CACertificates(DefaultCA, false)
	if err != nil {
		t.Fatal(err)
	}
	if local[0].Equal(root[0]) {
		t.Fatal("the local CA's root is corp's")
	}

	c2 := newTestManager(t, Config{StorageDir: c.StorageDir(), CAs: map[string]LocalCA{"corp": {Name: "Corp CA"}}})
	for _, want := range []struct {
		inter bool
		cert  *x509.Certificate
	}{{false, root[0]}, {true, interm[0]}} {
		got, err := c2.CACertificates("corp", want.inter)
		if err != nil {
			t.Fatal(err)
		}
		if !got[0].Equal(want.cert) {
			t.Fatalf("intermediate %v: another Manager on the storage has %v, want %v", want.inter, got[0].Subject, want.cert.Subject)
		}
	}
}
