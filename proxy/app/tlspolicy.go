package app

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"github.com/pollproxy/pollproxy/proxy/config"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// certsConfig is the certificate manager's configuration from cfg's
// global options (storage is the caller's).
func certsConfig(cfg *config.Config) (tlscerts.Config, error) {
	o := cfg.TLSOptions
	cc := tlscerts.Config{
		StorageDir: cfg.Storage,
		Email:      accountEmail(cfg),
		CA:         cfg.ACMECA,
		HTTPPort:   cfg.HTTPPort,
		// http_port off: no HTTP-01; TLS-ALPN-01 on the HTTPS port remains.
		DisableHTTPChallenge: cfg.HTTPPort == 0,
		LocalCerts:           o.LocalCerts,
		KeyType:              o.KeyType,
		CertLifetime:         o.CertLifetime,
		RenewalWindowRatio:   o.RenewalWindowRatio,
		PreferredChains:      chainPreference(o.PreferredChains),
		DisableOCSPStapling:  o.OCSPStaplingOff,
		OCSPInterval:         o.OCSPInterval,
		RenewInterval:        o.RenewInterval,
		StorageCleanInterval: o.StorageCleanInterval,
		DefaultServerName:    o.DefaultSNI,
		FallbackServerName:   o.FallbackSNI,
	}
	if o.EABKeyID != "" || o.EABMACKey != "" {
		cc.EAB = &acme.EAB{KeyID: o.EABKeyID, MACKey: o.EABMACKey}
	}
	if o.ACMECARoot != "" {
		b, err := os.ReadFile(o.ACMECARoot)
		if err != nil {
			return cc, fmt.Errorf("acme_ca_root: %w", err)
		}
		cc.CARoots = x509.NewCertPool()
		if !cc.CARoots.AppendCertsFromPEM(b) {
			return cc, fmt.Errorf("acme_ca_root: %s holds no PEM certificate", o.ACMECARoot)
		}
	}
	if o.OnDemandAsk != "" {
		cc.OnDemand = &tlscerts.OnDemand{Endpoint: o.OnDemandAsk}
	}
	if len(o.PKI) > 0 {
		cc.CAs = map[string]tlscerts.LocalCA{}
		for id, ca := range o.PKI {
			cc.CAs[id] = tlscerts.LocalCA{
				Name: ca.Name, RootCN: ca.RootCN, IntermediateCN: ca.IntermediateCN,
				IntermediateLifetime: ca.IntermediateLifetime,
				RootCertFile:         ca.RootCert, RootKeyFile: ca.RootKey,
				IntermCertFile: ca.IntermCert, IntermKeyFile: ca.IntermKey,
			}
		}
	}
	return cc, nil
}

func chainPreference(pc *config.PreferredChains) *certmagic.ChainPreference {
	if pc == nil {
		return nil
	}
	out := &certmagic.ChainPreference{RootCommonName: pc.RootCommonName, AnyCommonName: pc.AnyCommonName}
	if pc.Smallest {
		t := true
		out.Smallest = &t
	}
	return out
}

// sitePolicy is the automation policy of a site's tls directive: its
// issuers (or cert_issuer's), key type, on-demand and renewal settings.
func sitePolicy(cfg *config.Config, t *config.TLS) tlscerts.Policy {
	p := tlscerts.Policy{
		KeyType:            t.KeyType,
		RenewalWindowRatio: t.RenewalWindowRatio,
		ReusePrivateKeys:   t.ReusePrivateKeys,
		OnDemand:           t.OnDemand,
		CertGetters:        t.CertGetters,
	}
	issuers := t.Issuers
	if len(issuers) == 0 && t.Mode == config.TLSInternal {
		issuers = []config.Issuer{{Kind: "internal"}}
	}
	if len(issuers) == 0 {
		issuers = cfg.TLSOptions.CertIssuers
	}
	for _, is := range issuers {
		p.Issuers = append(p.Issuers, issuer(is))
	}
	return p
}

func issuer(is config.Issuer) tlscerts.Issuer {
	switch is.Kind {
	case "internal":
		return tlscerts.Issuer{Internal: &tlscerts.InternalIssuer{CA: is.CA, Lifetime: is.Lifetime, SignWithRoot: is.SignWithRoot}}
	case "zerossl":
		return tlscerts.Issuer{ZeroSSL: &tlscerts.ZeroSSLIssuer{APIKey: is.APIKey, ValidityDays: is.ValidityDays, AltHTTPPort: is.AltHTTPPort}}
	}
	a := &tlscerts.ACMEIssuer{
		CA: is.Dir, TestCA: is.TestDir, Email: is.Email, Profile: is.Profile,
		TrustedRootFiles:     is.TrustedRoots,
		PreferredChains:      chainPreference(is.PreferredChains),
		DisableHTTPChallenge: is.DisableHTTPChallenge, DisableTLSALPNChallenge: is.DisableTLSALPNChallenge,
		AltHTTPPort: is.AltHTTPPort, AltTLSALPNPort: is.AltTLSALPNPort,
		Lifetime: is.Lifetime, Timeout: is.Timeout,
	}
	if is.EABKeyID != "" {
		a.EAB = &acme.EAB{KeyID: is.EABKeyID, MACKey: is.EABMACKey}
	}
	return tlscerts.Issuer{ACME: a}
}

