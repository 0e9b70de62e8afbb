package config

import (
	stdtls "crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHTTPSUpstream: an https:// upstream turns TLS on, with port 443 by
// default and Host set to the upstream, as in Caddy.
func TestHTTPSUpstream(t *testing.T) {
	c := mustParse(t, "localhost:8443 {\n\treverse_proxy https://app.internal https://10.0.0.2:8443\n}\n")
	rp := c.Sites[0].AllProxies()[0]
	if !slices.Equal(rp.Upstreams, []string{"app.internal:443", "10.0.0.2:8443"}) {
		t.Fatalf("upstreams %q", rp.Upstreams)
	}
	if rp.TLS == nil || rp.TLS.Pos.Line != 2 {
		t.Fatalf("TLS %+v, want on at line 2", rp.TLS)
	}
	pc := rp.ProxyConfig(nil)
	if len(pc.HeaderUp) != 1 || !strings.EqualFold(pc.HeaderUp[0].Name, "host") {
		t.Fatalf("header_up %+v, want Host {upstream_hostport}", pc.HeaderUp)
	}
	plain := mustParse(t, "localhost:8443 {\n\treverse_proxy 10.0.0.2:8443\n}\n").Sites[0].AllProxies()[0]
	if plain.TLS != nil || len(plain.ProxyConfig(nil).HeaderUp) != 0 {
		t.Fatal("a plain upstream got TLS or a Host edit")
	}
}

// TestTransportTLSOptions: every tls option of transport http turns TLS
// on and keeps its value.
func TestTransportTLSOptions(t *testing.T) {
	c := mustParse(t, `localhost:8443 {
	reverse_proxy 10.0.0.2:8443 {
		transport http {
			tls_server_name app.internal
			tls_insecure_skip_verify
			tls_trust_pool file a.pem {
				pem_file b.pem c.pem
			}
			tls_client_auth client.crt client.key
			tls_timeout 3s
			tls_curves x25519 secp256r1
			tls_renegotiation never
		}
	}
}
`)
	u := c.Sites[0].AllProxies()[0].TLS
	if u == nil {
		t.Fatal("no TLS")
	}
	if u.Pos.Line != 4 || u.ServerName != "app.internal" || !u.InsecureSkipVerify || !slices.Equal(u.TrustPool, []string{"a.pem", "b.pem", "c.pem"}) ||
		u.ClientCert != "client.crt" || u.ClientKey != "client.key" || u.Timeout != 3*time.Second ||
		!slices.Equal(u.Curves, []stdtls.CurveID{stdtls.X25519, stdtls.CurveP256}) {
		t.Fatalf("TLS %+v", u)
	}
	c = mustParse(t, "localhost:8443 {\n\treverse_proxy 10.0.0.2:8443 {\n\t\ttransport http {\n\t\t\ttls\n\t\t}\n\t}\n}\n")
	if c.Sites[0].AllProxies()[0].TLS == nil {
		t.Fatal("transport http { tls } left TLS off")
	}
	c = mustParse(t, "localhost:8443 {\n\treverse_proxy 10.0.0.2:8443 {\n\t\ttransport http {\n\t\t\ttls_trusted_ca_certs ca.pem\n\t\t}\n\t}\n}\n")
	if u := c.Sites[0].AllProxies()[0].TLS; u == nil || !slices.Equal(u.TrustPool, []string{"ca.pem"}) {
		t.Fatalf("tls_trusted_ca_certs: %+v", u)
	}
}

// TestTransportTLSErrors: what pollproxy refuses, each with its line.
func TestTransportTLSErrors(t *testing.T) {
	tr := func(opts string) string {
		return "localhost:8443 {\n\treverse_proxy 10.0.0.2:8443 {\n\t\ttransport http {\n" + opts + "\n\t\t}\n\t}\n}\n"
	}
	for _, c := range []struct{ name, body, want string }{
		{"placeholder server name", tr("\t\t\ttls_server_name {http.request.host}"), "Caddyfile:4: transport http: tls_server_name: placeholders in tls_server_name are not supported by pollproxy"},
		{"automated client cert", tr("\t\t\ttls_client_auth client.example.com"), "Caddyfile:4: transport http: tls_client_auth: an automated client certificate (one name) is not supported by pollproxy"},
		{"renegotiation", tr("\t\t\ttls_renegotiation once"), "Caddyfile:4: transport http: tls_renegotiation: once is not supported by pollproxy"},
		{"except ports", tr("\t\t\ttls_except_ports 80"), "Caddyfile:4: transport http: tls_except_ports is not supported by pollproxy"},
		{"trust pool source", tr("\t\t\ttls_trust_pool storage key"), "Caddyfile:4: transport http: tls_trust_pool: source storage is not supported by pollproxy"},
		{"trust pool empty", tr("\t\t\ttls_trust_pool file"), "Caddyfile:4: transport http: tls_trust_pool file: no certificates specified"},
		{"both pools", tr("\t\t\ttls_trust_pool file a.pem\n\t\t\ttls_trusted_ca_certs b.pem"), "Caddyfile:5: transport http: tls_trusted_ca_certs: cannot specify both"},
		{"curve", tr("\t\t\ttls_curves p256"), "Caddyfile:4: transport http: tls_curves: unknown curve \"p256\""},
		{"http scheme", "localhost:8443 {\n\treverse_proxy http://10.0.0.2:8443 {\n\t\ttransport http {\n\t\t\ttls\n\t\t}\n\t}\n}\n", "Caddyfile:4: reverse_proxy: upstream address scheme is HTTP but transport is configured for HTTP+TLS (HTTPS)"},
		{"https port 80", "localhost:8443 {\n\treverse_proxy https://10.0.0.2:80\n}\n", "conflicting scheme (https://) and port (:80, the HTTP port)"},
		{"wss", "localhost:8443 {\n\treverse_proxy wss://10.0.0.2\n}\n", "the scheme wss:// is only supported in browsers; use https:// instead"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestUpstreamTLSFiles: the trust pool and the client certificate are
// read when the configuration is built; a file without a certificate is
// an error, never an empty pool that trusts nothing in silence.
func TestUpstreamTLSFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		u    UpstreamTLS
		want string
	}{
		{UpstreamTLS{TrustPool: []string{filepath.Join(dir, "missing.pem")}}, "tls_trust_pool: open"},
		{UpstreamTLS{TrustPool: []string{empty}}, "no PEM certificate"},
		{UpstreamTLS{ClientCert: empty, ClientKey: empty}, "tls_client_auth:"},
	} {
		if _, err := c.u.ClientConfig(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.u, err, c.want)
		}
	}
	c, err := Parse("Caddyfile", []byte("localhost:8443 {\n\treverse_proxy https://10.0.0.2 {\n\t\ttransport http {\n\t\t\ttls_trust_pool file "+empty+"\n\t\t}\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckFiles(); err == nil || !strings.Contains(err.Error(), "Caddyfile:4: reverse_proxy: tls_trust_pool: ") {
		t.Errorf("CheckFiles: %v, want the error at the tls_trust_pool line", err)
	}
	cfg, err := (&UpstreamTLS{ServerName: "app.internal"}).ClientConfig()
	if err != nil || cfg.ServerName != "app.internal" || cfg.RootCAs != nil {
		t.Fatalf("config %+v, %v: want the system roots and the name", cfg, err)
	}
}
