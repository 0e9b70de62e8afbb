package config

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TLSMode says where a site's certificate comes from.
type TLSMode int

// TLS modes.
const (
	// TLSAuto is the default: ACME for public names, the local CA for
	// localhost, IP addresses and names that cannot be public.
	TLSAuto TLSMode = iota
	TLSInternal
	TLSFiles
	TLSACME
)

// String is the mode as the Caddyfile spells it.
func (m TLSMode) String() string {
	return [...]string{"auto", "internal", "files", "acme"}[m]
}

// TLS is a site's tls directive: where its certificate comes from (Mode,
// Issuers and the automation options) and how its handshakes are
// answered (the connection policy: protocols, ciphers, curves, alpn,
// client_auth).
type TLS struct {
	Pos       Pos
	Mode      TLSMode
	Cert, Key string // TLSFiles
	Email     string // TLSACME: the account for this site

	// The connection policy.
	MinVersion, MaxVersion uint16           // protocols (0: TLS 1.2 and 1.3)
	Ciphers                []uint16         // ciphers, TLS 1.2 suites
	Curves                 []stdtls.CurveID // curves
	ALPN                   []string         // alpn
	ClientAuth             *ClientAuth      // client_auth
	SecretsLog             string           // insecure_secrets_log

	// The automation policy.
	Issuers            []Issuer // issuer ..., in order; or one made by ca, ca_root, eab, tls EMAIL, tls internal
	KeyType            string   // key_type
	OnDemand           bool     // on_demand
	CertGetters        []string // get_certificate http URL (implies on-demand)
	Load               []string // load DIR...: folders of PEM bundles
	ForceAutomate      bool     // tls force_automate
	ReusePrivateKeys   bool     // reuse_private_keys
	RenewalWindowRatio float64  // renewal_window_ratio
}

// ConnSettings reports whether the directive changes how handshakes are
// answered, which only an HTTPS listener can do: Caddy's non-empty
// connection policy (a certificate file pair is one, as Caddy selects it
// by tag).
func (t *TLS) ConnSettings() bool {
	return t.MinVersion != 0 || t.MaxVersion != 0 || t.Ciphers != nil || t.Curves != nil ||
		t.ALPN != nil || t.ClientAuth != nil || t.SecretsLog != "" || t.Mode == TLSFiles || t.ForceAutomate
}

// Automation reports whether the directive says more about obtaining
// certificates than its mode: issuers, key type, on-demand and the like.
func (t *TLS) Automation() bool {
	return len(t.Issuers) > 0 || t.KeyType != "" || t.OnDemand || t.ReusePrivateKeys || t.RenewalWindowRatio != 0 ||
		len(t.CertGetters) > 0
}

// GetsOnDemand reports whether certificates come at handshakes: on_demand,
// or get_certificate, which implies it as in Caddy.
func (t *TLS) GetsOnDemand() bool { return t.OnDemand || len(t.CertGetters) > 0 }

// ClientAuth is client_auth: Caddy's client certificate authentication.
type ClientAuth struct {
	Pos Pos
	// Mode is request, require, verify_if_given or require_and_verify
	// ("": require_and_verify with trusted certificates, require
	// without, as Caddy's default).
	Mode string
	// CAFiles are PEM files of the roots client certificates are
	// verified against (trust_pool file, trusted_ca_cert_file); CADER
	// are DER roots (trust_pool inline, trusted_ca_cert).
	CAFiles []string
	CADER   [][]byte
	// PKI is trust_pool pki_root or pki_intermediate: the roots or
	// intermediates of the local CAs it names (nil: neither).
	PKI *PKIPool
	// LeafFiles and LeafDER are the only client certificates accepted
	// (trusted_leaf_cert_file, trusted_leaf_cert); VerifierFiles too
	// (verifier leaf file), which, as in Caddy, do not make the default
	// mode require_and_verify.
	LeafFiles     []string
	LeafDER       [][]byte
	VerifierFiles []string
}

