package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testca"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	pptls "github.com/pollproxy/pollproxy/tls"
)

func writeCertPEM(t *testing.T, file string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// tlsGet makes one HTTP/1.1 request over TLS to addr with cfg; the
// error is the handshake's or, for a client certificate TLS 1.3 checks
// after the client's side of the handshake, the first read's.
func tlsGet(addr string, cfg *stdtls.Config) (stdtls.ConnectionState, string, error) {
	c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return stdtls.ConnectionState{}, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", cfg.ServerName)
	b, err := io.ReadAll(c)
	if err != nil {
		return c.ConnectionState(), string(b), err
	}
	resp := string(b)
	if j := strings.LastIndex(resp, "\r\n\r\n"); j >= 0 {
		resp = resp[j+4:]
	} else if resp != "" {
		resp = "(no HTTP response) " + resp
	}
	return c.ConnectionState(), resp, nil
}

// h1TLS is a client configuration for name, trusting roots, that
// offers HTTP/1.1 alone (as tlsGet speaks).
func h1TLS(name string, roots *x509.CertPool) *stdtls.Config {
	return &stdtls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"http/1.1"}}
}

// TestSiteTLSOptions: a site's protocols, ciphers, curves, client_auth
// (trust pool and leaf verifier), key_type and issuer internal with a pki
// CA answer real handshakes by SNI as Caddy's connection and automation
// policies do, and leave the other sites of the listener alone.
func TestSiteTLSOptions(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		clients, other := testca.New(t, "clients"), testca.New(t, "other")
		caFile := writeCertPEM(t, filepath.Join(dir, "clients.pem"), clients.Cert.Raw)
		good, bad := clients.Client(t, "good"), clients.Client(t, "bad")
		stranger := other.Client(t, "stranger")
		leafFile := writeCertPEM(t, filepath.Join(dir, "leaf.pem"), good.Certificate[0])
		keyLog := filepath.Join(dir, "keys.log")
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
	pki {
		ca corp {
			name "Corp"
			root_cn "Corp Root"
		}
	}
}

v13.localhost:%[3]d {
	tls internal {
		protocols tls1.3
	}
	respond "v13"
}

v12.localhost:%[3]d {
	tls internal {
		protocols tls1.2 tls1.2
		ciphers TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
		curves secp384r1
	}
	respond "v12"
}

mtls.localhost:%[3]d {
	tls internal {
		client_auth {
			mode require_and_verify
			trust_pool file %[4]s
		}
	}
	respond "mtls"
}

leaf.localhost:%[3]d {
	tls internal {
		client_auth {
			mode require
			verifier leaf file %[5]s
		}
	}
	respond "leaf"
}

rsa.localhost:%[3]d {
	tls internal {
		key_type rsa2048
	}
	respond "rsa"
}

corp.localhost:%[3]d {
	tls {
		issuer internal {
			ca corp
			lifetime 1d
			sign_with_root
		}
	}
	respond "corp"
}

plain.localhost:%[3]d {
	tls internal
	respond "plain"
}

