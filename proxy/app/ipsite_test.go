package app

import (
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestIPSiteWithoutSNI: a site named by an IP address answers clients
// that send no SNI (curl and browsers never send an IP in SNI). The
// listener is the wildcard one, so the certificate is chosen by the
// address the client connected to, as Caddy does, and it is the local
// CA's certificate for that IP.
func TestIPSiteWithoutSNI(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := startOrigin(t, "A")
		dir := t.TempDir()
		port := servertest.FreePort(t)
		storage := filepath.Join(dir, "storage")
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	storage %s
}

127.0.0.1:%d {
	reverse_proxy %s
}
`, backend, storage, port, o.addr)), 0o644)
		start(t, file, Options{})
		roots := localRoots(t, storage)

		var state stdtls.ConnectionState
		tr := &http.Transport{
			// An IP host sends no SNI; verification still checks the IP SAN.
			TLSClientConfig:   &stdtls.Config{RootCAs: roots},
			ForceAttemptHTTP2: true,
		}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		state = *resp.TLS
		if resp.StatusCode != 200 || string(b) != "A " || resp.ProtoMajor != 2 {
			t.Fatalf("got %d %s %q", resp.StatusCode, resp.Proto, b)
		}
		if state.ServerName != "" {
			t.Fatalf("client sent SNI %q", state.ServerName)
		}
		leaf := state.PeerCertificates[0]
		if len(leaf.IPAddresses) != 1 || leaf.IPAddresses[0].String() != "127.0.0.1" {
			t.Fatalf("certificate for %v %v, want the IP 127.0.0.1", leaf.DNSNames, leaf.IPAddresses)
		}
	})
}
