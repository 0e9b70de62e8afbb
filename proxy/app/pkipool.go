package app

import (
	"crypto/x509"
	"errors"

	"github.com/pollproxy/pollproxy/proxy/config"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// pkiCerts are the certificates of a pki_root or pki_intermediate trust
// pool (none for nil), read from the instance's local CAs, which are made
// in storage when it holds none yet, as Caddy's pki app does at start. It
// runs at start and reload, never on a loop: it reads storage.
func pkiCerts(certs *tlscerts.Manager, pool *config.PKIPool) ([]*x509.Certificate, error) {
	if pool == nil {
		return nil, nil
	}
	if certs == nil {
		return nil, errors.New(pool.Source() + ": the instance has no local CA")
	}
	var out []*x509.Certificate
	for _, id := range pool.Authorities {
		cs, err := certs.CACertificates(id, pool.Intermediate)
		if err != nil {
			return nil, errors.New(pool.Source() + ": getting " + err.Error())
		}
		out = append(out, cs...)
	}
	return out, nil
}
