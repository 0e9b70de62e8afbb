package tls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// cipherSuites12 are the TLS 1.2 suites pollproxy accepts: forward secret
// (ECDHE) and authenticated encryption (AEAD) only, which also keeps HTTP/2
// clear of RFC 9113 §9.2.2's prohibited list. TLS 1.3 suites are not
// configurable in crypto/tls and are all AEAD.
var cipherSuites12 = []uint16{
	stdtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	stdtls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	stdtls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	stdtls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	stdtls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	stdtls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// curves are the key exchanges pollproxy offers, Caddy's defaults: the
// hybrid post-quantum one, X25519, then P-256. A client that offers only
// P-384 or P-521 is refused, as Caddy refuses it.
var curves = []stdtls.CurveID{stdtls.X25519MLKEM768, stdtls.X25519, stdtls.CurveP256}

// ServerConfig returns pollproxy's server TLS configuration serving certs:
// TLS 1.2 at least, ALPN "h2" then "http/1.1", ECDHE+AEAD suites for TLS
// 1.2, Caddy's default curves, session tickets on (crypto/tls rotates
// their keys). Callers may set GetCertificate or other fields before
// first use.
func ServerConfig(certs []stdtls.Certificate) *stdtls.Config {
	return &stdtls.Config{
		Certificates:           certs,
		MinVersion:             stdtls.VersionTLS12,
		NextProtos:             []string{"h2", "http/1.1"},
		CipherSuites:           append([]uint16(nil), cipherSuites12...),
		CurvePreferences:       append([]stdtls.CurveID(nil), curves...),
		SessionTicketsDisabled: false,
	}
}

// LoadKeyPair reads a PEM certificate chain and its PEM private key. Its
// errors name the file at fault.
func LoadKeyPair(certFile, keyFile string) (stdtls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: reading certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: reading private key: %w", err)
	}
	if !hasPEMBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return stdtls.Certificate{}, fmt.Errorf("tls: %s: no PEM CERTIFICATE block", certFile)
	}
	if !hasPEMBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return stdtls.Certificate{}, fmt.Errorf("tls: %s: no PEM PRIVATE KEY block", keyFile)
	}
	cert, err := stdtls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

func hasPEMBlock(data []byte, typeOK func(string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if typeOK(b.Type) {
			return true
		}
	}
}

// selfSignedValidity is how long a SelfSigned certificate is valid.
const selfSignedValidity = 90 * 24 * time.Hour

// SelfSigned returns a fresh self-signed ECDSA P-256 certificate for
// localhost, 127.0.0.1, ::1 and hosts (names or IP addresses; a ":port" is
// ignored). It is for development: clients must trust it explicitly.
func SelfSigned(hosts []string) (stdtls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: generating serial number: %w", err)
	}

	var dnsNames []string
	var ips []net.IP
	seen := map[string]bool{}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hosts...) {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
		if h == "" || seen[strings.ToLower(h)] {
			continue
		}
		seen[strings.ToLower(h)] = true
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dnsNames = append(dnsNames, strings.ToLower(h))
		}
	}

	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"pollproxy development"}, CommonName: dnsNames[0]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: creating certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return stdtls.Certificate{}, fmt.Errorf("tls: parsing certificate: %w", err)
	}
	return stdtls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// EncodePEM returns cert's chain and private key in PEM (the key as PKCS #8).
func EncodePEM(cert stdtls.Certificate) (certPEM, keyPEM []byte, err error) {
	if len(cert.Certificate) == 0 {
		return nil, nil, errors.New("tls: certificate has no chain")
	}
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: encoding private key: %w", err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// WritePEM writes cert to certFile and its private key to keyFile (mode
// 0600), in the format LoadKeyPair reads. Its errors name the file.
func WritePEM(cert stdtls.Certificate, certFile, keyFile string) error {
	certPEM, keyPEM, err := EncodePEM(cert)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return fmt.Errorf("tls: writing certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("tls: writing private key: %w", err)
	}
	return nil
}
