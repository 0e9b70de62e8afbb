package config

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TLSOptions are the global options about certificates and handshakes,
// with Caddy's names and meanings.
type TLSOptions struct {
	// LocalCerts issues every certificate from the local CA, public
	// names too (local_certs).
	LocalCerts bool
	// SkipInstallTrust is accepted: pollproxy never installs its root
	// into the system's trust store on its own (pollproxy trust does),
	// which is what skip_install_trust asks of Caddy.
	SkipInstallTrust bool
	// PKI configures local CAs by id (pki { ca ID { ... } }).
	PKI map[string]*PKICA
	// KeyType, CertLifetime and RenewalWindowRatio are the defaults of
	// every policy (key_type, cert_lifetime, renewal_window_ratio).
	KeyType            string
	CertLifetime       time.Duration
	RenewalWindowRatio float64
	// OCSPStaplingOff stops OCSP stapling (ocsp_stapling off);
	// OCSPInterval, RenewInterval and StorageCleanInterval are how often
	// staples, renewals and storage are looked after (0: certmagic's
	// and Caddy's defaults).
	OCSPStaplingOff      bool
	OCSPInterval         time.Duration
	RenewInterval        time.Duration
	StorageCleanInterval time.Duration
	// ACMECARoot is a PEM file of roots for the ACME CA's HTTPS
	// (acme_ca_root); ACMEEAB the account binding (acme_eab);
	// PreferredChains the chain choice (preferred_chains).
	ACMECARoot          string
	EABKeyID, EABMACKey string
	PreferredChains     *PreferredChains
	// CertIssuers replace the default issuers of sites that name none
	// (cert_issuer, in order).
	CertIssuers []Issuer
	// DefaultSNI names the certificate of a handshake without SNI
	// (default_sni); FallbackSNI that of one whose SNI matches none
	// (fallback_sni).
	DefaultSNI, FallbackSNI string
	// OnDemandAsk is the permission endpoint of on-demand certificates
	// (on_demand_tls { ask URL } or { permission http URL }).
	OnDemandAsk string
	// PersistConfigOff is persist_config off: pollproxy never writes its
	// configuration anywhere, which is what it asks of Caddy.
	PersistConfigOff bool
	// Debug turns on debug logs (debug): the default log's level, and
	// certmagic's through it.
	Debug bool
	// ShutdownDelay is how long, after a stop is asked for, pollproxy
	// goes on serving as before until the grace period starts
	// (shutdown_delay).
	ShutdownDelay time.Duration
}

// PKICA is one pki { ca ID { ... } } block.
type PKICA struct {
	Pos                    Pos
	Name                   string
	RootCN, IntermediateCN string
	IntermediateLifetime   time.Duration
	// RootCert/RootKey and IntermCert/IntermKey are PEM files of a CA
	// brought by the operator (root { cert key }, intermediate { ... }).
	RootCert, RootKey     string
	IntermCert, IntermKey string
}

// tlsGlobal reads one of the TLS global options; it reports whether name
// is one.
func (p *parser) tlsGlobal(d *caddyfile.Dispenser, name string) bool {
	o := &p.cfg.TLSOptions
	flag := func() bool {
		if d.NextArg() {
			p.errf(d, "%s: takes no argument", name)
			d.RemainingArgs()
		}
		return true
	}
	switch name {
	case "local_certs":
		o.LocalCerts = flag()
	case "skip_install_trust":
		o.SkipInstallTrust = flag()
	case "debug":
		o.Debug = flag()
	case "pki":
		p.pki(d)
	case "key_type":
		if v, ok := p.oneArg(d, name, "ed25519, p256, p384, rsa2048 or rsa4096"); ok {
			if !keyTypeNames[v] {
				p.errf(d, "key_type: %q: want ed25519, p256, p384, rsa2048 or rsa4096", v)
			}
			o.KeyType = v
		}
	case "cert_lifetime":
		o.CertLifetime = p.daysArg(d, name)
	case "ocsp_stapling":
		if v, ok := p.oneArg(d, name, "off"); ok {
			if v != "off" {
				p.errf(d, "ocsp_stapling: invalid argument '%s'", v)
			}
			o.OCSPStaplingOff = true
		}
	case "ocsp_interval":
		o.OCSPInterval = p.daysArg(d, name)
	case "renew_interval":
		o.RenewInterval = p.daysArg(d, name)
	case "storage_clean_interval":
		o.StorageCleanInterval = p.daysArg(d, name)
	case "renewal_window_ratio":
		if v, ok := p.oneArg(d, name, "a ratio between 0 and 1"); ok {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r <= 0 || r >= 1 {
				p.errf(d, "renewal_window_ratio must be between 0 and 1 (exclusive)")
			}
			o.RenewalWindowRatio = r
		}
	case "acme_ca_root":
		o.ACMECARoot, _ = p.oneArg(d, name, "a PEM file")
	case "acme_eab":
		if d.NextArg() {
			p.errf(d, "acme_eab: takes a block: key_id and mac_key")
			d.RemainingArgs()
		}
		for n := d.Nesting(); d.NextBlock(n); {
			switch d.Val() {
			case "key_id":
				o.EABKeyID, _ = p.oneArg(d, "acme_eab: key_id", "the key id")
			case "mac_key":
				o.EABMACKey, _ = p.oneArg(d, "acme_eab: mac_key", "the MAC key")
			default:
				p.errf(d, "acme_eab: unrecognized parameter '%s'", d.Val())
				d.RemainingArgs()
			}
		}
	case "preferred_chains":
		o.PreferredChains = p.preferredChains(d)
	case "cert_issuer":
		if is, ok := p.issuer(d); ok {
			o.CertIssuers = append(o.CertIssuers, is)
		}
	case "default_sni":
		o.DefaultSNI, _ = p.oneArg(d, name, "a server name")
	case "fallback_sni":
		o.FallbackSNI, _ = p.oneArg(d, name, "a server name")
	case "on_demand_tls":
		p.onDemandTLS(d)
	case "persist_config":
		if v, ok := p.oneArg(d, name, "off"); ok {
			if v != "off" {
				p.errf(d, "persist_config must be 'off'")
			}
			o.PersistConfigOff = true
		}
	case "shutdown_delay":
		v, ok := p.oneArg(d, name, "a duration such as 10s")
		if !ok {
			break
		}
		dur, err := parseDays(v)
		if err != nil || dur < 0 {
			p.errf(d, "shutdown_delay: %q: want a duration such as 10s", v)
		}
		o.ShutdownDelay = dur
	default:
		return false
	}
	return true
}

