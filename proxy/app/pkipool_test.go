package app

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
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

// TestPKITrustPools: over real handshakes on every backend, client_auth's
// trust_pool pki_root and pki_intermediate accept the client certificates
// the instance's local CA issues and refuse another CA's, and a
// reverse_proxy trusts an origin whose certificate the local CA issued
// through tls_trust_pool pki_root, where the system's roots refuse it.
func TestPKITrustPools(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		storage := filepath.Join(dir, "storage")
		rootPort, intermPort, proxyPort, plainPort := servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)
		origin, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer origin.Close()
		file := filepath.Join(dir, "Caddyfile")
		caddyfile := fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage file_system %s
	default_bind 127.0.0.1
}

root.localhost:%d {
	tls {
		client_auth {
			trust_pool pki_root local
		}
	}
	respond "root"
}

intermediate.localhost:%d {
	tls {
		client_auth {
			trust_pool pki_intermediate {
				authority local
			}
		}
	}
	respond "intermediate"
}

proxy.localhost:%d {
	reverse_proxy https://%s {
		transport http {
			tls_trust_pool pki_root local
		}
	}
}

plain.localhost:%d {
	reverse_proxy https://%s
}
`, backend, storage, rootPort, intermPort, proxyPort, origin.Addr(), plainPort, origin.Addr())
		os.WriteFile(file, []byte(caddyfile), 0o644)
		r := start(t, file, Options{})

		// The CA the instance made at start, read from its storage.
		caDir := filepath.Join(storage, "pollproxy", "ca", "local")
		root, interm := testca.Load(t, filepath.Join(caDir, "root")), testca.Load(t, filepath.Join(caDir, "intermediate"))
		roots := x509.NewCertPool()
		roots.AddCert(root.Cert)

		fromInterm := interm.Client(t, "client")
		fromRoot := root.Client(t, "client")
		fromOther := testca.New(t, "another CA").Client(t, "client")
		withInterm := fromInterm
		withInterm.Certificate = append(withInterm.Certificate, interm.Cert.Raw)

		hosts := map[int]string{rootPort: "root.localhost", intermPort: "intermediate.localhost", proxyPort: "proxy.localhost", plainPort: "plain.localhost"}
		get := func(port int, cert *stdtls.Certificate) (string, error) {
			tc := &stdtls.Config{RootCAs: roots}
			if cert != nil {
				tc.Certificates = []stdtls.Certificate{*cert}
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc,
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, network, addr)
				}}}
			resp, err := c.Get(fmt.Sprintf("https://%s:%d/", hosts[port], port))
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
		}
		for _, c := range []struct {
			name string
			port int
			cert *stdtls.Certificate
			want string // "": refused
		}{
			{"pki_root, the root's", rootPort, &fromRoot, "200 root"},
			{"pki_root, the intermediate's with its chain", rootPort, &withInterm, "200 root"},
			{"pki_root, the intermediate's alone", rootPort, &fromInterm, ""},
			{"pki_root, another CA's", rootPort, &fromOther, ""},
			{"pki_root, none", rootPort, nil, ""},
			{"pki_intermediate, the intermediate's", intermPort, &fromInterm, "200 intermediate"},
			{"pki_intermediate, the root's", intermPort, &fromRoot, ""},
			{"pki_intermediate, another CA's", intermPort, &fromOther, ""},
		} {
			got, err := get(c.port, c.cert)
			if c.want == "" && err == nil {
				t.Errorf("%s: answered %q, want the handshake refused", c.name, got)
			}
			if c.want != "" && (err != nil || got != c.want) {
				t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
			}
		}

		// The origin: a certificate from the local CA's intermediate, for
		// its address.
		serving := interm.Server(t, "127.0.0.1")
		serving.Certificate = append(serving.Certificate, interm.Cert.Raw)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "origin")
		}), ErrorLog: log.New(io.Discard, "", 0)}
		go srv.Serve(stdtls.NewListener(origin, &stdtls.Config{Certificates: []stdtls.Certificate{serving}}))
		defer srv.Close()
		if got, err := get(proxyPort, nil); err != nil || got != "200 origin" {
			t.Errorf("tls_trust_pool pki_root: %q, %v; want 200 origin", got, err)
		}
		if got, err := get(plainPort, nil); err != nil || !strings.HasPrefix(got, "502 ") {
			t.Errorf("the system's roots: %q, %v; want 502", got, err)
		}

		// A reload reads the pools again: root.localhost now trusts the
		// intermediate; one naming a CA pki does not configure is
		// refused, and the running pools stay.
		os.WriteFile(file, []byte(strings.Replace(caddyfile, "trust_pool pki_root local", "trust_pool pki_intermediate local", 1)), 0o644)
		if err := r.in.Reload(); err != nil {
			t.Fatal(err)
		}
		if got, err := get(rootPort, &fromInterm); err != nil || got != "200 root" {
			t.Errorf("after the reload, the intermediate's alone: %q, %v; want 200 root", got, err)
		}
		os.WriteFile(file, []byte(strings.Replace(caddyfile, "trust_pool pki_root local", "trust_pool pki_root corp", 1)), 0o644)
		if err := r.in.Reload(); err == nil || !strings.Contains(err.Error(), "getting CA corp: no certificate authority configured with id: corp") {
			t.Errorf("reload naming an unconfigured CA: %v", err)
		}
		if got, err := get(rootPort, &fromInterm); err != nil || got != "200 root" {
			t.Errorf("after the refused reload: %q, %v; want 200 root", got, err)
		}
	})
}
