package certs

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// ConnPolicy is how the handshakes for some server names are answered:
// Caddy's connection policy, made from a site's tls options (protocols,
// ciphers, curves, alpn, client_auth).
type ConnPolicy struct {
	// Names are the SNI values it answers: names and wildcards
	// ("*.example.com", one label). Empty: every handshake no other
	// policy takes, those without SNI included.
	Names []string
	// Ports are the listening ports whose handshakes it answers (empty:
	// every port). A port is a server of its own, with policies of its
	// own, as each of Caddy's servers is: a host's options on one port
	// say nothing of the same host on another.
	Ports []int
	// MinVersion and MaxVersion bound the protocol (0: TLS 1.2 and 1.3).
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.2 suites offered (nil: pollproxy's).
	// crypto/tls does not let TLS 1.3's be chosen, nor does Caddy.
	CipherSuites []uint16
	// Curves are the key exchanges, in order of preference (nil:
	// crypto/tls's).
	Curves []stdtls.CurveID
	// ALPN replaces the protocols offered (nil: h2, http/1.1).
	ALPN []string
	// ClientAuth asks clients for certificates (nil: never).
	ClientAuth *ClientAuth
	// SecretsLog, when set, is a file the handshakes' secrets are
	// appended to in the NSS key log format, for Wireshark (Caddy's
	// insecure_secrets_log): whoever reads it can decrypt the traffic.
	SecretsLog string
}

// ClientAuth is a policy's client certificate authentication (Caddy's
// client_auth).
type ClientAuth struct {
	// Mode is what a client must present, as crypto/tls says it.
	Mode stdtls.ClientAuthType
	// CAs are the roots client certificates are verified against.
	CAs *x509.CertPool
	// Leaves, when not empty, are the only client certificates accepted
	// (Caddy's leaf verifier and trusted_leaf_cert).
	Leaves []*x509.Certificate
}

// verify is crypto/tls's VerifyConnection for a: called for every
// handshake, resumed ones included, so a leaf list cannot be bypassed
// by resuming a session.
func (a *ClientAuth) verify(cs stdtls.ConnectionState) error {
	if len(a.Leaves) == 0 || len(cs.PeerCertificates) == 0 {
		// crypto/tls enforced the mode already: the verifiers check a
		// certificate only when one was sent.
		return nil
	}
	leaf := cs.PeerCertificates[0]
	for _, ok := range a.Leaves {
		if ok.Equal(leaf) {
			return nil
		}
	}
	return errors.New("client leaf certificate failed validation")
}

// connPolicies answers a ClientHello with its policy's configuration:
// the policies of the port it came in on, then those of every port.
type connPolicies struct {
	byPort map[int]*policySet
	any    policySet
}

// policySet is the policies of one port (or of every port), by name.
type policySet struct {
	exact    map[string]*stdtls.Config
	wildcard map[string]*stdtls.Config // by the part after "*."
	dflt     *stdtls.Config            // a policy without names
}

// add gives names to cfg where an earlier policy did not take them.
func (ps *policySet) add(names []string, cfg *stdtls.Config) {
	if len(names) == 0 {
		if ps.dflt == nil {
			ps.dflt = cfg
		}
		return
	}
	if ps.exact == nil {
		ps.exact, ps.wildcard = map[string]*stdtls.Config{}, map[string]*stdtls.Config{}
	}
	for _, n := range names {
		n = normalize(n)
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if _, dup := ps.wildcard[rest]; !dup {
				ps.wildcard[rest] = cfg
			}
		} else if _, dup := ps.exact[n]; !dup {
			ps.exact[n] = cfg
		}
	}
}

// match is the configuration for the (normalized) name, or nil.
func (ps *policySet) match(name string) *stdtls.Config {
	if cfg := ps.exact[name]; cfg != nil {
		return cfg
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		if cfg := ps.wildcard[name[i+1:]]; cfg != nil {
			return cfg
		}
	}
	return ps.dflt
}

