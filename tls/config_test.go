package tls

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestServerConfig(t *testing.T) {
	cfg := ServerConfig(nil)
	if cfg.MinVersion != stdtls.VersionTLS12 {
		t.Fatalf("MinVersion %x", cfg.MinVersion)
	}
	if !slices.Equal(cfg.NextProtos, []string{"h2", "http/1.1"}) {
		t.Fatalf("NextProtos %q", cfg.NextProtos)
	}
	if cfg.SessionTicketsDisabled {
		t.Fatal("session tickets disabled")
	}
	if len(cfg.CipherSuites) == 0 {
		t.Fatal("no TLS 1.2 cipher suites")
	}
	for _, id := range cfg.CipherSuites {
		name := stdtls.CipherSuiteName(id)
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("suite %s is not ECDHE+AEAD", name)
		}
		for _, bad := range stdtls.InsecureCipherSuites() {
			if bad.ID == id {
				t.Errorf("insecure suite %s", name)
			}
		}
	}
	// Configs are independent.
	cfg.CipherSuites[0] = 0
	if ServerConfig(nil).CipherSuites[0] == 0 {
		t.Fatal("ServerConfig shares its cipher suite slice")
	}
}

func TestSelfSigned(t *testing.T) {
	cert, err := SelfSigned([]string{"Example.test", "example.test:8443", "10.1.2.3", "[2001:db8::1]:443", ""})
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if !slices.Equal(leaf.DNSNames, []string{"localhost", "example.test"}) {
		t.Fatalf("DNS names %q", leaf.DNSNames)
	}
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, []string{"127.0.0.1", "::1", "10.1.2.3", "2001:db8::1"}) {
		t.Fatalf("IP addresses %q", ips)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Fatalf("key algorithm %v", leaf.PublicKeyAlgorithm)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, name := range []string{"localhost", "example.test", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("verify %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.test", Roots: roots}); err == nil {
		t.Error("verified for a name it does not hold")
	}
	if d := time.Until(leaf.NotAfter); d < selfSignedValidity-2*time.Hour || d > selfSignedValidity {
		t.Errorf("valid for %v", d)
	}
}

func TestLoadKeyPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := testCert(t)
	if err := WritePEM(cert, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	got, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Leaf.Equal(cert.Leaf) {
		t.Fatal("loaded a different certificate")
	}

	missing := filepath.Join(dir, "missing.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not PEM at all\n"), 0o600)
	other, err := SelfSigned(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey := filepath.Join(dir, "other-cert.pem"), filepath.Join(dir, "other-key.pem")
	if err := WritePEM(other, otherCert, otherKey); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cert, key string
		names     []string
	}{
		{missing, keyFile, []string{missing}},
		{certFile, missing, []string{missing}},
		{garbage, keyFile, []string{garbage}},
		{certFile, garbage, []string{garbage}},
		{keyFile, keyFile, []string{keyFile}}, // a key where the certificate should be
		{certFile, otherKey, []string{certFile, otherKey}},
	} {
		_, err := LoadKeyPair(tc.cert, tc.key)
		if err == nil {
			t.Errorf("LoadKeyPair(%s, %s) succeeded", tc.cert, tc.key)
			continue
		}
		for _, n := range tc.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("LoadKeyPair(%s, %s) error %q does not name %s", tc.cert, tc.key, err, n)
			}
		}
	}
	if err := WritePEM(cert, filepath.Join(missing, "x"), keyFile); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("WritePEM into a missing directory: %v", err)
	}
}

func TestSessionAddrs(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 5555}
	var seen string
	cfg := serverConfig(t).Clone()
	cfg.GetConfigForClient = func(h *stdtls.ClientHelloInfo) (*stdtls.Config, error) {
		seen = h.Conn.RemoteAddr().String()
		if h.Context().Done() == nil {
			t.Error("certificate callbacks get no cancellable context")
		}
		return nil, nil
	}
	pool := newPool(t, 2, 2, 5*time.Second)
	s := NewServerSession(cfg, nil, remote)
	c := newClientSession(clientConfig(t, stdtls.VersionTLS13, "h2"))
	p2 := &pair{t: t, c: c, s: s, wake: make(chan struct{}, 1), buf: make([]byte, 1<<14)}
	notify := func() {
		select {
		case p2.wake <- struct{}{}:
		default:
		}
	}
	if err := pool.Start(s, notify); err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(c, notify); err != nil {
		t.Fatal(err)
	}
	if err := p2.handshake(); err != nil {
		t.Fatal(err)
	}
	if seen != remote.String() {
		t.Fatalf("callback saw remote address %q", seen)
	}
}
