package certs

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
)

// Policy says how the certificates of some names are obtained, kept and
// renewed: Caddy's automation policy, as a site's tls options write it.
// Two sites with equal policies share one certmagic configuration.
type Policy struct {
	// Issuers are tried in order for each certificate. Nil: the default
	// for the name (the local CA for names no public CA issues for, ACME
	// with the Manager's account otherwise).
	Issuers []Issuer

	// KeyType is the certificate keys' type: ed25519, p256, p384, rsa2048
	// or rsa4096 ("": Config.KeyType, else certmagic's default, p256).
	KeyType string

	// RenewalWindowRatio is the part of a certificate's lifetime left when
	// it is renewed (0: Config.RenewalWindowRatio, else certmagic's 1/3).
	RenewalWindowRatio float64

	// ReusePrivateKeys keeps a certificate's key across renewals.
	ReusePrivateKeys bool

	// CertGetters are HTTP endpoints asked for a handshake's certificate
	// before anything is obtained (Caddy's get_certificate http), which
	// makes the policy on-demand.
	CertGetters []string

	// OnDemand obtains a certificate at the first handshake that names
	// a host of the policy (a name, a wildcard, or any name for a site
	// without a host), once Config.OnDemand allows it, rather than at
	// start. The handshake waits on its worker, off the loops.
	OnDemand bool
}

// Issuer is one issuer of a Policy: one of its fields is set.
type Issuer struct {
	ACME     *ACMEIssuer
	Internal *InternalIssuer
	ZeroSSL  *ZeroSSLIssuer
}

// ACMEIssuer is an ACME CA and the account used with it (Caddy's issuer
// acme).
type ACMEIssuer struct {
	// CA is the directory URL ("": Config.CA, else Let's Encrypt).
	CA string
	// TestCA is the directory certmagic retries a failed order against
	// (a staging CA, whose limits are looser) before the real one again.
	TestCA string
	// Email is the account's contact ("": Config.Email).
	Email string
	// Profile is the ACME profile asked for ("": the CA's default).
	Profile string
	// EAB binds the account to one at the CA (nil: Config.EAB).
	EAB *acme.EAB
	// TrustedRootFiles are PEM files of roots for the CA's HTTPS (none:
	// Config.CARoots, else the system's).
	TrustedRootFiles []string
	// PreferredChains picks among the chains the CA offers (nil:
	// Config.PreferredChains).
	PreferredChains *certmagic.ChainPreference
	// DisableHTTPChallenge and DisableTLSALPNChallenge turn the
	// challenges off for this issuer (either also when Config's is).
	DisableHTTPChallenge, DisableTLSALPNChallenge bool
	// AltHTTPPort and AltTLSALPNPort are where challenges are answered
	// (0: Config's).
	AltHTTPPort, AltTLSALPNPort int
	// Lifetime is the validity asked of the CA (0: Config.CertLifetime,
	// else the CA's).
	Lifetime time.Duration
	// Timeout bounds obtaining one certificate (0: certmagic's).
	Timeout time.Duration
}

// InternalIssuer issues from one of pollproxy's local CAs (Caddy's issuer
// internal).
type InternalIssuer struct {
	// CA is the local CA's id ("": DefaultCA).
	CA string
	// Lifetime is the leaves' validity (0: Config.CertLifetime, else
	// LocalLeafValidity).
	Lifetime time.Duration
	// SignWithRoot signs leaves with the root rather than the
	// intermediate.
	SignWithRoot bool
}

// ZeroSSLIssuer is ZeroSSL's API (Caddy's issuer zerossl), which issues
// for an API key over HTTP validation.
type ZeroSSLIssuer struct {
	APIKey       string
	ValidityDays int
	AltHTTPPort  int
}