keys.localhost:%[3]d {
	tls internal {
		insecure_secrets_log %[6]s
	}
	respond "keys"
}
`, backend, storage, port, caFile, leafFile, keyLog)), 0o644)
		start(t, file, Options{})
		roots := localRoots(t, storage)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		expect := func(what string, c *stdtls.Config, want string) stdtls.ConnectionState {
			t.Helper()
			st, body, err := tlsGet(addr, c)
			if err != nil || body != want {
				t.Fatalf("%s: %q, %v; want %q", what, body, err, want)
			}
			return st
		}
		refused := func(what string, c *stdtls.Config) {
			t.Helper()
			// Refused: a handshake error, or (TLS 1.3, where the server
			// checks the client's certificate after the client is done)
			// an alert or a close instead of an answer.
			if _, body, err := tlsGet(addr, c); err == nil && body != "" {
				t.Fatalf("%s: answered %q, want a failed handshake", what, body)
			}
		}

		// protocols tls1.3
		st := expect("v13", h1TLS("v13.localhost", roots), "v13")
		if st.Version != stdtls.VersionTLS13 {
			t.Errorf("v13: version %x", st.Version)
		}
		c := h1TLS("v13.localhost", roots)
		c.MaxVersion = stdtls.VersionTLS12
		refused("v13 with a TLS 1.2 client", c)

		// protocols tls1.2 tls1.2, one cipher, one curve
		st = expect("v12", h1TLS("v12.localhost", roots), "v12")
		if st.Version != stdtls.VersionTLS12 || st.CipherSuite != stdtls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 || st.CurveID != stdtls.CurveP384 {
			t.Errorf("v12: version %x suite %s curve %v", st.Version, stdtls.CipherSuiteName(st.CipherSuite), st.CurveID)
		}
		c = h1TLS("v12.localhost", roots)
		c.MinVersion = stdtls.VersionTLS13
		refused("v12 with a TLS 1.3 client", c)
		c = h1TLS("v12.localhost", roots)
		c.CipherSuites = []uint16{stdtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
		refused("v12 with another cipher", c)
		c = h1TLS("v12.localhost", roots)
		c.CurvePreferences = []stdtls.CurveID{stdtls.X25519}
		refused("v12 with another curve", c)

		// client_auth with a trust pool
		refused("mtls without a certificate", h1TLS("mtls.localhost", roots))
		c = h1TLS("mtls.localhost", roots)
		c.Certificates = []stdtls.Certificate{stranger}
		refused("mtls with a stranger's certificate", c)
		c = h1TLS("mtls.localhost", roots)
		c.Certificates = []stdtls.Certificate{good}
		expect("mtls with a client certificate", c, "mtls")

		// client_auth with the leaf verifier
		c = h1TLS("leaf.localhost", roots)
		c.Certificates = []stdtls.Certificate{good}
		expect("leaf with the listed certificate", c, "leaf")
		c = h1TLS("leaf.localhost", roots)
		c.Certificates = []stdtls.Certificate{bad}
		refused("leaf with another certificate", c)
		refused("leaf without a certificate", h1TLS("leaf.localhost", roots))

		// key_type
		st = expect("rsa", h1TLS("rsa.localhost", roots), "rsa")
		if _, ok := st.PeerCertificates[0].PublicKey.(*rsa.PublicKey); !ok {
			t.Errorf("rsa: key %T", st.PeerCertificates[0].PublicKey)
		}

		// issuer internal { ca corp lifetime 1d sign_with_root }
		corpRoot, err := os.ReadFile(filepath.Join(storage, "pollproxy", "ca", "corp", "root.crt"))
		if err != nil {
			t.Fatal(err)
		}
		corpPool := x509.NewCertPool()
		corpPool.AppendCertsFromPEM(corpRoot)
		c = h1TLS("corp.localhost", roots)
		c.RootCAs = corpPool
		st = expect("corp", c, "corp")
		leaf := st.PeerCertificates[0]
		if leaf.Issuer.CommonName != "Corp Root" || len(st.PeerCertificates) != 1 || leaf.NotAfter.Sub(leaf.NotBefore) > 25*time.Hour {
			t.Errorf("corp: issuer %q, chain of %d, valid %v", leaf.Issuer.CommonName, len(st.PeerCertificates), leaf.NotAfter.Sub(leaf.NotBefore))
		}
		if len(leaf.Issuer.Organization) != 1 || leaf.Issuer.Organization[0] != "Corp" {
			t.Errorf("corp: issuer organization %v", leaf.Issuer.Organization)
		}

		// A site without options: TLS 1.3 by default, TLS 1.2 too, no
		// client certificate asked.
		st = expect("plain", h1TLS("plain.localhost", roots), "plain")
		c = h1TLS("plain.localhost", roots)
		c.MaxVersion = stdtls.VersionTLS12
		expect("plain over TLS 1.2", c, "plain")
		if st.Version != stdtls.VersionTLS13 {
			t.Errorf("plain: version %x", st.Version)
		}

		// insecure_secrets_log: this site's handshakes, and only its,
		// write their secrets in the NSS key log format.
		if b, _ := os.ReadFile(keyLog); len(b) != 0 {
			t.Fatalf("key log written by other sites' handshakes:\n%s", b)
		}
		var lines strings.Builder
		c = h1TLS("keys.localhost", roots)
		c.KeyLogWriter = &lines
		expect("keys", c, "keys")
		b, _ := os.ReadFile(keyLog)
		if lines.Len() == 0 || !strings.Contains(string(b), strings.Split(lines.String(), "\n")[0]) {
			t.Errorf("key log %q lacks the client's own %q", b, lines.String())
		}
	})
}

// TestTLSGlobalOptions: local_certs gives a public name a local CA
// certificate, of key_type and cert_lifetime, from the CA pki names;
// default_sni answers a ClientHello without SNI and fallback_sni one
// whose SNI matches no certificate.
func TestTLSGlobalOptions(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
	local_certs
	skip_install_trust
	key_type p384
	cert_lifetime 2d
	default_sni example.com
	fallback_sni example.com
	ocsp_stapling off
	renew_interval 30m
	storage_clean_interval 7d
	persist_config off
	debug
	shutdown_delay 100ms
	pki {
		ca {
			name "Example Dev"
		}
	}
}

example.com:%d {
	respond "ex"
}
`, backend, storage, port)), 0o644)
		r := start(t, file, Options{})
		// debug: the instance's log, made for INFO, carries DEBUG too.
		if !strings.Contains(r.log.String(), "level=DEBUG") {
			t.Error("debug: no DEBUG record in the instance's log")
		}
		roots := localRoots(t, storage)
		addr := fmt.Sprintf("127.0.0.1:%d", port)

		st, body, err := tlsGet(addr, h1TLS("example.com", roots))
		if err != nil || body != "ex" {
			t.Fatalf("example.com: %q %v", body, err)
		}
		leaf := st.PeerCertificates[0]
		if k, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P384() {
			t.Errorf("key %T, want P-384", leaf.PublicKey)
		}
		if life := leaf.NotAfter.Sub(leaf.NotBefore); life < 48*time.Hour || life > 49*time.Hour {
			t.Errorf("lifetime %v, want 2d (and the backdating)", life)
		}
		if len(leaf.Issuer.Organization) != 1 || leaf.Issuer.Organization[0] != "Example Dev" {
			t.Errorf("issuer %v", leaf.Issuer)
		}
		for _, sni := range []string{"", "nothing.test"} {
			// No SNI: the client verifies nothing by name; the
			// certificate's names are checked here.
			st, _, err := tlsGet(addr, &stdtls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatalf("SNI %q: %v", sni, err)
			}
			if got := st.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != "example.com" {
				t.Errorf("SNI %q: certificate for %v, want example.com", sni, got)
			}
		}

		// shutdown_delay: a stop waits before draining.
		if err := r.in.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.log.String(), `msg="shutdown delayed" delay=100ms`) {
			t.Error("shutdown_delay: no delay before the drain")
		}
	})
}

