package tls

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pebble is a running Pebble, the ACME test CA: its directory URL, the
// roots for its own HTTPS, and the ports it validates challenges on.
type pebble struct {
	dirURL    string
	mgmtURL   string
	tlsRoots  *x509.CertPool // pebble's HTTPS (test/certs/pebble.minica.pem)
	httpPort  int
	tlsPort   int
	logs      *pebbleLog
	clientTLS *http.Client
}

type pebbleLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *pebbleLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *pebbleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPebble builds Pebble (the module's tool dependency) and runs it on
// loopback with real validation: it resolves the names it validates with
// the system resolver and connects to them on httpPort and tlsPort.
func startPebble(t *testing.T, ctx context.Context) *pebble {
	t.Helper()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/letsencrypt/pebble/v2").Output()
	modDir := strings.TrimSpace(string(out))
	if err != nil || modDir == "" {
		t.Skipf("pebble module not available (go list: %v); it is a tool dependency in go.mod", err)
	}
	bin := filepath.Join(t.TempDir(), "pebble")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build pebble: %v\n%s", err, msg)
	}

	minica, err := os.ReadFile(filepath.Join(modDir, "test", "certs", "pebble.minica.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p := &pebble{tlsRoots: x509.NewCertPool(), logs: &pebbleLog{}}
	if !p.tlsRoots.AppendCertsFromPEM(minica) {
		t.Fatal("pebble.minica.pem holds no certificate")
	}
	listen, mgmt := freePort(t), freePort(t)
	p.httpPort, p.tlsPort = freePort(t), freePort(t)
	p.dirURL = fmt.Sprintf("https://127.0.0.1:%d/dir", listen)
	p.mgmtURL = fmt.Sprintf("https://127.0.0.1:%d", mgmt)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", listen),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", mgmt),
		"certificate":                    filepath.Join(modDir, "test", "certs", "localhost", "cert.pem"),
		"privateKey":                     filepath.Join(modDir, "test", "certs", "localhost", "key.pem"),
		"httpPort":                       p.httpPort,
		"tlsPort":                        p.tlsPort,
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
		"retryAfter":                     map[string]int{"authz": 1, "order": 1},
		"keyAlgorithm":                   "ecdsa",
	}}
	cfgJSON, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(t.TempDir(), "pebble.json")
	if err := os.WriteFile(cfgFile, cfgJSON, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "-config", cfgFile, "-strict")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PEBBLE_") { // PEBBLE_VA_ALWAYS_VALID above all
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"PEBBLE_VA_NOSLEEP=1",      // validate at once
		"PEBBLE_WFE_NONCEREJECT=0", // no random badNonce errors
		"PEBBLE_AUTHZREUSE=0",      // every order validates anew
		"PEBBLE_CHAIN_LENGTH=2",    // root and one intermediate
	)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pebble: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		cmd.Process.Kill() // by its PID
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble (pid %d) output:\n%s", pid, p.logs.String())
		}
	})

	p.clientTLS = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &stdtls.Config{RootCAs: p.tlsRoots}},
	}
	for {
		resp, err := p.clientTLS.Get(p.dirURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pebble did not come up: %v\n%s", err, p.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

// issuingRoot fetches the root Pebble signs certificates under (it makes a
// new one at every start).
func (p *pebble) issuingRoot(t *testing.T) *x509.CertPool {
	t.Helper()
	resp, err := p.clientTLS.Get(p.mgmtURL + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pebble /roots/0: %d %v", resp.StatusCode, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(body) {
		t.Fatalf("pebble /roots/0 is not PEM: %q", body)
	}
	return pool
}

// TestCertsACMEPebble obtains certificates from Pebble over real HTTP-01
// and TLS-ALPN-01 validations of "localhost" (Pebble resolves it to the
// loopback address and connects to the challenge ports, where the test
// serves HTTPChallengeHandler and TLSConfig), then serves them and
// verifies the chain against Pebble's issuing root.
func TestCertsACMEPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ACME test CA")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	p := startPebble(t, ctx)

	for _, challenge := range []string{"http-01", "tls-alpn-01"} {
		t.Run(challenge, func(t *testing.T) {
			cfg := CertConfig{
				StorageDir:  t.TempDir(),
				Email:       "dev@pollproxy.test",
				CA:          p.dirURL,
				CARoots:     p.tlsRoots,
				HTTPPort:    p.httpPort,
				TLSALPNPort: p.tlsPort,
			}
			if challenge == "http-01" {
				cfg.DisableTLSALPNChallenge = true
			} else {
				cfg.DisableHTTPChallenge = true
			}
			c := newTestCerts(t, cfg)

			// pollproxy's own listeners answer the challenges: an HTTP
			// one with HTTPChallengeHandler, a TLS one with TLSConfig
			// (acme-tls/1). certmagic sees the ports taken and leaves
			// them to us.
			var answered sync.Map
			if challenge == "http-01" {
				ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.httpPort))
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
				ln, err := stdtls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.tlsPort), tcfg)
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

			if logs := p.logs.String(); strings.Contains(logs, "Skipping real validation") ||
				strings.Contains(logs, "always returns valid") {
				t.Fatal("pebble skipped validation")
			}

			addr := serveTLS(t, c.TLSConfig())
			st, err := dialTLS(addr, &stdtls.Config{
				ServerName: "localhost",
				RootCAs:    p.issuingRoot(t),
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
			c2 := newTestCerts(t, CertConfig{StorageDir: cfg.StorageDir, CA: p.dirURL, CARoots: p.tlsRoots})
			if err := c2.AddACME(ctx, "localhost"); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(certFor(t, c2, "localhost").Certificate[0], certFor(t, c, "localhost").Certificate[0]) {
				t.Fatal("second instance over the same storage has another certificate")
			}
		})
	}
}
