package route

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestClientCertPlaceholders: the client certificate's placeholders, from
// a real certificate, from none over TLS (Caddy's empty certificate) and
// over cleartext.
func TestClientCertPlaceholders(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(4242), Subject: pkix.Name{CommonName: "alice"},
		Issuer: pkix.Name{CommonName: "alice"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"a.test", "b.test"}, IPAddresses: []net.IP{net.ParseIP("192.0.2.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	fp := sha256.Sum256(der)
	ecdh, _ := key.PublicKey.ECDH()
	r := &stream.Request{Method: "GET", Path: "/", TLS: &stream.TLSState{PeerCertificate: cert}}
	for tmpl, want := range map[string]string{
		"{tls_client_fingerprint}":                                                   hex.EncodeToString(fp[:]),
		"{tls_client_subject} {tls_client_issuer}":                                   "CN=alice CN=alice",
		"{tls_client_serial}":                                                        "4242",
		"{tls_client_certificate_der_base64}":                                        base64.StdEncoding.EncodeToString(der),
		"{http.request.tls.client.san.dns_names}":                                    "[a.test b.test]",
		"{http.request.tls.client.san.dns_names.1}":                                  "b.test",
		"{http.request.tls.client.san.ips.0}|{http.request.tls.client.san.emails.3}": "192.0.2.1|",
		"{http.request.tls.client.public_key}":                                       hex.EncodeToString(ecdh.Bytes()),
	} {
		tp, err := ParseTemplate(tmpl, TemplateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		if got := tp.Expand(r); got != want {
			t.Errorf("%s = %q, want %q", tmpl, got, want)
		}
	}
	empty := sha256.Sum256(nil)
	noCert := &stream.Request{Method: "GET", Path: "/", TLS: &stream.TLSState{}}
	cleartext := &stream.Request{Method: "GET", Path: "/"}
	tp, _ := ParseTemplate("{tls_client_fingerprint}|{tls_client_serial}|{http.request.tls.client.san.uris}", TemplateOptions{})
	if got, want := tp.Expand(noCert), hex.EncodeToString(empty[:])+"|<nil>|[]"; got != want {
		t.Errorf("without a client certificate: %q, want %q", got, want)
	}
	if got := tp.Expand(cleartext); got != "||" {
		t.Errorf("over cleartext: %q, want nothing", got)
	}
}