// keyTypes are the key types Caddy's key_type takes.
var keyTypes = map[string]certmagic.KeyType{
	"ed25519": certmagic.ED25519,
	"p256":    certmagic.P256,
	"p384":    certmagic.P384,
	"rsa2048": certmagic.RSA2048,
	"rsa4096": certmagic.RSA4096,
}

// ValidKeyType reports whether k is a key type Policy and Config take.
func ValidKeyType(k string) bool { _, ok := keyTypes[k]; return ok }

// key is the policy's identity: equal policies give equal keys, also
// across reloads, so a name keeps its configuration.
func (p Policy) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kt=%s rwr=%g reuse=%t od=%t get=%q", p.KeyType, p.RenewalWindowRatio, p.ReusePrivateKeys, p.OnDemand, p.CertGetters)
	for _, is := range p.Issuers {
		switch {
		case is.ACME != nil:
			a := *is.ACME
			pc := ""
			if a.PreferredChains != nil {
				pc = fmt.Sprintf("%v/%v/%v", a.PreferredChains.Smallest != nil && *a.PreferredChains.Smallest, a.PreferredChains.RootCommonName, a.PreferredChains.AnyCommonName)
			}
			eab := ""
			if a.EAB != nil {
				eab = a.EAB.KeyID
			}
			fmt.Fprintf(&b, " acme{%s %s %s %s %s %v %s %t %t %d %d %v %v}", a.CA, a.TestCA, a.Email, a.Profile, eab,
				a.TrustedRootFiles, pc, a.DisableHTTPChallenge, a.DisableTLSALPNChallenge, a.AltHTTPPort, a.AltTLSALPNPort, a.Lifetime, a.Timeout)
		case is.Internal != nil:
			fmt.Fprintf(&b, " internal{%+v}", *is.Internal)
		case is.ZeroSSL != nil:
			fmt.Fprintf(&b, " zerossl{%+v}", *is.ZeroSSL)
		}
	}
	return b.String()
}

// describe names the policy's issuers, for errors.
func (p Policy) describe() string {
	if len(p.Issuers) == 0 {
		return "the default issuers"
	}
	var out []string
	for _, is := range p.Issuers {
		switch {
		case is.ACME != nil:
			out = append(out, "ACME")
		case is.Internal != nil:
			out = append(out, "the local CA")
		case is.ZeroSSL != nil:
			out = append(out, "ZeroSSL")
		}
	}
	return strings.Join(out, ", then ")
}

// onDemand reports whether certificates are got at handshakes.
func (p Policy) onDemand() bool { return p.OnDemand || len(p.CertGetters) > 0 }

// onlyInternal reports whether every issuer is a local CA: issuing then
// takes milliseconds and puts no load on a public CA.
func (p Policy) onlyInternal() bool {
	for _, is := range p.Issuers {
		if is.Internal == nil {
			return false
		}
	}
	return len(p.Issuers) > 0
}

