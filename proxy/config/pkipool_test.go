package config

import (
	"slices"
	"strings"
	"testing"
)

// TestPKIPool: trust_pool pki_root|pki_intermediate, in client_auth and in
// transport http's tls_trust_pool, read as Caddy reads them: authorities
// on the line and in authority lines, in order.
func TestPKIPool(t *testing.T) {
	c := mustParse(t, "{\n\tpki {\n\t\tca corp {\n\t\t}\n\t}\n}\nlocalhost:8443 {\n\ttls {\n\t\tclient_auth {\n\t\t\ttrust_pool pki_intermediate corp {\n\t\t\t\tauthority local\n\t\t\t}\n\t\t}\n\t}\n\treverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\ttls_trust_pool pki_root local corp\n\t\t}\n\t}\n}\n")
	s := c.Sites[0]
	a := s.TLS.ClientAuth
	if a == nil || a.PKI == nil || !a.PKI.Intermediate || !slices.Equal(a.PKI.Authorities, []string{"corp", "local"}) || a.PKI.Pos.Line != 10 {
		t.Fatalf("client_auth PKI %+v", a)
	}
	if a.AuthType().String() != "RequireAndVerifyClientCert" {
		t.Fatalf("mode %v, want require_and_verify by default with a trust pool", a.AuthType())
	}
	u := s.AllProxies()[0].TLS
	if u == nil || u.PKI == nil || u.PKI.Intermediate || !slices.Equal(u.PKI.Authorities, []string{"local", "corp"}) {
		t.Fatalf("tls_trust_pool PKI %+v", u)
	}

	// tls internal makes the pki app; a second trust_pool replaces the
	// first, as in Caddy.
	c = mustParse(t, "example.com {\n\ttls internal {\n\t\tclient_auth {\n\t\t\ttrust_pool file a.pem\n\t\t\ttrust_pool pki_root local\n\t\t}\n\t}\n}\n")
	if a := c.Sites[0].TLS.ClientAuth; a.PKI == nil || len(a.CAFiles) != 0 {
		t.Fatalf("second trust_pool: %+v", a)
	}
	// A name no public CA issues for makes it too (its issuer is the
	// local CA), as does skip_install_trust.
	mustParse(t, "localhost:8443 {\n\treverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\ttls_trust_pool pki_intermediate local\n\t\t}\n\t}\n}\n")
	mustParse(t, "{\n\tskip_install_trust\n}\nexample.com {\n\treverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\ttls_trust_pool pki_root local\n\t\t}\n\t}\n}\n")
}

// TestPKIPoolErrors: what Caddy refuses, with its words and the line.
func TestPKIPoolErrors(t *testing.T) {
	ca := func(pool string) string {
		return "localhost:8443 {\n\ttls {\n\t\tclient_auth {\n\t\t\ttrust_pool " + pool + "\n\t\t}\n\t}\n}\n"
	}
	tr := func(site, pool string) string {
		return site + " {\n\treverse_proxy https://127.0.0.1:9443 {\n\t\ttransport http {\n\t\t\ttls_trust_pool " + pool + "\n\t\t}\n\t}\n}\n"
	}
	for _, c := range []struct{ name, body, want string }{
		{"no authority", ca("pki_root"), "Caddyfile:4: tls: client_auth: trust_pool pki_root: no authorities specified"},
		{"empty authority", ca("pki_intermediate {\n\t\t\t\tauthority\n\t\t\t}"), "Caddyfile:6: tls: client_auth: trust_pool pki_intermediate: no authorities specified"},
		{"unknown sub", ca("pki_root local {\n\t\t\t\tca local\n\t\t\t}"), "Caddyfile:5: tls: client_auth: trust_pool pki_root: unrecognized directive: ca"},
		{"unconfigured CA", ca("pki_root corp"), "Caddyfile:4: tls: client_auth: trust_pool pki_root: getting CA corp: no certificate authority configured with id: corp"},
		{"no pki app", tr("example.com", "pki_intermediate local"), "Caddyfile:4: transport http: tls_trust_pool pki_intermediate: pki_intermediate CA pool requires that a PKI app is configured"},
		{"auto_https off", "{\n\tauto_https off\n}\n" + tr("localhost:8443", "pki_root local"), "Caddyfile:7: transport http: tls_trust_pool pki_root: pki_root CA pool requires that a PKI app is configured"},
		{"upstream no authority", tr("localhost:8443", "pki_root"), "Caddyfile:4: transport http: tls_trust_pool pki_root: no authorities specified"},
		{"upstream twice", tr("localhost:8443", "pki_root local\n\t\t\ttls_trust_pool pki_intermediate local"), "Caddyfile:5: transport http: tls_trust_pool: cannot specify tls_trust_pool twice"},
		{"upstream unconfigured CA", "{\n\tpki {\n\t\tca corp\n\t}\n}\n" + tr("localhost:8443", "pki_root corp other"), "Caddyfile:9: transport http: tls_trust_pool pki_root: getting CA other: no certificate authority configured with id: other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