// siteCerts manages one site's certificates by its tls directive.
func siteCerts(ctx context.Context, certs *tlscerts.Manager, cfg *config.Config, s *config.Site) error {
	t := &s.TLS
	if t.Mode == config.TLSFiles {
		return certs.AddFilePair(t.Cert, t.Key)
	}
	if t.Pos.Line == 0 && cfg.AutoHTTPS.NoCerts {
		// auto_https off or disable_certs: a site without tls gets
		// no certificate of its own, as in Caddy.
		return nil
	}
	if t.GetsOnDemand() {
		// On demand, a site for any host takes any name: certificates
		// come at the first handshake that asks, not for localhost now.
		var names []string
		for _, a := range s.Addrs {
			if !a.Cleartext {
				names = append(names, a.Host)
			}
		}
		if len(names) == 0 {
			return nil
		}
		return certs.Manage(ctx, sitePolicy(cfg, t), names...)
	}
	names := hostNames(s)
	if len(names) == 0 {
		return nil // a plain-HTTP site needs no certificate
	}
	if len(t.Load) > 0 {
		loaded, err := certs.AddFolder(t.Load...)
		if err != nil {
			return err
		}
		if !cfg.AutoHTTPS.IgnoreLoadedCerts && !t.ForceAutomate {
			// As Caddy: names a loaded certificate covers are not
			// automated (ignore_loaded_certs and force_automate do).
			names = uncovered(names, loaded)
			if len(names) == 0 {
				return nil
			}
		}
	}
	switch {
	case t.Automation() || len(cfg.TLSOptions.CertIssuers) > 0 && t.Mode == config.TLSAuto:
		return certs.Manage(ctx, sitePolicy(cfg, t), names...)
	case t.Mode == config.TLSInternal:
		return certs.AddInternal(names...)
	case t.Mode == config.TLSACME:
		return certs.AddACMEAsync(ctx, names...)
	}
	return certs.AddAsync(ctx, names...)
}

// uncovered are the names no certificate name in loaded covers (exactly,
// or as a wildcard over one label).
func uncovered(names, loaded []string) []string {
	var out []string
	for _, n := range names {
		covered := false
		for _, l := range loaded {
			l = strings.ToLower(l)
			if l == n || strings.HasPrefix(l, "*.") && strings.Count(n, ".") > 0 && n[strings.Index(n, "."):] == l[1:] {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, n)
		}
	}
	return out
}

// connPolicies are the sites' connection policies: one per site whose
// tls directive changes how its handshakes are answered, for its names
// (none: any name, for a site without a host) on its ports. A client_auth pki trust
// pool reads the local CAs of certs.
func connPolicies(certs *tlscerts.Manager, cfg *config.Config) ([]tlscerts.ConnPolicy, config.Errors) {
	var out []tlscerts.ConnPolicy
	var errs config.Errors
	for _, s := range cfg.Sites {
		t := &s.TLS
		if !t.ConnSettings() || t.Mode == config.TLSFiles && t.MinVersion == 0 && t.MaxVersion == 0 &&
			t.Ciphers == nil && t.Curves == nil && t.ALPN == nil && t.ClientAuth == nil && t.SecretsLog == "" {
			continue
		}
		cp := tlscerts.ConnPolicy{MinVersion: t.MinVersion, MaxVersion: t.MaxVersion,
			CipherSuites: t.Ciphers, Curves: t.Curves, ALPN: t.ALPN, SecretsLog: t.SecretsLog}
		anyHost := false
		for _, a := range s.Addrs {
			if a.Cleartext {
				continue
			}
			if a.Host == "" {
				anyHost = true
			}
			cp.Names = append(cp.Names, a.Host)
			if !slices.Contains(cp.Ports, a.Port) {
				cp.Ports = append(cp.Ports, a.Port)
			}
		}
		if len(cp.Names) == 0 {
			continue
		}
		if anyHost {
			cp.Names = nil
		}
		if a := t.ClientAuth; a != nil {
			pki, err := pkiCerts(certs, a.PKI)
			if err != nil {
				errs = append(errs, &config.Error{Pos: a.PKI.Pos, Msg: "tls: client_auth: trust_pool " + err.Error()})
				continue
			}
			pool, leaves, err := a.Load(pki...)
			if err != nil {
				errs = append(errs, &config.Error{Pos: a.Pos, Msg: "tls: client_auth: " + err.Error()})
				continue
			}
			cp.ClientAuth = &tlscerts.ClientAuth{Mode: a.AuthType(), CAs: pool, Leaves: leaves}
		}
		out = append(out, cp)
	}
	// Named policies first: a site without a host takes what they leave.
	var named, rest []tlscerts.ConnPolicy
	for _, cp := range out {
		if len(cp.Names) > 0 {
			named = append(named, cp)
		} else {
			rest = append(rest, cp)
		}
	}
	return append(named, rest...), errs
}

// debugHandler lets debug records through to a handler made for a higher
// level: the debug global option, for the instance's and certmagic's logs.
type debugHandler struct{ slog.Handler }

func (debugHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h debugHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return debugHandler{h.Handler.WithAttrs(a)}
}

func (h debugHandler) WithGroup(n string) slog.Handler { return debugHandler{h.Handler.WithGroup(n)} }
