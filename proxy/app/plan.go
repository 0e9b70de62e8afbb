package app

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/upstream"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// plan is a configuration made ready to serve: upstreams resolved,
// certificates managed, the access logs open.
type plan struct {
	cfg       *config.Config
	upstreams map[string]*upstream.Upstream
	proxies   map[*config.Proxy]proxy.Config
	siteUps   map[*config.Site][]*upstream.Upstream
	logs      *accessLogs
	built     builtHandlers         // its per-loop proxy handlers, retired by the next reload (streams.go)
	conn      []tlscerts.ConnPolicy // the sites' connection policies, set by setConnPolicies
}

// resolveTimeout bounds the resolution of one upstream name.
const resolveTimeout = 5 * time.Second

// prepare resolves upstreams (off the loops), adds the sites'
// certificates and opens the access log. Nothing running changes.
func (in *Instance) prepare(cfg *config.Config) (*plan, error) {
	p := &plan{cfg: cfg, upstreams: map[string]*upstream.Upstream{},
		proxies: map[*config.Proxy]proxy.Config{}, siteUps: map[*config.Site][]*upstream.Upstream{}}
	var errs config.Errors
	for _, s := range cfg.Sites {
		var all []*upstream.Upstream
		for _, rp := range s.AllProxies() {
			var ups []*upstream.Upstream
			for _, name := range rp.Upstreams {
				up, err := in.upstreamFor(p, rp, name)
				if err != nil {
					errs = append(errs, &config.Error{Pos: rp.Pos, Msg: fmt.Sprintf("reverse_proxy: upstream %q: %v", name, err)})
					continue
				}
				ups = append(ups, up)
				if !slices.Contains(all, up) {
					all = append(all, up)
				}
			}
			pc := rp.ProxyConfig(ups)
			if rp.FastCGI != nil && rp.FastCGI.CaptureStderr {
				pc.FastCGI.Stderr = fastcgiStderr(in.log)
			}
			if rp.TLS != nil {
				t, err := in.upTLS.transport(in.certs, rp.TLS, in.log)
				if err != nil {
					errs = append(errs, &config.Error{Pos: rp.TLS.Pos, Msg: fmt.Sprintf("reverse_proxy: %v", err)})
					continue
				}
				pc.TLS = t
				pc.ActiveHealth.TLS = t.Config
			}
			// The servers options are the listener's: newHandler adds them
			// to reverse_proxy's own trusted_proxies.
			pc.TrustedProxies = rp.TrustedProxies
			p.proxies[rp] = pc
		}
		p.siteUps[s] = all
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if in.certs != nil {
		conn, err := addCerts(in.certs, cfg)
		if err != nil {
			return nil, err
		}
		p.conn = conn
	}
	logs, err := in.openLogs(cfg)
	if err != nil {
		return nil, err
	}
	p.logs = logs
	return p, nil
}

// upstream resolves name, reusing the running Upstream when it resolves
// to the same address, so counters and health survive a reload.
func (in *Instance) upstream(p *plan, name string) (*upstream.Upstream, error) {
	if up := p.upstreams[name]; up != nil {
		return up, nil
	}
	if path, ok := upstream.UnixSocketPath(name); ok {
		up := in.upstreams[name]
		if up == nil {
			up = &upstream.Upstream{Name: name, Path: path}
		}
		p.upstreams[name] = up
		return up, nil
	}
	// An upstream written without a host (":8080") is localhost's, as
	// Caddy dials it; Caddy's spelling stays its Dial.
	named, dial := name, ""
	if host, port, err := net.SplitHostPort(name); err == nil && host == "" {
		named, dial = net.JoinHostPort("localhost", port), name
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	addrs, err := netpoll.ResolveTCP(ctx, named)
	cancel()
	if err != nil {
		return nil, err
	}
	up := in.upstreams[name]
	if up == nil {
		up = &upstream.Upstream{Name: named, Dial: dial, Addr: addrs[0]}
	}
	up.SetAddrs(addrs) // every A/AAAA address, refreshed by the instance's resolver
	p.upstreams[name] = up
	return up, nil
}

// commit makes p the running plan's bookkeeping: upstreams, metrics
// source, access log.
func (in *Instance) commit(p *plan) {
	if in.running != nil {
		// Requests in flight on the old handlers may still finish into
		// the old logs; they get the grace period.
		p.logs.retire(in.running.logs, p.cfg.GracePeriod)
	}
	in.cfg, in.upstreams = p.cfg, p.upstreams
	in.watch.update(p)
	in.running = p
	if in.metrics == nil {
		return
	}
	in.pollerMu.Lock() // a switch on the admin listener must not interleave
	defer in.pollerMu.Unlock()
	src := metrics.Source{Pollers: in.pollerSet, Group: in.group, WindowBudget: h2.DefaultWindowBudget()}
	for addr, srv := range in.servers {
		src.Servers = append(src.Servers, metrics.NamedServer{Listen: addr, Server: srv})
	}
	for _, up := range p.upstreams {
		src.Upstreams = append(src.Upstreams, up)
	}
	if len(p.logs.writers) > 0 {
		src.AccessLogDropped = p.logs.dropped
	}
	in.metrics.SetSource(src)
}

// hostNames are the names a site's certificate covers. A site for any
// host serves clients that send no server name, or an IP address, the
// local CA's certificate for localhost.
func hostNames(s *config.Site) []string {
	var names []string
	for _, a := range s.Addrs {
		if a.Cleartext {
			continue
		}
		if a.Host == "" {
			names = append(names, "localhost", "127.0.0.1", "::1")
			continue
		}
		names = append(names, a.Host)
	}
	return names
}

// errorAt is a tls error at the site's tls line, or at the site.
func errorAt(s *config.Site, err error) *config.Error {
	pos := s.TLS.Pos
	if pos.File == "" {
		pos = s.Pos
	}
	return &config.Error{Pos: pos, Msg: "tls: " + strings.TrimPrefix(err.Error(), "tls: ")}
}

// addCerts manages every site's certificate with the policy of its tls
// option (siteCerts); by default certs.Manager's (the local CA for names
// no public CA issues for, ACME in the background for the others), and
// returns the sites' connection policies. Certificates are only ever added:
// one that a reload no longer names stays until the next start.
func addCerts(certs *tlscerts.Manager, cfg *config.Config) ([]tlscerts.ConnPolicy, error) {
	var errs config.Errors
	ctx := context.Background()
	for _, s := range cfg.Sites {
		if err := siteCerts(ctx, certs, cfg, s); err != nil {
			errs = append(errs, errorAt(s, err))
		}
	}
	cps, cerrs := connPolicies(certs, cfg)
	errs = append(errs, cerrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	return cps, nil
}

// setConnPolicies makes p's connection policies answer the handshakes
// that start from now on: before any listener of p accepts, so that no
// connection reaches a site with client_auth without its check.
func (in *Instance) setConnPolicies(p *plan) error {
	if in.certs == nil {
		return nil
	}
	if err := in.certs.SetConnPolicies(p.conn); err != nil {
		return config.Errors{&config.Error{Pos: p.cfg.Sites[0].Pos, Msg: "tls: " + err.Error()}}
	}
	return nil
}

// accountEmail is the ACME account: the global email, else the first
// HTTPS site's "tls EMAIL".
func accountEmail(cfg *config.Config) string {
	if cfg.Email != "" {
		return cfg.Email
	}
	for _, s := range cfg.Sites {
		// A plain-HTTP site's tls EMAIL obtains nothing, so names no
		// account, as in Caddy.
		if s.TLS.Mode == config.TLSACME && s.TLS.Email != "" && !s.Cleartext() {
			return s.TLS.Email
		}
	}
	return ""
}