// TestTLSOptionsReload: a reload that changes a site's connection policy
// applies to the handshakes after it; one that fails keeps the running
// policy.
func TestTLSOptionsReload(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		file := filepath.Join(dir, "Caddyfile")
		write := func(protocols, extra string) {
			os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
}

site.localhost:%d {
	tls internal {
		protocols %s
	}
	respond "site"
}
%s`, backend, storage, port, protocols, extra)), 0o644)
		}
		write("tls1.3", "")
		r := start(t, file, Options{})
		roots := localRoots(t, storage)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		v12 := &stdtls.Config{ServerName: "site.localhost", RootCAs: roots, MaxVersion: stdtls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		if _, body, err := tlsGet(addr, v12); err == nil {
			t.Fatalf("TLS 1.2 before the reload: answered %q", body)
		}
		write("tls1.2", "")
		if err := r.in.Reload(); err != nil {
			t.Fatal(err)
		}
		if _, body, err := tlsGet(addr, v12); err != nil || body != "site" {
			t.Fatalf("TLS 1.2 after the reload: %q %v", body, err)
		}
		// A reload that fails after its policies were made (a listen
		// address taken by another socket) keeps the running ones.
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		write("tls1.3", fmt.Sprintf("\n%s {\n\ttls internal\n\trespond \"taken\"\n}\n", taken.Addr()))
		if err := r.in.Reload(); err == nil {
			t.Fatal("a reload onto a taken port succeeded")
		}
		if _, body, err := tlsGet(addr, v12); err != nil || body != "site" {
			t.Fatalf("TLS 1.2 after a failed reload: %q %v", body, err)
		}
	})
}

// TestTLSLoad: tls { load DIR } serves the PEM bundles of DIR for their
// names, and the site's other names get their certificates as without
// load (the local CA here), as in Caddy.
func TestTLSLoad(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		cert, err := pptls.SelfSigned([]string{"loaded.test"})
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, _ := pptls.EncodePEM(cert)
		certs := filepath.Join(dir, "certs", "sub")
		os.MkdirAll(certs, 0o700)
		os.WriteFile(filepath.Join(certs, "loaded.PEM"), append(certPEM, keyPEM...), 0o600)
		os.WriteFile(filepath.Join(certs, "notes.txt"), []byte("not a certificate"), 0o600)
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
}

loaded.test:%[3]d, other.localhost:%[3]d {
	tls {
		load %[4]s
	}
	respond "{host}"
}
`, backend, storage, port, filepath.Join(dir, "certs"))), 0o644)
		r := start(t, file, Options{})
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		loadedRoots := x509.NewCertPool()
		loadedRoots.AddCert(cert.Leaf)
		if _, body, err := tlsGet(addr, h1TLS("loaded.test", loadedRoots)); err != nil || body != "loaded.test" {
			t.Fatalf("loaded.test: %q %v", body, err)
		}
		roots := localRoots(t, storage)
		if _, body, err := tlsGet(addr, h1TLS("other.localhost", roots)); err != nil || body != "other.localhost" {
			t.Fatalf("other.localhost: %q %v", body, err)
		}
		if strings.Contains(r.log.String(), "identifier=loaded.test") {
			t.Fatal("a certificate was obtained for the loaded name")
		}
	})
}

// TestCertIssuerGlobal: cert_issuer gives the sites that name no issuer
// their issuers; a site's own tls internal keeps the default ones.
func TestCertIssuerGlobal(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		dir := t.TempDir()
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
	cert_issuer internal {
		lifetime 1d
	}
}

short.localhost:%[3]d {
	respond "short"
}

default.localhost:%[3]d {
	tls internal
	respond "default"
}
`, backend, storage, port)), 0o644)
		start(t, file, Options{})
		roots := localRoots(t, storage)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		for name, want := range map[string]time.Duration{"short.localhost": 24 * time.Hour, "default.localhost": 7 * 24 * time.Hour} {
			st, body, err := tlsGet(addr, h1TLS(name, roots))
			if err != nil || body+".localhost" != name {
				t.Fatalf("%s: %q %v", name, body, err)
			}
			leaf := st.PeerCertificates[0]
			if life := leaf.NotAfter.Sub(leaf.NotBefore); life < want || life > want+time.Hour {
				t.Errorf("%s: lifetime %v, want %v", name, life, want)
			}
		}
	})
}
