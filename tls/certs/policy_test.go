package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConnPolicySelection: a handshake gets the policy of its exact name,
// else of its wildcard (one label), else the one without names.
func TestConnPolicySelection(t *testing.T) {
	c := newTestManager(t, Config{})
	if err := c.AddInternal("exact.test", "a.wild.test", "a.b.wild.test", "other.test"); err != nil {
		t.Fatal(err)
	}
	err := c.SetConnPolicies([]ConnPolicy{
		{Names: []string{"exact.test"}, MinVersion: stdtls.VersionTLS13},
		{Names: []string{"*.wild.test"}, MaxVersion: stdtls.VersionTLS12},
		{ClientAuth: &ClientAuth{Mode: stdtls.RequireAnyClientCert}},
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, c.TLSConfig())
	for _, tc := range []struct {
		sni   string
		max   uint16
		alpn  []string
		want  uint16 // 0: refused
		cause string
	}{
		{"exact.test", stdtls.VersionTLS12, nil, 0, "exact name: TLS 1.3 only"},
		{"exact.test", 0, nil, stdtls.VersionTLS13, "exact name"},
		{"a.wild.test", 0, nil, stdtls.VersionTLS12, "wildcard: TLS 1.2 at most"},
		{"a.b.wild.test", 0, nil, 0, "two labels under the wildcard: the default policy, which wants a certificate"},
		{"other.test", 0, nil, 0, "the default policy wants a client certificate"},
	} {
		cfg := &stdtls.Config{ServerName: tc.sni, InsecureSkipVerify: true, MaxVersion: tc.max, NextProtos: tc.alpn}
		st, err := dialTLS(addr, cfg)
		if err == nil && tc.want != 0 && st.Version == tc.want {
			continue
		}
		if tc.want == 0 {
			// TLS 1.3: a missing client certificate shows on the first read.
			if err != nil {
				continue
			}
			conn, derr := stdtls.Dial("tcp", addr, cfg)
			if derr != nil {
				continue
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, rerr := conn.Read(make([]byte, 1))
			conn.Close()
			if rerr != nil && !strings.Contains(rerr.Error(), "timeout") {
				continue
			}
		}
		t.Errorf("%s (%s): version %x, err %v", tc.sni, tc.cause, st.Version, err)
	}
}

// TestManagePolicies: a name claimed by one policy is refused by
// another; an on-demand policy for any name needs a permission unless
// its issuers are local CAs or it has certificate getters.
func TestManagePolicies(t *testing.T) {
	c := newTestManager(t, Config{})
	ctx := context.Background()
	rsa := Policy{Issuers: []Issuer{{Internal: &InternalIssuer{}}}, KeyType: "rsa2048"}
	if err := c.Manage(ctx, rsa, "k.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Manage(ctx, rsa, "k.test"); err != nil {
		t.Fatalf("the same policy again (a reload): %v", err)
	}
	if err := c.Manage(ctx, Policy{Issuers: []Issuer{{Internal: &InternalIssuer{}}}, KeyType: "p384"}, "k.test"); err == nil {
		t.Fatal("another policy for a claimed name: no error")
	}
	if err := c.Manage(ctx, Policy{OnDemand: true, Issuers: []Issuer{{ACME: &ACMEIssuer{}}}}, ""); err == nil ||
		!strings.Contains(err.Error(), "permission module") {
		t.Fatalf("ACME on demand for any name without permission: %v", err)
	}
	if err := c.Manage(ctx, Policy{OnDemand: true, Issuers: []Issuer{{Internal: &InternalIssuer{}}}}, ""); err != nil {
		t.Fatalf("local CA on demand for any name: %v", err)
	}
	if err := c.Manage(ctx, Policy{CertGetters: []string{"http://127.0.0.1:1/"}, Issuers: []Issuer{{ACME: &ACMEIssuer{}}}}, "*.w.test"); err != nil {
		t.Fatalf("certificate getter for a wildcard: %v", err)
	}
	if err := c.Manage(ctx, Policy{KeyType: "p521"}, "bad.test"); err == nil {
		t.Fatal("key type p521: no error")
	}
}

// TestLocalCAOperatorRoot: a CA whose root the operator brings (pki {
// ca { root { cert key } } }) signs its intermediate and leaves under
// that root and never makes one of its own.
func TestLocalCAOperatorRoot(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "Operator Root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "root.pem"), filepath.Join(dir, "root.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)

	storage := filepath.Join(dir, "storage")
	c := newTestManager(t, Config{StorageDir: storage, CAs: map[string]LocalCA{"ops": {RootCertFile: certFile, RootKeyFile: keyFile}}})
	if err := c.Manage(context.Background(), Policy{Issuers: []Issuer{{Internal: &InternalIssuer{CA: "ops"}}}}, "ops.test"); err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(root)
	chain := parseChain(t, certFor(t, c, "ops.test"))
	if err := verifyChain(chain, roots, "ops.test"); err != nil {
		t.Fatalf("the leaf does not chain to the operator's root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(storage, "pollproxy", "ca", "ops", "root.crt")); err == nil {
		t.Fatal("a root was made in storage beside the operator's")
	}
}
