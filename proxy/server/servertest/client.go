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

// Do sends req with c and returns the status, the whole body and the
// response (its body read and closed); a transport error, or one reading
// the body, fails the test.
func Do(t testing.TB, c *http.Client, req *http.Request) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, string(b), resp
}

// Fetch GETs url with c and returns the status and the whole body, or
// the error: for a goroutine a test starts, which may not stop the test.
func Fetch(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Get GETs url with c: Do for the common case.
func Get(t testing.TB, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Do(t, c, req)
}

// GetH2 is Get that also wants the answer over HTTP/2 (an error, not a
// failure that stops the test, when it is not).
func GetH2(t testing.TB, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	status, body, resp := Get(t, c, url)
	if resp.ProtoMajor != 2 {
		t.Errorf("GET %s: %s, want HTTP/2", url, resp.Proto)
	}
	return status, body, resp
}