// AuthType is the mode as crypto/tls says it.
func (a *ClientAuth) AuthType() stdtls.ClientAuthType {
	switch a.Mode {
	case "request":
		return stdtls.RequestClientCert
	case "require":
		return stdtls.RequireAnyClientCert
	case "verify_if_given":
		return stdtls.VerifyClientCertIfGiven
	case "require_and_verify":
		return stdtls.RequireAndVerifyClientCert
	}
	if len(a.CAFiles)+len(a.CADER)+len(a.LeafFiles)+len(a.LeafDER) > 0 || a.PKI != nil {
		return stdtls.RequireAndVerifyClientCert
	}
	return stdtls.RequireAnyClientCert
}

// Load reads the trusted roots (nil without any) and the accepted
// leaves; pki are the certificates of a.PKI, which only the running
// instance's local CAs have. Its errors name the file at fault.
func (a *ClientAuth) Load(pki ...*x509.Certificate) (*x509.CertPool, []*x509.Certificate, error) {
	var pool *x509.CertPool
	if len(a.CAFiles)+len(a.CADER) > 0 || a.PKI != nil {
		pool = x509.NewCertPool()
	}
	cas, err := readCerts(a.CAFiles, a.CADER)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range append(cas, pki...) {
		pool.AddCert(c)
	}
	leaves, err := readCerts(append(append([]string(nil), a.LeafFiles...), a.VerifierFiles...), a.LeafDER)
	if err != nil {
		return nil, nil, err
	}
	return pool, leaves, nil
}

