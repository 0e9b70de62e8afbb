package config

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UpstreamTLS is TLS to a reverse_proxy's upstreams, with Caddy's
// meanings: an https:// upstream implies it, as does any of transport
// http's tls options.
type UpstreamTLS struct {
	Pos Pos // the line that turned it on
	// ServerName is tls_server_name: the name the certificate is verified
	// for (and the SNI), instead of each upstream's host.
	ServerName string
	// InsecureSkipVerify is tls_insecure_skip_verify.
	InsecureSkipVerify bool
	// TrustPool are the PEM files of tls_trust_pool file (or
	// tls_trusted_ca_certs): the certificate authorities trusted instead
	// of the system's. None: the system's roots.
	TrustPool []string
	// PKI is tls_trust_pool pki_root or pki_intermediate: the roots or
	// intermediates of the local CAs it names, trusted instead of the
	// system's (nil: neither).
	PKI *PKIPool
	// ClientCert and ClientKey are tls_client_auth's files: the
	// certificate presented when the origin asks for one.
	ClientCert, ClientKey string
	// Timeout is tls_timeout: how long a handshake may take (0: the dial
	// timeout, where Caddy has none).
	Timeout time.Duration
	// Curves are tls_curves, in order of preference.
	Curves []stdtls.CurveID

	trustPoolSet, trustedCAs bool // which of the two options set TrustPool
}

// ClientConfig builds the crypto/tls client configuration, reading the
// trust pool and client certificate files; pki are the certificates of
// t.PKI, which only the running instance's local CAs have.
func (t *UpstreamTLS) ClientConfig(pki ...*x509.Certificate) (*stdtls.Config, error) {
	cfg := &stdtls.Config{
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
		CurvePreferences:   t.Curves,
		// HTTP/1.1 is what pollproxy speaks to origins.
		NextProtos: []string{"http/1.1"},
	}
	if len(t.TrustPool) > 0 {
		pool := x509.NewCertPool()
		for _, f := range t.TrustPool {
			if err := addPEMCerts(pool, f); err != nil {
				return nil, err
			}
		}
		cfg.RootCAs = pool
	}
	if t.PKI != nil {
		pool := x509.NewCertPool()
		for _, c := range pki {
			pool.AddCert(c)
		}
		cfg.RootCAs = pool
	}
	if t.ClientCert != "" {
		cert, err := stdtls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("tls_client_auth: %w", err)
		}
		cfg.Certificates = []stdtls.Certificate{cert}
	}
	return cfg, nil
}

// addPEMCerts adds the certificates of a PEM file to pool; a file with
// none is an error, so that a wrong path never means trusting nothing.
func addPEMCerts(pool *x509.CertPool, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("tls_trust_pool: %w", err)
	}
	n := 0
	for len(b) > 0 {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("tls_trust_pool: %s: %w", file, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return fmt.Errorf("tls_trust_pool: %s: %w", file, errNoCertificate)
	}
	return nil
}

var errNoCertificate = errors.New("no PEM certificate in the file")

// curveNames are tls_curves' names, Caddy's.
var curveNames = map[string]stdtls.CurveID{
	"x25519mlkem768": stdtls.X25519MLKEM768,
	"x25519":         stdtls.X25519,
	"secp256r1":      stdtls.CurveP256,
	"secp384r1":      stdtls.CurveP384,
	"secp521r1":      stdtls.CurveP521,
}

// upstreamTLS returns the proxy's TLS, turning it on at d's line.
func upstreamTLS(d *caddyfile.Dispenser, rp *Proxy) *UpstreamTLS {
	if rp.TLS == nil {
		rp.TLS = &UpstreamTLS{Pos: dpos(d)}
	}
	return rp.TLS
}

