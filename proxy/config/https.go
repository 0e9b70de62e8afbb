package config

import (
	"net"
	"sort"
	"strconv"
)

// AutoHTTPS is Caddy's auto_https global option.
type AutoHTTPS struct {
	// NoRedirects: no HTTP->HTTPS redirects (disable_redirects, off).
	NoRedirects bool
	// NoCerts: no certificate is obtained for a site on pollproxy's own;
	// an HTTPS site without a tls directive is served with whatever
	// certificate another site brings for its name, else its handshakes
	// fail, as in Caddy (disable_certs, off).
	NoCerts bool
	// IgnoreLoadedCerts is accepted for Caddy's sake: pollproxy always
	// manages the names of a site without a tls directive, whatever
	// certificate files other sites load (ignore_loaded_certs).
	IgnoreLoadedCerts bool
}

// schemes gives every site address its port and decides whether it is
// served in cleartext, by Caddy's rules. Caddy's Caddyfile adapter
// (detectConflictingSchemes) reads the addresses, named ones before those
// without a host: http:// or the http_port is plain HTTP; https://, the
// https_port or a tls directive on any site of the port is HTTPS; an
// address without a host (":8080") is plain HTTP, there being no name to
// get a certificate for, and a conflict with what came before is an error
// in Caddy's words. Then automatic HTTPS turns on TLS for the whole port
// when a site on it has a host name (not http://): "localhost:8080" next
// to ":8080" makes both HTTPS. pollproxy refuses, at the named site, what
// Caddy would leave to that runtime step on a port an http:// site holds.
func (p *parser) schemes() {
	c := p.cfg
	type pair struct {
		s *Site
		a *Address
	}
	var pairs []pair
	tlsOn := map[int]bool{}  // a site with a tls directive listens on the port
	connOn := map[int]bool{} // ... one that makes a connection policy
	for _, s := range c.Sites {
		for i := range s.Addrs {
			a := &s.Addrs[i]
			if a.Port == 0 {
				switch {
				case a.Scheme == "http" && c.HTTPPort != 0:
					a.Port = c.HTTPPort
				case a.Scheme == "http":
					a.Port = DefaultHTTPPort
				default:
					a.Port = c.HTTPSPort
				}
			}
			if s.TLS.Pos.Line != 0 {
				tlsOn[a.Port] = true
				connOn[a.Port] = connOn[a.Port] || s.TLS.ConnSettings()
			}
			pairs = append(pairs, pair{s, a})
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].a.Host != "" && pairs[j].a.Host == "" })
	listen := func(port int) string { return net.JoinHostPort(c.DefaultBind, strconv.Itoa(port)) }
	kind := map[int]string{}    // "HTTP" or "HTTPS", as the adapter decides
	named := map[int]*Address{} // a host name that turns on automatic HTTPS
	forced := map[int]bool{}    // an http:// site or the http_port
	for _, pr := range pairs {
		s, a := pr.s, pr.a
		switch {
		case a.Scheme == "http" || a.Scheme == "" && a.Port == c.HTTPPort:
			switch {
			case kind[a.Port] == "HTTPS":
				p.errAt(s.Pos, "server listening on %s is configured for HTTPS and cannot natively multiplex HTTP and HTTPS: %s", listen(a.Port), a.Original)
			case connOn[a.Port]:
				// Only a policy that changes handshakes conflicts: a
				// tls EMAIL or tls internal here configures the
				// certificates of other sites, as in Caddy.
				p.errAt(s.Pos, "server listening on %s is HTTP, but attempts to configure TLS connection policies (a tls directive on a site of port %d)", listen(a.Port), a.Port)
			}
			kind[a.Port], forced[a.Port] = "HTTP", true
		case a.Scheme == "https" || a.Port == c.HTTPSPort || tlsOn[a.Port]:
			if kind[a.Port] == "HTTP" {
				p.errAt(s.Pos, "server listening on %s is configured for HTTP and cannot natively multiplex HTTP and HTTPS: %s", listen(a.Port), a.Original)
			}
			kind[a.Port] = "HTTPS"
		case a.Host == "":
			if kind[a.Port] == "HTTPS" {
				p.errAt(s.Pos, "server listening on %s is configured for HTTPS and cannot natively multiplex HTTP and HTTPS: %s (try specifying https:// in the address)", listen(a.Port), a.Original)
			}
			kind[a.Port] = "HTTP"
		default:
			if named[a.Port] == nil {
				named[a.Port] = a
			}
		}
	}
	for _, s := range c.Sites {
		for i := range s.Addrs {
			a := &s.Addrs[i]
			if n := named[a.Port]; n == a && forced[a.Port] {
				p.errAt(s.Pos, "server listening on %s is configured for HTTP and cannot natively multiplex HTTP and HTTPS: %s (an http:// site holds the port)", listen(a.Port), a.Original)
			}
			a.Cleartext = kind[a.Port] != "HTTPS" && named[a.Port] == nil
		}
	}
}

// Cleartext reports whether the site is served over plain HTTP on every
// address: it then needs no certificate.
func (s *Site) Cleartext() bool {
	for _, a := range s.Addrs {
		if !a.Cleartext {
			return false
		}
	}
	return len(s.Addrs) > 0
}

// RedirectHosts are the names whose plain-HTTP requests on the http_port
// are redirected to HTTPS, with the port the redirect names: every host of
// an HTTPS site, the first site of a name deciding its port, unless
// auto_https disables redirects or http_port is off. A name an http://
// site serves on the http_port is that site's, not redirected. A site on
// the https_port (or the http_port, 80 or 443) gets 443, which the
// redirect leaves out, as Caddy does: it takes the https_port for one the
// outside reaches as 443 (a port forwarded to it).
func (c *Config) RedirectHosts() map[string]int {
	if c.AutoHTTPS.NoRedirects || c.HTTPPort == 0 {
		return nil
	}
	plain := map[string]bool{}
	for _, s := range c.Sites {
		for _, a := range s.Addrs {
			if a.Cleartext && a.Port == c.HTTPPort {
				plain[a.Host] = true
			}
		}
	}
	out := map[string]int{}
	for _, s := range c.Sites {
		for _, a := range s.Addrs {
			if a.Cleartext || a.Host == "" || plain[a.Host] {
				continue
			}
			if _, ok := out[a.Host]; !ok {
				port := a.Port
				if port == c.HTTPSPort || port == c.HTTPPort || port == DefaultHTTPPort {
					port = DefaultHTTPSPort
				}
				out[a.Host] = port
			}
		}
	}
	return out
}