// loadRoots reads PEM files of certificates into a pool.
func loadRoots(files []string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("tls: trusted roots: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tls: trusted roots: %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// managed is a Policy made into a certmagic configuration.
type managed struct {
	key  string
	desc string
	cfg  *certmagic.Config
	// acme is its first ACME issuer (HTTP-01 answers), nil without one.
	acme *certmagic.ACMEIssuer
	// sync: issuing takes milliseconds (local CAs only), so adding a
	// name waits for its certificate.
	sync     bool
	onDemand bool
}

// build makes p's certmagic configuration over c's cache and storage.
func (c *Manager) build(p Policy) (*managed, error) {
	m := &managed{key: p.key(), desc: p.describe(), sync: p.onlyInternal(), onDemand: p.onDemand()}
	tmpl := c.base
	kt := p.KeyType
	if kt == "" {
		kt = c.cfg.KeyType
	}
	if kt != "" {
		t, ok := keyTypes[kt]
		if !ok {
			return nil, fmt.Errorf("tls: key type %q: want ed25519, p256, p384, rsa2048 or rsa4096", kt)
		}
		tmpl.KeySource = certmagic.StandardKeyGenerator{KeyType: t}
	}
	if p.RenewalWindowRatio != 0 {
		tmpl.RenewalWindowRatio = p.RenewalWindowRatio
	}
	tmpl.ReusePrivateKeys = p.ReusePrivateKeys
	if p.onDemand() {
		tmpl.OnDemand = &certmagic.OnDemandConfig{DecisionFunc: c.onDemandDecision(p)}
		for _, u := range p.CertGetters {
			tmpl.OnDemand.Managers = append(tmpl.OnDemand.Managers, httpCertGetter{url: u})
		}
	}
	tmpl.Issuers = []certmagic.Issuer{c.defaultCA()} // replaced below
	m.cfg = certmagic.New(c.cache, tmpl)
	var issuers []certmagic.Issuer
	for _, is := range p.Issuers {
		switch {
		case is.Internal != nil:
			ca, err := c.localCA(is.Internal)
			if err != nil {
				return nil, err
			}
			issuers = append(issuers, ca)
		case is.ACME != nil:
			a, err := c.acmeIssuer(m.cfg, *is.ACME)
			if err != nil {
				return nil, err
			}
			if m.acme == nil {
				m.acme = a
			}
			issuers = append(issuers, a)
		case is.ZeroSSL != nil:
			z := is.ZeroSSL
			port := z.AltHTTPPort
			if port == 0 {
				port = c.cfg.HTTPPort
			}
			issuers = append(issuers, &certmagic.ZeroSSLIssuer{
				APIKey: z.APIKey, ValidityDays: z.ValidityDays, AltHTTPPort: port,
				Storage: c.storage, Logger: c.zl,
			})
		}
	}
	if len(issuers) == 0 {
		return nil, fmt.Errorf("tls: a policy with no issuer")
	}
	m.cfg.Issuers = issuers
	return m, nil
}

// acmeIssuer makes a, filled in from the Manager's Config, into
// certmagic's issuer for cfg.
func (c *Manager) acmeIssuer(cfg *certmagic.Config, a ACMEIssuer) (*certmagic.ACMEIssuer, error) {
	g := c.cfg
	out := certmagic.ACMEIssuer{
		CA:                      firstNonEmpty(a.CA, g.CA),
		TestCA:                  a.TestCA,
		Email:                   firstNonEmpty(a.Email, g.Email),
		Profile:                 a.Profile,
		Agreed:                  true,
		ExternalAccount:         a.EAB,
		TrustedRoots:            g.CARoots,
		DisableHTTPChallenge:    a.DisableHTTPChallenge || g.DisableHTTPChallenge,
		DisableTLSALPNChallenge: a.DisableTLSALPNChallenge || g.DisableTLSALPNChallenge,
		AltHTTPPort:             a.AltHTTPPort,
		AltTLSALPNPort:          a.AltTLSALPNPort,
		CertObtainTimeout:       a.Timeout,
		Logger:                  c.zl,
	}
	if out.ExternalAccount == nil {
		out.ExternalAccount = g.EAB
	}
	if out.AltHTTPPort == 0 {
		out.AltHTTPPort = g.HTTPPort
	}
	if out.AltTLSALPNPort == 0 {
		out.AltTLSALPNPort = g.TLSALPNPort
	}
	if len(a.TrustedRootFiles) > 0 {
		pool, err := loadRoots(a.TrustedRootFiles)
		if err != nil {
			return nil, err
		}
		out.TrustedRoots = pool
	}
	switch {
	case a.PreferredChains != nil:
		out.PreferredChains = *a.PreferredChains
	case g.PreferredChains != nil:
		out.PreferredChains = *g.PreferredChains
	}
	if life := orDuration(a.Lifetime, g.CertLifetime); life > 0 {
		out.NotAfter = life
	}
	return certmagic.NewACMEIssuer(cfg, out), nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// orDuration is a when set, else b.
func orDuration(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}