// onDemandTLS reads on_demand_tls { ask URL | permission http URL }.
func (p *parser) onDemandTLS(d *caddyfile.Dispenser) {
	o := &p.cfg.TLSOptions
	if d.NextArg() {
		p.errf(d, "on_demand_tls: takes a block: ask URL or permission http URL")
		d.RemainingArgs()
	}
	any := false
	for n := d.Nesting(); d.NextBlock(n); {
		any = true
		switch sub := d.Val(); sub {
		case "ask", "permission":
			if o.OnDemandAsk != "" {
				p.errf(d, "on_demand_tls: on-demand TLS permission module (or 'ask') already specified")
			}
			args := d.RemainingArgs()
			switch {
			case sub == "ask" && len(args) == 1:
				o.OnDemandAsk = args[0]
			case sub == "permission" && len(args) == 2 && args[0] == "http":
				o.OnDemandAsk = args[1]
			case sub == "permission" && len(args) > 0 && args[0] != "http":
				p.errf(d, "on_demand_tls: permission %s is not supported by pollproxy", args[0])
			case sub == "permission":
				p.errf(d, "on_demand_tls: permission http: want the endpoint on the line: permission http URL")
			default:
				p.errf(d, "on_demand_tls: ask: want one URL")
			}
			skipBlock(d)
		case "interval", "burst":
			p.errf(d, "on_demand_tls: the on_demand_tls '%s' option is no longer supported, remove it from your config", sub)
			d.RemainingArgs()
		default:
			p.errf(d, "on_demand_tls: unrecognized parameter '%s'", sub)
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if !any {
		p.errf(d, "on_demand_tls: expected at least one config parameter for on_demand_tls")
	}
}

// pki reads pki { ca ID { name  root_cn  intermediate_cn
// intermediate_lifetime  root { cert key format }  intermediate { ... } } }.
func (p *parser) pki(d *caddyfile.Dispenser) {
	o := &p.cfg.TLSOptions
	if o.PKI == nil {
		o.PKI = map[string]*PKICA{}
	}
	for n := d.Nesting(); d.NextBlock(n); {
		if d.Val() != "ca" {
			p.errf(d, "pki: unrecognized parameter '%s' (want ca)", d.Val())
			d.RemainingArgs()
			skipBlock(d)
			continue
		}
		id := "local"
		if d.NextArg() {
			id = d.Val()
		}
		ca := o.PKI[id]
		if ca == nil {
			ca = &PKICA{Pos: dpos(d)}
			o.PKI[id] = ca
		}
		for n2 := d.Nesting(); d.NextBlock(n2); {
			sub := d.Val()
			label := "pki: ca " + id + ": " + sub
			switch sub {
			case "name":
				ca.Name, _ = p.oneArg(d, label, "a name")
			case "root_cn":
				ca.RootCN, _ = p.oneArg(d, label, "a common name")
			case "intermediate_cn":
				ca.IntermediateCN, _ = p.oneArg(d, label, "a common name")
			case "intermediate_lifetime":
				ca.IntermediateLifetime = p.daysArg(d, label)
			case "root", "intermediate":
				cert, key := &ca.RootCert, &ca.RootKey
				if sub == "intermediate" {
					cert, key = &ca.IntermCert, &ca.IntermKey
				}
				for n3 := d.Nesting(); d.NextBlock(n3); {
					switch d.Val() {
					case "cert":
						*cert, _ = p.oneArg(d, label+": cert", "a PEM file")
					case "key":
						*key, _ = p.oneArg(d, label+": key", "a PEM file")
					case "format":
						if v, ok := p.oneArg(d, label+": format", "pem_file"); ok && v != "pem_file" {
							p.errf(d, "%s: format %q: want pem_file", label, v)
						}
					default:
						p.errf(d, "%s: unrecognized parameter '%s'", label, d.Val())
						d.RemainingArgs()
					}
				}
				if (*cert == "") != (*key == "") {
					p.errf(d, "%s: want both cert and key", label)
				}
			case "maintenance_interval", "renewal_window_ratio":
				p.errf(d, "%s is not supported by pollproxy", label)
				d.RemainingArgs()
			default:
				p.errf(d, "%s: unrecognized parameter", label)
				d.RemainingArgs()
				skipBlock(d)
			}
		}
		if ca.IntermCert != "" && ca.RootCert == "" {
			p.errAt(ca.Pos, "pki: ca %s: an intermediate needs its root (root { cert key })", id)
		}
	}
}
