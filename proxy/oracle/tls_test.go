package oracle

import (
	stdtls "crypto/tls"
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
)

// tlsOracleFile is the Caddyfile both servers run: sites with the local
// CA's certificates and the tls options whose effects a client sees.
const tlsOracleFile = `{
	admin off
	http_port HTTPPORT
	auto_https disable_redirects
	skip_install_trust
	storage file_system STORAGE
}

v13.localhost:PORT {
	tls internal {
		protocols tls1.3
	}
	respond "v13"
}

v12.localhost:PORT {
	tls internal {
		protocols tls1.2 tls1.2
		ciphers TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
		curves secp384r1 secp256r1
	}
	respond "v12"
}

mtls.localhost:PORT {
	tls internal {
		client_auth {
			mode require_and_verify
			trust_pool file CAFILE
		}
	}
	respond "mtls"
}

given.localhost:PORT {
	tls internal {
		client_auth {
			mode verify_if_given
			trust_pool file CAFILE
		}
	}
	respond "given"
}

leaf.localhost:PORT {
	tls internal {
		client_auth {
			verifier leaf file LEAFFILE
		}
	}
	respond "leaf"
}

alpn.localhost:PORT {
	tls internal {
		alpn http/1.1
	}
	respond "alpn"
}

plain.localhost:PORT {
	tls internal
	respond "plain"
}
`

// tlsProbe is one handshake (and request) a client makes.
type tlsProbe struct {
	name string
	sni  string
	edit func(*stdtls.Config)
}

// tlsOutcome is what a client saw: the protocol, suite, curve and ALPN
// of the handshake and the response body, or that it was refused.
func tlsOutcome(addr string, p tlsProbe) string {
	cfg := &stdtls.Config{ServerName: p.sni, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}
	if p.edit != nil {
		p.edit(cfg)
	}
	c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "refused"
	}
	defer c.Close()
	st := c.ConnectionState()
	shape := fmt.Sprintf("%s %s %s alpn=%q", versionName(st.Version), stdtls.CipherSuiteName(st.CipherSuite), st.CurveID, st.NegotiatedProtocol)
	if st.NegotiatedProtocol == "h2" {
		// The handshake is what is compared; HTTP/2 answers are the
		// main oracle's.
		return shape
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", p.sni)
	b, err := io.ReadAll(c)
	resp := string(b)
	if i := strings.LastIndex(resp, "\r\n\r\n"); i >= 0 {
		resp = resp[i+4:]
	}
	if err != nil || resp == "" {
		// TLS 1.3: the server checks a client certificate after the
		// client's side of the handshake, and answers with an alert.
		return "refused"
	}
	return shape + " body=" + resp
}

func versionName(v uint16) string {
	switch v {
	case stdtls.VersionTLS12:
		return "tls1.2"
	case stdtls.VersionTLS13:
		return "tls1.3"
	}
	return fmt.Sprintf("0x%x", v)
}

