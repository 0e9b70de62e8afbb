package proxy_test

import (
	"bytes"
	stdtls "crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// grpcInterop is grpc-go's interop client and server, built once per
// test binary from the version pinned in tools/grpc/go.mod: a module of
// its own, so its dependencies never move the product's.
var grpcInterop struct {
	once           sync.Once
	dir            string
	client, server string
	err            error
	out            []byte
}

func buildGRPCInterop(t *testing.T) (client, server string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds grpc-go's interop programs")
	}
	g := &grpcInterop
	g.once.Do(func() {
		modfile, err := filepath.Abs("../tools/grpc/go.mod")
		if err != nil {
			g.err = err
			return
		}
		// Not t.TempDir: the programs outlive the first test that builds them.
		if g.dir, g.err = os.MkdirTemp("", "pollproxy-grpc-interop"); g.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-modfile="+modfile, "-o", g.dir+string(filepath.Separator),
			"google.golang.org/grpc/interop/client", "google.golang.org/grpc/interop/server")
		cmd.Dir = filepath.Dir(modfile)
		g.out, g.err = cmd.CombinedOutput()
		g.client, g.server = filepath.Join(g.dir, "client"), filepath.Join(g.dir, "server")
	})
	if g.err != nil {
		t.Fatalf("building grpc-go's interop programs (tools/grpc/go.mod): %v\n%s", g.err, g.out)
	}
	return g.client, g.server
}

// removeGRPCInterop removes the built programs; TestGRPCInterop calls it
// once every backend ran.
func removeGRPCInterop() {
	if grpcInterop.dir != "" {
		os.RemoveAll(grpcInterop.dir)
	}
}

// grpcCases are the interop cases that go through a proxy: every RPC
// shape, metadata and trailers, status codes, cancellation both ways
// and deadlines.
var grpcCases = []string{
	"empty_unary", "large_unary", "client_streaming", "server_streaming", "ping_pong",
	"empty_stream", "custom_metadata", "status_code_and_message", "special_status_message",
	"unimplemented_method", "cancel_after_begin", "cancel_after_first_response",
	"timeout_on_sleeping_server",
}

// startInteropServer runs grpc-go's interop server on a free loopback
// port, over TLS with certFile and keyFile when they are set, and
// returns its address once it accepts connections.
func startInteropServer(t *testing.T, bin, certFile, keyFile string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"-port", port}
	if certFile != "" {
		args = append(args, "-use_tls", "-tls_cert_file", certFile, "-tls_key_file", keyFile)
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if i == 200 {
			t.Fatalf("the interop server never listened on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGRPCInterop runs grpc-go's interop cases through pollproxy: the
// client over TLS and h2 to pollproxy, pollproxy to the interop server
// over h2c and over TLS with h2 by ALPN, on every backend.
func TestGRPCInterop(t *testing.T) {
	client, server := buildGRPCInterop(t)
	defer removeGRPCInterop()
	ca := newTestCA(t, "origin CA")
	certFile, keyFile := writePEM(t, ca.issue(t, "origin", []string{"127.0.0.1"}, time.Now().Add(time.Hour), false))
	h2cAddr := startInteropServer(t, server, "", "")
	tlsAddr := startInteropServer(t, server, certFile, keyFile)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, origin := range []struct {
			name string
			cfg  func() proxy.Config
		}{
			{"h2c", func() proxy.Config {
				return proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, h2cAddr)}, H2C: true}
			}},
			{"tls", func() proxy.Config {
				tr, _ := upstreamTLS(t, &stdtls.Config{RootCAs: ca.pool}, nil)
				return proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, tlsAddr)}, TLS: tr, H2: true}
			}},
		} {
			e := startProxy(t, backend, 1, origin.cfg())
			_, port, _ := net.SplitHostPort(e.addr)
			for _, c := range grpcCases {
				cmd := exec.Command(client, "-server_host", "127.0.0.1", "-server_port", port, "-use_tls", "-use_test_ca",
					"-ca_file", e.certFile, "-server_host_override", "localhost", "-test_case", c)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s origin: %s: %v\n%s", origin.name, c, err, out)
				}
			}
		}
	})
}
