package server

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/proxyproto"
)

// ProxyProtocol is Caddy's proxy_protocol listener wrapper: which clients
// may put a PROXY protocol header in front of their TLS, and what the
// server does with it. A header's source address becomes the connection's
// remote address — the client for client_ip, X-Forwarded-For, the access
// log and remote_ip.
type ProxyProtocol struct {
	// Timeout bounds the wait for the header (0: only the handshake
	// timeout applies).
	Timeout time.Duration
	// Allow lists the sources whose headers are used (a header is then
	// optional); Deny the sources whose connections are refused if they
	// send one. Deny is checked first.
	Allow, Deny []netip.Prefix
	// Fallback is the policy for sources in neither list (Caddy's
	// default, PolicyIgnore, when zero).
	Fallback ProxyPolicy
}

// ProxyPolicy is what the server does with a source's PROXY header, with
// Caddy's (go-proxyproto's) names.
type ProxyPolicy uint8

const (
	// PolicyIgnore reads a header if one comes and drops it: the
	// connection's own address stands.
	PolicyIgnore ProxyPolicy = iota
	// PolicyUse takes the client's address from a header if one comes.
	PolicyUse
	// PolicyReject refuses a connection that sends a header.
	PolicyReject
	// PolicyRequire takes the address from a header and refuses a
	// connection without one.
	PolicyRequire
	// PolicySkip does not look for a header: the bytes go to TLS as sent.
	PolicySkip
)

var policyNames = [...]string{"ignore", "use", "reject", "require", "skip"}

func (p ProxyPolicy) String() string { return policyNames[p] }

// ParseProxyPolicy reads a fallback_policy value, in any case.
func ParseProxyPolicy(s string) (ProxyPolicy, error) {
	for i, n := range policyNames {
		if strings.EqualFold(s, n) {
			return ProxyPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q (want ignore, use, reject, require or skip)", s)
}

// policy is what applies to a connection from src, as Caddy decides it.
func (pp *ProxyProtocol) policy(src netip.Addr) ProxyPolicy {
	src = src.Unmap()
	for _, p := range pp.Deny {
		if p.Contains(src) {
			return PolicyReject
		}
	}
	for _, p := range pp.Allow {
		if p.Contains(src) {
			return PolicyUse
		}
	}
	return pp.Fallback
}

// Errors a connection ends with over its PROXY header.
var (
	errProxyHeaderRefused  = errors.New("PROXY header from a source not allowed to send one")
	errProxyHeaderRequired = errors.New("no PROXY header where one is required")
	errProxyHeaderTimeout  = errors.New("no PROXY header in time")
)

// readProxyHeader takes the connection's first bytes while its PROXY
// header is being read (c.ppWait). It returns what follows the header, for
// TLS, once the header is decided — nothing while it is incomplete, the
// bytes are kept — and false when the connection was closed.
func (c *conn) readProxyHeader(p []byte) ([]byte, bool) {
	in := p
	if c.ppBuf != nil {
		c.ppBuf = append(c.ppBuf, p...)
		in = c.ppBuf
	}
	h, n, err := proxyproto.Parse(in)
	switch {
	case err == proxyproto.ErrIncomplete:
		if c.ppBuf == nil {
			// p is the loop's shared read buffer: keep a copy.
			c.ppBuf = append(make([]byte, 0, proxyproto.MaxHeader), p...)
		}
		return nil, true
	case err == proxyproto.ErrNoHeader:
		if c.ppPolicy == PolicyRequire {
			c.refuseProxy(errProxyHeaderRequired)
			return nil, false
		}
		n = 0
	case err != nil:
		c.refuseProxy(err)
		return nil, false
	case c.ppPolicy == PolicyReject:
		c.refuseProxy(errProxyHeaderRefused)
		return nil, false
	case (c.ppPolicy == PolicyUse || c.ppPolicy == PolicyRequire) && h.Source.IsValid():
		c.remote = h.Source
	}
	c.ppWait, c.ppBuf = false, nil
	if c.timer != nil && c.ppTimed {
		// The header's own timeout is over; the ClientHello has what is
		// left of the handshake timeout.
		c.timer.Stop()
		c.timer = c.after(c.ls.srv.hsTimeout-c.ls.loop.Now().Sub(c.accepted), c.helloTimeout)
	}
	return in[n:], true
}

// refuseProxy closes a connection over its PROXY header, counted as a
// failed handshake.
func (c *conn) refuseProxy(err error) {
	c.ls.srv.handshakeErrors.Add(1)
	c.destroy(err)
}

// proxyHeaderTimeout closes a connection whose PROXY header did not come
// within the proxy_protocol timeout.
func (c *conn) proxyHeaderTimeout() {
	if c.ppWait {
		c.refuseProxy(errProxyHeaderTimeout)
	}
}
