package certs

import (
	"context"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxCertBundle bounds the PEM bundle a certificate endpoint may answer.
const maxCertBundle = 1 << 20

// httpCertGetter gets a handshake's certificate from an HTTP endpoint
// (Caddy's get_certificate http): GET URL?server_name=..&
// signature_schemes=..&cipher_suites=..&local_ip=.., answered by 200 with a
// PEM bundle of the chain and its key, or 204 for none. It is a certmagic
// Manager, asked on the handshake's worker before anything is obtained.
type httpCertGetter struct {
	url string
}

var certGetterClient = &http.Client{Timeout: askTimeout}

// GetCertificate implements certmagic.Manager.
func (g httpCertGetter) GetCertificate(ctx context.Context, hello *stdtls.ClientHelloInfo) (*stdtls.Certificate, error) {
	u, err := url.Parse(g.url)
	if err != nil {
		return nil, err
	}
	sigs := make([]string, len(hello.SignatureSchemes))
	for i, s := range hello.SignatureSchemes {
		sigs[i] = fmt.Sprintf("%x", uint16(s))
	}
	suites := make([]string, len(hello.CipherSuites))
	for i, s := range hello.CipherSuites {
		suites[i] = fmt.Sprintf("%x", s)
	}
	q := u.Query()
	q.Set("server_name", hello.ServerName)
	q.Set("signature_schemes", strings.Join(sigs, ","))
	q.Set("cipher_suites", strings.Join(suites, ","))
	if hello.Conn != nil {
		if ip, _, err := net.SplitHostPort(hello.Conn.LocalAddr().String()); err == nil && ip != "" {
			q.Set("local_ip", ip)
		}
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := certGetterClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
	default:
		return nil, fmt.Errorf("got HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBundle))
	if err != nil {
		return nil, fmt.Errorf("error reading response body: %v", err)
	}
	// The bundle holds both: X509KeyPair takes the CERTIFICATE blocks
	// from the first and the key's from the second.
	cert, err := stdtls.X509KeyPair(body, body)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}
