package servertest

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// H2Client returns an HTTP/2 client that dials addr whatever the URL's
// host (so a test can ask for any site name on a loopback port) and
// verifies the server with roots.
func H2Client(addr string, roots *x509.CertPool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &stdtls.Config{RootCAs: roots, NextProtos: []string{"h2"}},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// GetH2 GETs url with c and returns the status and the body; a transport
// error fails the test, an answer over anything but HTTP/2 is an error.
func GetH2(t testing.TB, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		t.Errorf("GET %s: %s, want HTTP/2", url, resp.Proto)
	}
	return resp.StatusCode, string(b), resp
}
