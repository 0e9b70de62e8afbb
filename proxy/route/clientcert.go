package route

// The client certificate's placeholders ({http.request.tls.client.*}),
// filled as Caddy's replacer fills them: over TLS without a client
// certificate Caddy reads an empty one, so each is what an empty
// certificate gives (the fingerprint of nothing, "<nil>" for the
// serial), and over cleartext they are empty.

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// clientField reports whether f (after "http.request.tls.") is one of
// the client certificate's fields.
func clientField(f string) bool {
	switch f {
	case "client.fingerprint", "client.public_key", "client.public_key_sha256", "client.issuer",
		"client.serial", "client.subject", "client.certificate_pem", "client.certificate_der_base64":
		return true
	}
	san, ok := strings.CutPrefix(f, "client.san.")
	if !ok {
		return false
	}
	for _, list := range [...]string{"dns_names", "emails", "ips", "uris"} {
		if rest, ok := strings.CutPrefix(san, list); ok {
			if rest == "" {
				return true
			}
			n, err := strconv.Atoi(strings.TrimPrefix(rest, "."))
			return strings.HasPrefix(rest, ".") && err == nil && n >= 0
		}
	}
	return false
}

// appendClientCert writes the client certificate's field f.
func appendClientCert(dst []byte, st *stream.TLSState, f string) []byte {
	if st == nil {
		return dst
	}
	cert := st.PeerCertificate
	if cert == nil {
		cert = new(x509.Certificate)
	}
	switch f {
	case "client.fingerprint":
		sum := sha256.Sum256(cert.Raw)
		return hex.AppendEncode(dst, sum[:])
	case "client.public_key", "client.public_key_sha256":
		b := publicKeyBytes(cert.PublicKey)
		if b == nil {
			return dst
		}
		if strings.HasSuffix(f, "_sha256") {
			sum := sha256.Sum256(b)
			b = sum[:]
		}
		return hex.AppendEncode(dst, b)
	case "client.issuer":
		return append(dst, cert.Issuer.String()...)
	case "client.serial":
		return append(dst, cert.SerialNumber.String()...)
	case "client.subject":
		return append(dst, cert.Subject.String()...)
	case "client.certificate_pem":
		return append(dst, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	case "client.certificate_der_base64":
		return base64.StdEncoding.AppendEncode(dst, cert.Raw)
	}
	san := strings.TrimPrefix(f, "client.san.")
	var list []string
	switch {
	case strings.HasPrefix(san, "dns_names"):
		list, san = cert.DNSNames, san[len("dns_names"):]
	case strings.HasPrefix(san, "emails"):
		list, san = cert.EmailAddresses, san[len("emails"):]
	case strings.HasPrefix(san, "ips"):
		for _, ip := range cert.IPAddresses {
			list = append(list, ip.String())
		}
		san = san[len("ips"):]
	case strings.HasPrefix(san, "uris"):
		for _, u := range cert.URIs {
			list = append(list, u.String())
		}
		san = san[len("uris"):]
	}
	if san == "" { // the whole list, as Caddy prints one
		return fmt.Appendf(dst, "%+v", list)
	}
	if i, _ := strconv.Atoi(san[1:]); i < len(list) {
		dst = append(dst, list[i]...)
	}
	return dst
}

// publicKeyBytes is a public key as Caddy encodes it for the placeholder:
// RSA in ASN.1, ECDSA as its ECDH point, Ed25519 as it is; nil for any
// other.
func publicKeyBytes(k any) []byte {
	switch k := k.(type) {
	case *rsa.PublicKey:
		b, err := asn1.Marshal(*k)
		if err != nil {
			return nil
		}
		return b
	case *ecdsa.PublicKey:
		e, err := k.ECDH()
		if err != nil {
			return nil
		}
		return e.Bytes()
	case ed25519.PublicKey:
		return []byte(k)
	}
	return nil
}
