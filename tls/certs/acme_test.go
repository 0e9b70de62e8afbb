package certs

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/tls/acmetest"
)

// TestManagerACMEPebble obtains certificates from Pebble over real HTTP-01
// and TLS-ALPN-01 validations of "localhost" (Pebble resolves it to the
// loopback address and connects to the challenge ports, where the test
// serves HTTPChallengeHandler and TLSConfig), then serves them and
// verifies the chain against Pebble's issuing root.
func TestManagerACMEPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ACME test CA")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	p := acmetest.Start(t, ctx)

	for _, challenge := range []string{"http-01", "tls-alpn-01"} {
		t.Run(challenge, func(t *testing.T) {
			cfg := Config{
				StorageDir:  t.TempDir(),
				Email:       "dev@pollproxy.test",
				CA:          p.DirURL,
				CARoots:     p.TLSRoots,
				HTTPPort:    p.HTTPPort,
				TLSALPNPort: p.TLSPort,
			}
			if challenge == "http-01" {
				cfg.DisableTLSALPNChallenge = true
			} else {
				cfg.DisableHTTPChallenge = true
			}
			c := newTestManager(t, cfg)

			// pollproxy's own listeners answer the challenges: an HTTP
			// one with HTTPChallengeHandler, a TLS one with TLSConfig
			// (acme-tls/1). certmagic sees the ports taken and leaves
			// them to us.
			var answered sync.Map
			if challenge == "http-01" {
				ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.HTTPPort))
				if err != nil {
					t.Fatal(err)
				}
				srv := &http.Server{Handler: c.HTTPChallengeHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "not a challenge", http.StatusNotFound)
				})), ConnState: func(net.Conn, http.ConnState) { answered.Store("http", true) }}
				go srv.Serve(ln)
				t.Cleanup(func() { srv.Close() })
			} else {
				tcfg := c.TLSConfig()
				inner := tcfg.GetCertificate
				tcfg.GetCertificate = func(h *stdtls.ClientHelloInfo) (*stdtls.Certificate, error) {
					if len(h.SupportedProtos) == 1 && h.SupportedProtos[0] == ACMETLSALPNProtocol {
						answered.Store("tls", true)
					}
					return inner(h)
				}
				ln, err := stdtls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.TLSPort), tcfg)
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						conn, err := ln.Accept()
						if err != nil {
							return
						}
						go func() {
							defer conn.Close()
							conn.SetDeadline(time.Now().Add(5 * time.Second))
							conn.(*stdtls.Conn).Handshake()
						}()
					}
				}()
				t.Cleanup(func() { ln.Close() })
			}

			start := time.Now()
			if err := c.AddACME(ctx, "localhost"); err != nil {
				t.Fatalf("AddACME: %v", err)
			}
			t.Logf("%s: certificate obtained in %v", challenge, time.Since(start))
			if _, ok := answered.Load(map[string]string{"http-01": "http", "tls-alpn-01": "tls"}[challenge]); !ok {
				t.Fatalf("the test's %s listener was never asked: validated elsewhere?", challenge)
			}

			if logs := p.Logs.String(); strings.Contains(logs, "Skipping real validation") ||
				strings.Contains(logs, "always returns valid") {
				t.Fatal("pebble skipped validation")
			}

			addr := serveTLS(t, c.TLSConfig())
			st, err := dialTLS(addr, &stdtls.Config{
				ServerName: "localhost",
				RootCAs:    p.IssuingRoot(t),
				NextProtos: []string{"h2", "http/1.1"},
			})
			if err != nil {
				t.Fatalf("handshake with the ACME certificate: %v", err)
			}
			if st.NegotiatedProtocol != "h2" || len(st.VerifiedChains) == 0 {
				t.Fatalf("ALPN %q, %d verified chains", st.NegotiatedProtocol, len(st.VerifiedChains))
			}
			leaf := st.PeerCertificates[0]
			if leaf.Issuer.CommonName == "" || !strings.Contains(strings.ToLower(leaf.Issuer.CommonName), "pebble") {
				t.Fatalf("leaf issued by %q, not pebble", leaf.Issuer.CommonName)
			}

			// A second instance over the same storage serves the stored
			// certificate without a new order.
			c2 := newTestManager(t, Config{StorageDir: cfg.StorageDir, CA: p.DirURL, CARoots: p.TLSRoots})
			if err := c2.AddACME(ctx, "localhost"); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(certFor(t, c2, "localhost").Certificate[0], certFor(t, c, "localhost").Certificate[0]) {
				t.Fatal("second instance over the same storage has another certificate")
			}
		})
	}
}
