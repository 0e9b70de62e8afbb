package config

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// PKIPool is a trust pool of pollproxy's local CAs (Caddy's pki_root and
// pki_intermediate sources): the root certificates, or the intermediate
// ones, of the CAs it names, as the running instance's CAs have them.
type PKIPool struct {
	Pos Pos
	// Intermediate trusts the CAs' intermediates (pki_intermediate)
	// rather than their roots (pki_root).
	Intermediate bool
	// Authorities are the CA ids, in order ("local" is the default CA).
	Authorities []string
}

// Source is the source's name, pki_root or pki_intermediate.
func (p *PKIPool) Source() string {
	if p.Intermediate {
		return "pki_intermediate"
	}
	return "pki_root"
}

// pkiPool reads pki_root|pki_intermediate [<ca_name>...] { authority
// <ca_name>... }, the source's name being d's token.
func (p *parser) pkiPool(d *caddyfile.Dispenser, label string) *PKIPool {
	pool := &PKIPool{Pos: dpos(d), Intermediate: d.Val() == "pki_intermediate"}
	pool.Authorities = append(pool.Authorities, d.RemainingArgs()...)
	for n := d.Nesting(); d.NextBlock(n); {
		if d.Val() != "authority" {
			p.errf(d, "%s: unrecognized directive: %s", label, d.Val())
			d.RemainingArgs()
			skipBlock(d)
			continue
		}
		pool.Authorities = append(pool.Authorities, d.RemainingArgs()...)
	}
	if len(pool.Authorities) == 0 {
		p.errf(d, "%s: no authorities specified", label)
	}
	return pool
}

// checkPKIPools refuses the pki trust pools Caddy refuses when it starts:
// any, when the configuration has no pki app, and one naming a CA that
// pki does not configure (but "local", which is always there).
func (p *parser) checkPKIPools() {
	app := p.hasPKIApp()
	check := func(pool *PKIPool, label string) {
		if pool == nil {
			return
		}
		if !app {
			p.errAt(pool.Pos, "%s %s: %s CA pool requires that a PKI app is configured: the pki global option, or a site whose certificate comes from the local CA", label, pool.Source(), pool.Source())
			return
		}
		for _, id := range pool.Authorities {
			if _, ok := p.cfg.TLSOptions.PKI[id]; !ok && id != tlscerts.DefaultCA {
				p.errAt(pool.Pos, "%s %s: getting CA %s: no certificate authority configured with id: %s", label, pool.Source(), id, id)
			}
		}
	}
	for _, s := range p.cfg.Sites {
		if a := s.TLS.ClientAuth; a != nil {
			check(a.PKI, "tls: client_auth: trust_pool")
		}
		for _, rp := range s.AllProxies() {
			if rp.TLS != nil {
				check(rp.TLS.PKI, "transport http: tls_trust_pool")
			}
		}
	}
}

// hasPKIApp reports whether Caddy would run its pki app for this
// configuration: a pki global option that configures a CA,
// skip_install_trust (unless auto_https is off), or a site whose
// certificate the local CA issues (tls internal, an internal issuer, or
// a name no public CA issues for), whose issuer loads the app.
func (p *parser) hasPKIApp() bool {
	o := &p.cfg.TLSOptions
	if len(o.PKI) > 0 || o.SkipInstallTrust && !(p.cfg.AutoHTTPS.NoCerts && p.cfg.AutoHTTPS.NoRedirects) {
		return true
	}
	internal := func(is []Issuer) bool {
		for _, i := range is {
			if i.Kind == "internal" {
				return true
			}
		}
		return false
	}
	for _, s := range p.cfg.Sites {
		t := &s.TLS
		if s.Cleartext() || t.Mode == TLSFiles && len(t.Issuers) == 0 {
			continue
		}
		if t.Mode == TLSInternal || internal(t.Issuers) {
			return true
		}
		if len(t.Issuers) > 0 || p.cfg.AutoHTTPS.NoCerts {
			continue
		}
		if o.LocalCerts || internal(o.CertIssuers) {
			return true
		}
		for _, a := range s.Addrs {
			if a.Host != "" && !a.Cleartext && tlscerts.UsesInternalByDefault(a.Host) {
				return true
			}
		}
	}
	return false
}
