package servertest

import (
	stdtls "crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/stream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// Env is a running group and server.
type Env struct {
	Group  *netpoll.Group
	Server *server.Server
	// Addr is the server's "127.0.0.1:port".
	Addr string
	// Roots trusts the server's certificate (issued for localhost).
	Roots *x509.CertPool
	// CertFile is that certificate in PEM, for external clients (curl).
	CertFile string
}

// Start runs loops loops over backend ("" for auto) and a TLS server on
// 127.0.0.1 serving what newHandler returns; edit, when set, adjusts the
// server's configuration first.
func Start(t testing.TB, backend string, loops int, newHandler func(*netpoll.Loop) stream.Handler, edit func(*server.Config)) *Env {
	t.Helper()
	cert, err := pptls.SelfSigned(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile := filepath.Join(dir, "cert.pem")
	if err := pptls.WritePEM(cert, certFile, filepath.Join(dir, "key.pem")); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	var backends []string
	if backend != "" {
		backends = []string{backend}
	}
	g, err := netpoll.NewGroup(loops, backends)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	cfg := server.Config{
		Addr:       "127.0.0.1:0",
		TLS:        pptls.ServerConfig([]stdtls.Certificate{cert}),
		NewHandler: newHandler,
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(g, cfg)
	if err != nil {
		g.Stop()
		g.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		if err := g.Stop(); err != nil {
			t.Errorf("group: %v", err)
		}
		g.Close()
	})
	return &Env{Group: g, Server: srv, Addr: srv.Addr().String(), Roots: roots, CertFile: certFile}
}

// TLSConfig is a client configuration that trusts the server and offers
// the given ALPN protocols.
func (e *Env) TLSConfig(protos ...string) *stdtls.Config {
	return &stdtls.Config{RootCAs: e.Roots, ServerName: "localhost", NextProtos: protos}
}

// ShortBackends is the backends a suite runs on: all of them, or under
// -short the first alone. It is for a suite whose subject is not the
// poller and whose cost is per backend: a browser it starts, or seconds of
// load a statistic needs. The package's other suites still run on every
// backend under -short, and the full suite runs this one on all.
func ShortBackends(backends []string) []string {
	if testing.Short() && len(backends) > 1 {
		return backends[:1]
	}
	return backends
}