// SetConnPolicies makes TLSConfig's configurations answer each
// handshake by the first of the policies of its port that names its SNI
// (a name before a wildcard, either before a policy with no names), and
// failing that by the policies of every port alike; a handshake no
// policy takes gets TLSConfig's own settings. It replaces the policies
// set before, for handshakes that start afterwards (a reload).
func (c *Manager) SetConnPolicies(policies []ConnPolicy) error {
	if len(policies) == 0 {
		c.conn.Store(nil)
		return nil
	}
	base := c.baseTLSConfig()
	cp := &connPolicies{byPort: map[int]*policySet{}}
	for i := range policies {
		p := &policies[i]
		cfg, err := p.apply(base)
		if err != nil {
			return err
		}
		if p.SecretsLog != "" {
			w, err := c.secretsLog(p.SecretsLog)
			if err != nil {
				return err
			}
			cfg.KeyLogWriter = w
		}
		if len(p.Ports) == 0 {
			cp.any.add(p.Names, cfg)
		}
		for _, port := range p.Ports {
			ps := cp.byPort[port]
			if ps == nil {
				ps = &policySet{}
				cp.byPort[port] = ps
			}
			ps.add(p.Names, cfg)
		}
	}
	c.conn.Store(cp)
	return nil
}

// getConfigForClient is TLSConfig's GetConfigForClient: the connection
// policy's configuration, nil (TLSConfig's own) without one.
func (c *Manager) getConfigForClient(hello *stdtls.ClientHelloInfo) (*stdtls.Config, error) {
	cp := c.conn.Load()
	if cp == nil {
		return nil, nil
	}
	return cp.forClient(hello)
}

func (cp *connPolicies) forClient(hello *stdtls.ClientHelloInfo) (*stdtls.Config, error) {
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ACMETLSALPNProtocol {
		// A CA validating TLS-ALPN-01 presents no client certificate
		// and may offer any version: the base configuration answers.
		return nil, nil
	}
	name := normalize(hello.ServerName)
	if ps := cp.byPort[localPort(hello)]; ps != nil {
		if cfg := ps.match(name); cfg != nil {
			return cfg, nil
		}
	}
	return cp.any.match(name), nil // nil: the base configuration
}

// localPort is the port the handshake came in on, 0 when the connection
// does not say.
func localPort(hello *stdtls.ClientHelloInfo) int {
	if hello.Conn == nil {
		return 0
	}
	if a, ok := hello.Conn.LocalAddr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// apply returns base with p's settings.
func (p *ConnPolicy) apply(base *stdtls.Config) (*stdtls.Config, error) {
	cfg := base.Clone()
	if p.MinVersion != 0 {
		cfg.MinVersion = p.MinVersion
	}
	if p.MaxVersion != 0 {
		cfg.MaxVersion = p.MaxVersion
	}
	if cfg.MaxVersion != 0 && cfg.MinVersion > cfg.MaxVersion {
		return nil, fmt.Errorf("tls: protocols: the minimum version is above the maximum")
	}
	if p.CipherSuites != nil {
		cfg.CipherSuites = append([]uint16(nil), p.CipherSuites...)
	}
	if p.Curves != nil {
		cfg.CurvePreferences = append([]stdtls.CurveID(nil), p.Curves...)
	}
	if p.ALPN != nil {
		// The ACME TLS-ALPN-01 protocol stays offered: validations
		// for the policy's names come in on it.
		cfg.NextProtos = append(append([]string(nil), p.ALPN...), ACMETLSALPNProtocol)
	}
	if a := p.ClientAuth; a != nil {
		cfg.ClientAuth = a.Mode
		cfg.ClientCAs = a.CAs
		if len(a.Leaves) > 0 {
			cfg.VerifyConnection = a.verify
		}
	}
	return cfg, nil
}

// secretsLog opens the key log file name, once for the Manager's life:
// a reload that names it again writes on (crypto/tls writes each line
// whole, from the handshake workers).
func (c *Manager) secretsLog(name string) (io.Writer, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.keyLogs[abs]; f != nil {
		return f, nil
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tls: insecure_secrets_log: %w", err)
	}
	if c.keyLogs == nil {
		c.keyLogs = map[string]*os.File{}
	}
	c.keyLogs[abs] = f
	return f, nil
}