// transportTLS reads one of transport http's tls options; it reports
// false for an option that is not one.
func (p *parser) transportTLS(d *caddyfile.Dispenser, rp *Proxy, sub string) bool {
	label := "transport http: " + sub
	switch sub {
	case "tls":
		if d.NextArg() {
			p.errf(d, "%s: takes no argument", label)
			d.RemainingArgs()
		}
		upstreamTLS(d, rp)
	case "tls_insecure_skip_verify":
		if d.NextArg() {
			p.errf(d, "%s: takes no argument", label)
			d.RemainingArgs()
		}
		upstreamTLS(d, rp).InsecureSkipVerify = true
	case "tls_server_name":
		if v, ok := p.oneArg(d, label, "a server name"); ok {
			if strings.Contains(v, "{") {
				p.errf(d, "%s: placeholders in tls_server_name are not supported by pollproxy (want a literal name)", label)
			}
			upstreamTLS(d, rp).ServerName = v
		}
	case "tls_timeout":
		upstreamTLS(d, rp).Timeout = p.durationArg(d, label)
	case "tls_client_auth":
		args := d.RemainingArgs()
		switch len(args) {
		case 2:
			t := upstreamTLS(d, rp)
			t.ClientCert, t.ClientKey = args[0], args[1]
		case 1:
			p.errf(d, "%s: an automated client certificate (one name) is not supported by pollproxy (want CERT_FILE KEY_FILE)", label)
		default:
			p.errf(d, "%s: want CERT_FILE KEY_FILE", label)
		}
	case "tls_trust_pool":
		p.trustPool(d, rp, label)
	case "tls_trusted_ca_certs":
		args := d.RemainingArgs()
		if len(args) == 0 {
			p.errf(d, "%s: want one or more PEM files", label)
			break
		}
		t := upstreamTLS(d, rp)
		if t.trustPoolSet {
			p.errf(d, "%s: cannot specify both tls_trust_pool and tls_trusted_ca_certs", label)
		}
		t.TrustPool = append(t.TrustPool, args...)
		t.trustedCAs = true
	case "tls_curves":
		args := d.RemainingArgs()
		if len(args) == 0 {
			p.errf(d, "%s: want one or more curves (%s)", label, "x25519mlkem768, x25519, secp256r1, secp384r1, secp521r1")
		}
		t := upstreamTLS(d, rp)
		for _, a := range args {
			id, ok := curveNames[a]
			if !ok {
				p.errf(d, "%s: unknown curve %q (want x25519mlkem768, x25519, secp256r1, secp384r1 or secp521r1)", label, a)
				continue
			}
			t.Curves = append(t.Curves, id)
		}
	case "tls_renegotiation":
		if v, ok := p.oneArg(d, label, "never, once or freely"); ok {
			switch v {
			case "never": // crypto/tls's default, and Caddy's
				upstreamTLS(d, rp)
			case "once", "freely":
				p.errf(d, "%s: %s is not supported by pollproxy (renegotiation would run a handshake on the event loop)", label, v)
			default:
				p.errf(d, "%s: %q: want never, once or freely", label, v)
			}
		}
	default:
		return false
	}
	return true
}

// trustPool reads tls_trust_pool: its file source (PEM files on the
// line or in pem_file lines), system (the default roots), and pki_root
// and pki_intermediate (the local CAs'); Caddy's other sources are not
// supported.
func (p *parser) trustPool(d *caddyfile.Dispenser, rp *Proxy, label string) {
	if !d.NextArg() {
		p.errf(d, "%s: want a source (file, system, pki_root or pki_intermediate)", label)
		return
	}
	t := upstreamTLS(d, rp)
	if t.trustedCAs {
		p.errf(d, "%s: cannot specify both tls_trust_pool and tls_trusted_ca_certs", label)
	}
	if t.trustPoolSet {
		p.errf(d, "%s: cannot specify tls_trust_pool twice", label)
	}
	t.trustPoolSet = true
	switch src := d.Val(); src {
	case "file":
		files := d.RemainingArgs()
		for n := d.Nesting(); d.NextBlock(n); {
			if d.Val() != "pem_file" {
				p.errf(d, "%s file: unknown option %q (want pem_file)", label, d.Val())
				d.RemainingArgs()
				continue
			}
			files = append(files, d.RemainingArgs()...)
		}
		if len(files) == 0 {
			p.errf(d, "%s file: no certificates specified", label)
		}
		t.TrustPool = append(t.TrustPool, files...)
	case "system":
		if d.NextArg() {
			p.errf(d, "%s system: takes no argument", label)
			d.RemainingArgs()
		}
		skipBlock(d)
	case "pki_root", "pki_intermediate":
		t.PKI = p.pkiPool(d, label+" "+src)
	case "inline", "storage", "http", "lazy", "combined":
		p.errf(d, "%s: source %s is not supported by pollproxy (want file, system, pki_root or pki_intermediate)", label, src)
		d.RemainingArgs()
		skipBlock(d)
	default:
		p.errf(d, "%s: unknown source %q (want file, system, pki_root or pki_intermediate)", label, src)
		d.RemainingArgs()
		skipBlock(d)
	}
}
