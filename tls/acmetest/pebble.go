package acmetest

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

	"github.com/pollproxy/pollproxy/internal/testenv"
)

// Pebble is a running Pebble, the ACME test CA: its directory URL, the
// roots for its own HTTPS, and the ports it validates challenges on.
type Pebble struct {
	DirURL    string
	MgmtURL   string
	TLSRoots  *x509.CertPool // pebble's HTTPS (test/certs/pebble.minica.pem)
	HTTPPort  int
	TLSPort   int
	Logs      *Log
	clientTLS *http.Client
}

// Log is Pebble's output.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends to the output.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is the output so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start builds Pebble (the module's tool dependency) and runs it on
// loopback with real validation: it resolves the names it validates with
// the system resolver and connects to them on httpPort and tlsPort.
func Start(t testing.TB, ctx context.Context) *Pebble {
	t.Helper()
	// go list -m names no directory for a module not yet downloaded (a
	// fresh clone), so the module is downloaded first: the version go.mod
	// pins, through the module proxy, as go build would fetch it.
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/letsencrypt/pebble/v2").Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		testenv.Missing(t, fmt.Sprintf("pebble's module (a tool dependency in go.mod) could not be downloaded: %v %s", err, mod.Error))
	}
	modDir := mod.Dir
	bin := filepath.Join(t.TempDir(), "pebble")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pebble: %v\n%s", err, msg)
	}

	minica, err := os.ReadFile(filepath.Join(modDir, "test", "certs", "pebble.minica.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Pebble{TLSRoots: x509.NewCertPool(), Logs: &Log{}}
	if !p.TLSRoots.AppendCertsFromPEM(minica) {
		t.Fatal("pebble.minica.pem holds no certificate")
	}
	listen, mgmt := freePort(t), freePort(t)
	p.HTTPPort, p.TLSPort = freePort(t), freePort(t)
	p.DirURL = fmt.Sprintf("https://127.0.0.1:%d/dir", listen)
	p.MgmtURL = fmt.Sprintf("https://127.0.0.1:%d", mgmt)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", listen),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", mgmt),
		"certificate":                    filepath.Join(modDir, "test", "certs", "localhost", "cert.pem"),
		"privateKey":                     filepath.Join(modDir, "test", "certs", "localhost", "key.pem"),
		"httpPort":                       p.HTTPPort,
		"tlsPort":                        p.TLSPort,
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
	cmd.Stdout, cmd.Stderr = p.Logs, p.Logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pebble: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		cmd.Process.Kill() // by its PID
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble (pid %d) output:\n%s", pid, p.Logs.String())
		}
	})

	p.clientTLS = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &stdtls.Config{RootCAs: p.TLSRoots}},
	}
	for {
		resp, err := p.clientTLS.Get(p.DirURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pebble did not come up: %v\n%s", err, p.Logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

// IssuingRoot fetches the root Pebble signs certificates under (it makes a
// new one at every start).
func (p *Pebble) IssuingRoot(t testing.TB) *x509.CertPool {
	t.Helper()
	resp, err := p.clientTLS.Get(p.MgmtURL + "/roots/0")
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

// Orders returns how many orders Pebble has accepted so far.
func (p *Pebble) Orders() int { return strings.Count(p.Logs.String(), "Added order") }