// TestOracleTLS: the handshakes of sites with protocols, ciphers,
// curves, alpn and client_auth (a trust pool in two modes, the leaf
// verifier) end as Caddy's do, for clients offering other versions,
// suites, curves and certificates.
func TestOracleTLS(t *testing.T) {
	bin := buildCaddy(t)
	dir := t.TempDir()
	clients, strangers := testca.New(t, "oracle clients"), testca.New(t, "strangers")
	caFile := filepath.Join(dir, "clients.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clients.Cert.Raw}), 0o644)
	good := clients.Client(t, "good")
	bad := clients.Client(t, "bad")
	stranger := strangers.Client(t, "stranger")
	leafFile := filepath.Join(dir, "leaf.pem")
	os.WriteFile(leafFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: good.Certificate[0]}), 0o644)

	with := func(c stdtls.Certificate) func(*stdtls.Config) {
		return func(cfg *stdtls.Config) { cfg.Certificates = []stdtls.Certificate{c} }
	}
	h1 := func(cfg *stdtls.Config) { cfg.NextProtos = []string{"http/1.1"} }
	and := func(fs ...func(*stdtls.Config)) func(*stdtls.Config) {
		return func(cfg *stdtls.Config) {
			for _, f := range fs {
				f(cfg)
			}
		}
	}
	probes := []tlsProbe{
		{"v13 default", "v13.localhost", h1},
		{"v13 tls1.2 client", "v13.localhost", and(h1, func(c *stdtls.Config) { c.MaxVersion = stdtls.VersionTLS12 })},
		{"v12 default", "v12.localhost", h1},
		{"v12 tls1.3 client", "v12.localhost", and(h1, func(c *stdtls.Config) { c.MinVersion = stdtls.VersionTLS13 })},
		{"v12 other suite", "v12.localhost", and(h1, func(c *stdtls.Config) {
			c.CipherSuites = []uint16{stdtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
		})},
		{"v12 second suite", "v12.localhost", and(h1, func(c *stdtls.Config) {
			c.CipherSuites = []uint16{stdtls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
		})},
		{"v12 x25519 client", "v12.localhost", and(h1, func(c *stdtls.Config) { c.CurvePreferences = []stdtls.CurveID{stdtls.X25519} })},
		{"v12 p256 client", "v12.localhost", and(h1, func(c *stdtls.Config) { c.CurvePreferences = []stdtls.CurveID{stdtls.CurveP256} })},
		{"mtls none", "mtls.localhost", h1},
		{"mtls good", "mtls.localhost", and(h1, with(good))},
		{"mtls stranger", "mtls.localhost", and(h1, with(stranger))},
		{"given none", "given.localhost", h1},
		{"given good", "given.localhost", and(h1, with(good))},
		{"given stranger", "given.localhost", and(h1, with(stranger))},
		{"leaf good", "leaf.localhost", and(h1, with(good))},
		{"leaf bad", "leaf.localhost", and(h1, with(bad))},
		{"leaf none", "leaf.localhost", h1},
		{"alpn h2 offered", "alpn.localhost", nil},
		{"alpn h2 only", "alpn.localhost", func(c *stdtls.Config) { c.NextProtos = []string{"h2"} }},
		{"plain default", "plain.localhost", nil},
		{"plain tls1.2", "plain.localhost", and(h1, func(c *stdtls.Config) { c.MaxVersion = stdtls.VersionTLS12 })},
		{"plain with a certificate", "plain.localhost", and(h1, with(good))},
		{"plain p384 client", "plain.localhost", and(h1, func(c *stdtls.Config) { c.CurvePreferences = []stdtls.CurveID{stdtls.CurveP384} })},
		{"plain tls1.2 p521 client", "plain.localhost", and(h1, func(c *stdtls.Config) {
			c.MaxVersion = stdtls.VersionTLS12
			c.CurvePreferences = []stdtls.CurveID{stdtls.CurveP521}
		})},
		{"plain tls1.2 cbc client", "plain.localhost", and(h1, func(c *stdtls.Config) {
			c.MaxVersion = stdtls.VersionTLS12
			c.CipherSuites = []uint16{stdtls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
		})},
	}

	caddyfile := func(port, httpPort int, storage string) string {
		return strings.NewReplacer("HTTPPORT", fmt.Sprint(httpPort), "PORT", fmt.Sprint(port),
			"STORAGE", storage, "CAFILE", caFile, "LEAFFILE", leafFile).Replace(tlsOracleFile)
	}
	ready := func(addr string, exited <-chan error) {
		t.Helper()
		untilAnswers(t, exited, "handshake", func() bool {
			return !strings.HasPrefix(tlsOutcome(addr, tlsProbe{"ready", "plain.localhost", nil}), "refused")
		})
	}

	// Caddy.
	port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
	_, exited, stop := startCaddy(t, bin, caddyfile(port, httpPort, "STORAGE"))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ready(addr, exited)
	want := map[string]string{}
	for _, p := range probes {
		want[p.name] = tlsOutcome(addr, p)
	}
	stop()

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
		in, _ := startPollproxy(t, backend, caddyfile(port, httpPort, "STORAGE"))
		defer in.Close()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ready(addr, nil)
		for _, p := range probes {
			if got := tlsOutcome(addr, p); got != want[p.name] {
				t.Errorf("%s: pollproxy %q, Caddy %q", p.name, got, want[p.name])
			}
		}
	})
}