// readCerts parses the certificates of PEM files and DER blocks.
func readCerts(files []string, ders [][]byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f, err)
			}
			out = append(out, c)
		}
		if len(out) == n {
			return nil, fmt.Errorf("no CERTIFICATE pem block found in %s", f)
		}
	}
	for _, der := range ders {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %v", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Issuer is one issuer of a site's (or the global cert_issuer) policy:
// issuer acme, internal or zerossl.
type Issuer struct {
	Pos  Pos
	Kind string // "acme", "internal" or "zerossl"

	// acme
	Dir, TestDir, Email, Profile string
	EABKeyID, EABMACKey          string
	TrustedRoots                 []string // trusted_roots, ca_root: PEM files
	PreferredChains              *PreferredChains
	DisableHTTPChallenge         bool
	DisableTLSALPNChallenge      bool
	AltHTTPPort, AltTLSALPNPort  int
	Timeout                      time.Duration

	// internal
	CA           string
	SignWithRoot bool

	// acme and internal
	Lifetime time.Duration

	// zerossl
	APIKey       string
	ValidityDays int
}

// PreferredChains is preferred_chains: which of the chains an ACME CA
// offers is used.
type PreferredChains struct {
	Smallest       bool
	RootCommonName []string
	AnyCommonName  []string
}

// tlsProtocols are the versions protocols takes, as Caddy's.
var tlsProtocols = map[string]uint16{"tls1.2": stdtls.VersionTLS12, "tls1.3": stdtls.VersionTLS13}

// tlsCurves are the curves curves takes, as Caddy's.
var tlsCurves = map[string]stdtls.CurveID{
	"x25519mlkem768": stdtls.X25519MLKEM768,
	"x25519":         stdtls.X25519,
	"secp256r1":      stdtls.CurveP256,
	"secp384r1":      stdtls.CurveP384,
	"secp521r1":      stdtls.CurveP521,
}

// keyTypeNames are the key types key_type takes.
var keyTypeNames = set("ed25519", "p256", "p384", "rsa2048", "rsa4096")

func cipherID(name string) uint16 {
	for _, cs := range stdtls.CipherSuites() {
		if cs.Name == name {
			return cs.ID
		}
	}
	return 0
}

// tls reads a site's tls directive as Caddy's parseTLS does:
//
//	tls internal | EMAIL | CERT_FILE KEY_FILE [{
//		protocols MIN [MAX]
//		ciphers NAME...
//		curves NAME...
//		alpn PROTO...
//		client_auth { ... }
//		issuer acme|internal|zerossl [...] { ... }
//		ca URL  ca_root FILE  eab KID MAC  key_type TYPE
//		on_demand  get_certificate http URL
//		reuse_private_keys  renewal_window_ratio R
//	}]
func (p *parser) tls(d *caddyfile.Dispenser) TLS {
	t := TLS{Pos: dpos(d)}
	args := d.RemainingArgs()
	var implicit *Issuer // made by tls EMAIL, ca, ca_root, eab
	internal := false
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "internal":
		t.Mode, internal = TLSInternal, true
	case len(args) == 1 && args[0] == "force_automate":
		// The site's names are automated even where a loaded
		// certificate covers them, which pollproxy does for a site
		// without load anyway; like Caddy's, it makes a connection
		// policy.
		t.ForceAutomate = true
	case len(args) == 1 && strings.Contains(args[0], "@"):
		t.Mode, t.Email = TLSACME, args[0]
		implicit = &Issuer{Pos: t.Pos, Kind: "acme", Email: args[0]}
	case len(args) == 1:
		p.errf(d, "tls: single argument must either be 'internal', 'force_automate', or an email address")
	case len(args) == 2:
		t.Mode, t.Cert, t.Key = TLSFiles, args[0], args[1]
	default:
		p.errf(d, "tls: want internal, CERT_FILE KEY_FILE, or an ACME account e-mail")
	}
	acme := func() *Issuer {
		if implicit == nil {
			implicit = &Issuer{Pos: dpos(d), Kind: "acme"}
		}
		return implicit
	}
	block := false
	for nest := d.Nesting(); d.NextBlock(nest); {
		block = true
		sub := d.Val()
		label := "tls: " + sub
		switch sub {
		case "protocols":
			a := d.RemainingArgs()
			if len(a) == 0 || len(a) > 2 {
				p.errf(d, "tls: protocols requires one or two arguments")
				continue
			}
			for i, v := range a {
				ver, ok := tlsProtocols[v]
				if !ok {
					p.errf(d, "tls: wrong protocol name or protocol not supported: '%s'", v)
					continue
				}
				if i == 0 {
					t.MinVersion = ver
				} else {
					t.MaxVersion = ver
				}
			}
			if t.MaxVersion != 0 && t.MinVersion > t.MaxVersion {
				p.errf(d, "tls: protocols: %s is above %s", a[0], a[1])
			}
		case "ciphers":
			a := d.RemainingArgs()
			t.Ciphers = []uint16{}
			for _, v := range a {
				if id := cipherID(v); id != 0 {
					t.Ciphers = append(t.Ciphers, id)
				} else {
					p.errf(d, "tls: wrong cipher suite name or cipher suite not supported: '%s'", v)
				}
			}
		case "curves":
			a := d.RemainingArgs()
			t.Curves = []stdtls.CurveID{}
			for _, v := range a {
				if id, ok := tlsCurves[v]; ok {
					t.Curves = append(t.Curves, id)
				} else {
					p.errf(d, "tls: Wrong curve name or curve not supported: '%s'", v)
				}
			}
		case "alpn":
			a := d.RemainingArgs()
			if len(a) == 0 {
				p.errf(d, "%s: want one or more protocols (h2, http/1.1)", label)
			}
			t.ALPN = a
		case "client_auth":
			t.ClientAuth = p.clientAuth(d)
		case "ca":
			if v, ok := p.oneArg(d, label, "an ACME directory URL"); ok {
				acme().Dir = v
			}
		case "ca_root":
			if v, ok := p.oneArg(d, label, "a PEM file"); ok {
				acme().TrustedRoots = append(acme().TrustedRoots, v)
			}
		case "eab":
			a := d.RemainingArgs()
			if len(a) != 2 {
				p.errf(d, "%s: want KEY_ID MAC_KEY", label)
				continue
			}
			acme().EABKeyID, acme().EABMACKey = a[0], a[1]
		case "key_type":
			if v, ok := p.oneArg(d, label, "ed25519, p256, p384, rsa2048 or rsa4096"); ok {
				if !keyTypeNames[v] {
					p.errf(d, "%s: %q: want ed25519, p256, p384, rsa2048 or rsa4096", label, v)
				}
				t.KeyType = v
			}
		case "issuer":
			if is, ok := p.issuer(d); ok {
				t.Issuers = append(t.Issuers, is)
			}
		case "load":
			a := d.RemainingArgs()
			if len(a) == 0 {
				p.errf(d, "%s: want one or more directories", label)
			}
			t.Load = append(t.Load, a...)
		case "insecure_secrets_log":
			t.SecretsLog, _ = p.oneArg(d, label, "a file")
		case "get_certificate":
			a := d.RemainingArgs()
			switch {
			case len(a) == 2 && a[0] == "http":
				t.CertGetters = append(t.CertGetters, a[1])
			case len(a) > 0 && a[0] != "http":
				p.errf(d, "tls: get_certificate %s is not supported by pollproxy", a[0])
			default:
				p.errf(d, "tls: get_certificate http: want the endpoint: get_certificate http URL")
			}
			skipBlock(d)
		case "on_demand":
			if d.NextArg() {
				p.errf(d, "%s: takes no argument", label)
			}
			t.OnDemand = true
		case "reuse_private_keys":
			if d.NextArg() {
				p.errf(d, "%s: takes no argument", label)
			}
			t.ReusePrivateKeys = true
		case "renewal_window_ratio":
			if v, ok := p.oneArg(d, label, "a ratio between 0 and 1"); ok {
				r, err := strconv.ParseFloat(v, 64)
				if err != nil {
					p.errf(d, "tls: parsing renewal_window_ratio: %v", err)
				} else if r <= 0 || r >= 1 {
					p.errf(d, "tls: renewal_window_ratio must be between 0 and 1 (exclusive)")
				}
				t.RenewalWindowRatio = r
			}
		default:
			p.notOurs(d, "tls: ", sub, unsupportedTLS, "protocols, ciphers, curves, alpn, client_auth, issuer, ca, ca_root, eab, key_type, on_demand, get_certificate, reuse_private_keys, renewal_window_ratio")
		}
	}
	if len(args) == 0 && !block {
		p.errAt(t.Pos, "tls: want internal, CERT_FILE KEY_FILE, or an ACME account e-mail")
	}
	if len(t.Issuers) > 0 && (implicit != nil || internal) {
		p.errAt(t.Pos, "tls: cannot mix issuer subdirective (explicit issuers) with other issuer-specific subdirectives (implicit issuers)")
	}
	if implicit != nil && internal {
		p.errAt(t.Pos, "tls: cannot create both ACME and internal certificate issuers")
	}
	switch {
	case implicit != nil && len(t.Issuers) == 0:
		t.Issuers = []Issuer{*implicit}
	case internal && len(t.Issuers) == 0 && t.Automation():
		t.Issuers = []Issuer{{Pos: t.Pos, Kind: "internal"}}
	}
	return t
}

