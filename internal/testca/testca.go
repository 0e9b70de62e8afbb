package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"testing"
	"time"
)

// CA is a certificate authority with an ECDSA P-256 key, valid from an
// hour before it was made to an hour after.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// New makes a CA whose certificate has name as its common name.
func New(t testing.TB, name string) *CA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert, key}
}

// Client issues a client certificate (extended key usage client auth)
// for the common name cn, with a random serial number, valid as long as
// the CA.
func (ca *CA) Client(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	return ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// Server issues a server certificate for host, a DNS name or an IP
// address, as Client does a client's.
func (ca *CA) Server(t testing.TB, host string) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: host},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	return ca.issue(t, tmpl)
}

// issue signs tmpl, given its names and use, for a new P-256 key.
func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl.SerialNumber, _ = rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// Load reads a CA from base.crt and base.key, in PEM, the key an ECDSA
// one in SEC 1 or PKCS #8: a server's own CA, from its storage, to issue
// certificates it trusts.
func Load(t testing.TB, base string) *CA {
	t.Helper()
	certPEM, err := os.ReadFile(base + ".crt")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(base + ".key")
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		t.Fatalf("%s: no PEM", base)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := x509.ParseECPrivateKey(kb.Bytes); err == nil {
		return &CA{cert, key}
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatalf("%s.key: %v", base, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("%s.key: %T, want an ECDSA key", base, key)
	}
	return &CA{cert, ec}
}
