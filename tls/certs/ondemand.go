package certs

import (
	"context"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/certmagic"
)

// OnDemand is the permission on-demand policies ask before obtaining a
// certificate for a name a client sent (Caddy's on_demand_tls with its
// ask endpoint, or permission http).
type OnDemand struct {
	// Endpoint is the URL asked, with the name in the "domain" query
	// parameter: a 2xx status allows the certificate, any other refuses
	// it. Redirects are not followed.
	Endpoint string
}

// ErrPermissionDenied is the error of a handshake whose name the
// on-demand permission refused.
var ErrPermissionDenied = errors.New("certificate not allowed by permission module")

// askTimeout bounds one question to the permission endpoint, as Caddy's.
const askTimeout = 10 * time.Second

// askClient asks permission endpoints; it never follows a redirect.
var askClient = &http.Client{
	Timeout: askTimeout,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("following http redirects is not allowed")
	},
}

// allowed asks o's endpoint about name. It runs in certmagic's
// GetCertificate, on a handshake worker, bounded by the handshake's
// context.
func (o *OnDemand) allowed(ctx context.Context, name string) error {
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		return fmt.Errorf("parsing ask URL: %v", err)
	}
	q := u.Query()
	q.Set("domain", name)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := askClient.Do(req)
	if err != nil {
		return fmt.Errorf("checking %v to determine if certificate for hostname '%s' should be allowed: %v", o.Endpoint, name, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %w %s - non-2xx status code %d", name, ErrPermissionDenied, o.Endpoint, resp.StatusCode)
	}
	return nil
}

// onDemandDecision is certmagic's DecisionFunc for p: the permission
// endpoint when there is one; without one, only names p was given (the
// wildcard and catch-all cases are refused when p is added, unless p's
// issuers are local CAs only).
func (c *Manager) onDemandDecision(p Policy) func(context.Context, string) error {
	return func(ctx context.Context, name string) error {
		if c.cfg.OnDemand != nil {
			err := c.cfg.OnDemand.allowed(ctx, name)
			if err != nil {
				remote := ""
				if hello, ok := ctx.Value(certmagic.ClientHelloInfoCtxKey).(*stdtls.ClientHelloInfo); ok && hello != nil && hello.Conn != nil {
					remote = hello.Conn.RemoteAddr().String()
				}
				c.zl.Debug(fmt.Sprintf("on-demand certificate for %s refused (client %s): %v", name, remote, err))
			}
			return err
		}
		if p.onlyInternal() {
			return nil
		}
		c.mu.RLock()
		_, ok := c.names[normalize(name)]
		c.mu.RUnlock()
		if !ok && len(p.CertGetters) > 0 {
			// As Caddy: with certificate getters and no permission,
			// nothing is issued for names the getters do not answer.
			return fmt.Errorf("%s: %w: no permission module configured; certificates not allowed except from external managers", name, ErrPermissionDenied)
		}
		if !ok {
			return fmt.Errorf("%s: %w (no on_demand_tls permission, and not a name of the site)", name, ErrPermissionDenied)
		}
		return nil
	}
}