// clientAuth reads client_auth's block.
func (p *parser) clientAuth(d *caddyfile.Dispenser) *ClientAuth {
	a := &ClientAuth{Pos: dpos(d)}
	if args := d.RemainingArgs(); len(args) > 0 {
		p.errf(d, "tls: client_auth: takes a block, not %q", args[0])
	}
	pool := false
	for nest := d.Nesting(); d.NextBlock(nest); {
		sub := d.Val()
		label := "tls: client_auth: " + sub
		switch sub {
		case "mode":
			if v, ok := p.oneArg(d, label, "request, require, verify_if_given or require_and_verify"); ok {
				switch v {
				case "request", "require", "verify_if_given", "require_and_verify":
					a.Mode = v
				default:
					p.errf(d, "tls: client auth mode not recognized: %s", v)
				}
			}
		case "trusted_ca_cert", "trusted_leaf_cert":
			if pool && sub == "trusted_ca_cert" {
				p.errf(d, "tls: cannot specify both 'trust_pool' and 'trusted_ca_cert' or 'trusted_ca_cert_file'")
			}
			if v, ok := p.oneArg(d, label, "a base64 DER certificate"); ok {
				der, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					p.errf(d, "%s: %v", label, err)
				} else if sub == "trusted_ca_cert" {
					a.CADER = append(a.CADER, der)
				} else {
					a.LeafDER = append(a.LeafDER, der)
				}
			}
		case "trusted_ca_cert_file", "trusted_leaf_cert_file":
			if pool && sub == "trusted_ca_cert_file" {
				p.errf(d, "tls: cannot specify both 'trust_pool' and 'trusted_ca_cert' or 'trusted_ca_cert_file'")
			}
			if v, ok := p.oneArg(d, label, "a PEM file"); ok {
				if sub == "trusted_ca_cert_file" {
					a.CAFiles = append(a.CAFiles, v)
				} else {
					a.LeafFiles = append(a.LeafFiles, v)
				}
			}
		case "trust_pool":
			if !pool && len(a.CAFiles)+len(a.CADER) > 0 {
				p.errf(d, "tls: cannot specify both 'trust_pool' and 'trusted_ca_cert' or 'trusted_ca_cert_file'")
			}
			pool = true
			// A second trust_pool replaces the first, as in Caddy.
			a.CAFiles, a.CADER, a.PKI = nil, nil, nil
			p.clientTrustPool(d, a)
		case "verifier":
			p.leafVerifier(d, a)
		default:
			p.errf(d, "tls: unknown subdirective for client_auth: %s", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	return a
}

// clientTrustPool reads trust_pool file|inline|pki_root|pki_intermediate:
// the sources pollproxy has of Caddy's (storage, http and lazy are not).
func (p *parser) clientTrustPool(d *caddyfile.Dispenser, a *ClientAuth) {
	if !d.NextArg() {
		p.errf(d, "tls: client_auth: trust_pool: want file, inline, pki_root or pki_intermediate")
		return
	}
	switch src := d.Val(); src {
	case "file":
		files := d.RemainingArgs()
		for n := d.Nesting(); d.NextBlock(n); {
			if d.Val() != "pem_file" {
				p.errf(d, "tls: client_auth: trust_pool file: unrecognized directive: %s", d.Val())
				d.RemainingArgs()
				continue
			}
			files = append(files, d.RemainingArgs()...)
		}
		if len(files) == 0 {
			p.errf(d, "tls: client_auth: trust_pool file: no certificates specified")
		}
		a.CAFiles = append(a.CAFiles, files...)
	case "inline":
		if d.CountRemainingArgs() > 0 {
			p.errf(d, "tls: client_auth: trust_pool inline: takes a block of trust_der lines")
			d.RemainingArgs()
		}
		n0 := len(a.CADER)
		for n := d.Nesting(); d.NextBlock(n); {
			if d.Val() != "trust_der" {
				p.errf(d, "tls: client_auth: trust_pool inline: unrecognized directive: %s", d.Val())
				d.RemainingArgs()
				continue
			}
			for _, v := range d.RemainingArgs() {
				der, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					p.errf(d, "tls: client_auth: trust_der: %v", err)
					continue
				}
				a.CADER = append(a.CADER, der)
			}
		}
		if len(a.CADER) == n0 {
			p.errf(d, "tls: client_auth: trust_pool inline: no certificates specified")
		}
	case "pki_root", "pki_intermediate":
		a.PKI = p.pkiPool(d, "tls: client_auth: trust_pool "+src)
	case "storage", "http", "lazy":
		p.errf(d, "tls: client_auth: trust_pool %s is not supported by pollproxy", src)
		d.RemainingArgs()
		skipBlock(d)
	default:
		p.errf(d, "tls: client_auth: trust_pool: unknown source %q (want file, inline, pki_root or pki_intermediate)", src)
		d.RemainingArgs()
		skipBlock(d)
	}
}

// leafVerifier reads verifier leaf file PATH... (or its block form):
// Caddy's leaf verifier with its file loader.
func (p *parser) leafVerifier(d *caddyfile.Dispenser, a *ClientAuth) {
	if !d.NextArg() {
		p.errf(d, "tls: client_auth: verifier: want leaf")
		return
	}
	if v := d.Val(); v != "leaf" {
		p.errf(d, "tls: client_auth: verifier %s is not supported by pollproxy", v)
		d.RemainingArgs()
		skipBlock(d)
		return
	}
	loader := func(name string, args []string) {
		if name != "file" {
			p.errf(d, "tls: client_auth: verifier leaf %s is not supported by pollproxy", name)
			return
		}
		if len(args) == 0 {
			p.errf(d, "tls: client_auth: verifier leaf file: want one or more PEM files")
		}
		a.VerifierFiles = append(a.VerifierFiles, args...)
	}
	if args := d.RemainingArgs(); len(args) > 0 {
		loader(args[0], args[1:])
		skipBlock(d)
		return
	}
	for n := d.Nesting(); d.NextBlock(n); {
		name := d.Val()
		loader(name, d.RemainingArgs())
		skipBlock(d)
	}
}

// issuer reads issuer acme|internal|zerossl and its block, as Caddy's
// issuer modules do.
func (p *parser) issuer(d *caddyfile.Dispenser) (Issuer, bool) {
	is := Issuer{Pos: dpos(d)}
	if !d.NextArg() {
		p.errf(d, "tls: issuer: want acme, internal or zerossl")
		return is, false
	}
	is.Kind = d.Val()
	switch is.Kind {
	case "acme":
		if d.NextArg() {
			is.Dir = d.Val()
		}
	case "zerossl":
		if d.NextArg() {
			is.APIKey = d.Val()
		}
	case "internal":
	default:
		p.errf(d, "tls: issuer %s is not supported by pollproxy", is.Kind)
		d.RemainingArgs()
		skipBlock(d)
		return is, false
	}
	if d.NextArg() {
		p.errf(d, "tls: issuer %s: unexpected argument %q", is.Kind, d.Val())
		d.RemainingArgs()
	}
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "tls: issuer " + is.Kind + ": " + sub
		switch {
		case sub == "lifetime" && is.Kind != "zerossl":
			is.Lifetime = p.daysArg(d, label)
		case is.Kind == "acme":
			p.acmeOption(d, &is, sub, label)
		case is.Kind == "internal" && sub == "ca":
			is.CA, _ = p.oneArg(d, label, "a CA id from pki")
		case is.Kind == "internal" && sub == "sign_with_root":
			if d.NextArg() {
				p.errf(d, "%s: takes no argument", label)
			}
			is.SignWithRoot = true
		case is.Kind == "zerossl" && sub == "validity_days":
			is.ValidityDays = p.intArg(d, label, 1)
		case is.Kind == "zerossl" && sub == "alt_http_port":
			is.AltHTTPPort = p.portArg(d, label)
		case is.Kind == "zerossl" && (sub == "dns" || sub == "propagation_delay" || sub == "propagation_timeout" || sub == "resolvers" || sub == "dns_ttl"):
			p.errf(d, "%s is not supported by pollproxy (no DNS providers)", label)
			d.RemainingArgs()
			skipBlock(d)
		default:
			p.errf(d, "tls: issuer %s: unknown option %q", is.Kind, sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if is.Kind == "zerossl" && is.APIKey == "" {
		p.errAt(is.Pos, "tls: issuer zerossl: want the API key: issuer zerossl API_KEY")
	}
	return is, true
}

// acmeOption reads one option of issuer acme's block (and of the global
// cert_issuer acme).
func (p *parser) acmeOption(d *caddyfile.Dispenser, is *Issuer, sub, label string) {
	switch sub {
	case "dir":
		is.Dir, _ = p.oneArg(d, label, "an ACME directory URL")
	case "test_dir":
		is.TestDir, _ = p.oneArg(d, label, "an ACME directory URL")
	case "email":
		is.Email, _ = p.oneArg(d, label, "an e-mail address")
	case "profile":
		is.Profile, _ = p.oneArg(d, label, "an ACME profile name")
	case "timeout":
		is.Timeout = p.daysArg(d, label)
	case "disable_http_challenge", "disable_tlsalpn_challenge":
		if d.NextArg() {
			p.errf(d, "%s: takes no argument", label)
		}
		if sub == "disable_http_challenge" {
			is.DisableHTTPChallenge = true
		} else {
			is.DisableTLSALPNChallenge = true
		}
	case "alt_http_port":
		is.AltHTTPPort = p.portArg(d, label)
	case "alt_tlsalpn_port":
		is.AltTLSALPNPort = p.portArg(d, label)
	case "eab":
		a := d.RemainingArgs()
		if len(a) != 2 {
			p.errf(d, "%s: want KEY_ID MAC_KEY", label)
			return
		}
		is.EABKeyID, is.EABMACKey = a[0], a[1]
	case "trusted_roots":
		a := d.RemainingArgs()
		if len(a) == 0 {
			p.errf(d, "%s: want one or more PEM files", label)
		}
		is.TrustedRoots = append(is.TrustedRoots, a...)
	case "preferred_chains":
		is.PreferredChains = p.preferredChains(d)
	case "dns", "propagation_delay", "propagation_timeout", "resolvers", "dns_ttl", "dns_challenge_override_domain", "distributed":
		p.errf(d, "%s is not supported by pollproxy", label)
		d.RemainingArgs()
		skipBlock(d)
	default:
		p.errf(d, "tls: issuer acme: unknown option %q", sub)
		d.RemainingArgs()
		skipBlock(d)
	}
}

// preferredChains reads preferred_chains [smallest] { root_common_name
// ... | any_common_name ... }.
func (p *parser) preferredChains(d *caddyfile.Dispenser) *PreferredChains {
	pc := &PreferredChains{}
	if d.NextArg() {
		if d.Val() != "smallest" {
			p.errf(d, "preferred_chains: Invalid argument '%s'", d.Val())
		}
		pc.Smallest = true
		if d.NextArg() {
			p.errf(d, "preferred_chains: takes one argument")
		}
	}
	for n := d.Nesting(); d.NextBlock(n); {
		if pc.Smallest {
			p.errf(d, "preferred_chains: No more options are accepted when using the 'smallest' option")
		}
		switch d.Val() {
		case "root_common_name":
			a := d.RemainingArgs()
			if len(a) == 0 {
				p.errf(d, "preferred_chains: root_common_name: want a common name")
			}
			if pc.AnyCommonName != nil {
				p.errf(d, "preferred_chains: Can't set root_common_name when any_common_name is already set")
			}
			pc.RootCommonName = append(pc.RootCommonName, a...)
		case "any_common_name":
			a := d.RemainingArgs()
			if len(a) == 0 {
				p.errf(d, "preferred_chains: any_common_name: want a common name")
			}
			if pc.RootCommonName != nil {
				p.errf(d, "preferred_chains: Can't set any_common_name when root_common_name is already set")
			}
			pc.AnyCommonName = append(pc.AnyCommonName, a...)
		default:
			p.errf(d, "preferred_chains: Received unrecognized parameter '%s'", d.Val())
			d.RemainingArgs()
		}
	}
	return pc
}

// daysArg reads a positive duration as Caddy does, with "d" for days.
func (p *parser) daysArg(d *caddyfile.Dispenser, label string) time.Duration {
	v, ok := p.oneArg(d, label, "a duration such as 12h or 30d")
	if !ok {
		return 0
	}
	dur, err := parseDays(v)
	if err != nil || dur <= 0 {
		p.errf(d, "%s: %q: want a positive duration such as 12h or 30d", label, v)
		return 0
	}
	return dur
}

func (p *parser) portArg(d *caddyfile.Dispenser, label string) int {
	v, ok := p.oneArg(d, label, "a port")
	if !ok {
		return 0
	}
	if !validPort(v) {
		p.errf(d, "%s: %q: want a port number (1-65535)", label, v)
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}
