package app

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/site"
	"github.com/pollproxy/pollproxy/proxy/stream"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// newHandler builds one listener's per-loop handler: a router over the
// sites on that port, each a reverse proxy with this loop's pools and
// observers with this loop's metric children and the access log. It runs
// on the loop, so it must not log or block.
func (in *Instance) newHandler(p *plan, l *config.Listener) func(*netpoll.Loop) stream.Handler {
	if in.opts.NewHandler != nil {
		return in.opts.NewHandler
	}
	so := p.cfg.ServerOptionsFor(l.Addr)
	clientIP := clientIPFunc(so)
	if p.cfg.StrictSNIFor(l) {
		next := in.hostHandler(p, l, so, clientIP)
		return func(loop *netpoll.Loop) stream.Handler { return strictSNIHost{next(loop)} }
	}
	return in.hostHandler(p, l, so, clientIP)
}

// hostHandler builds the listener's handler for one loop: its sites'
// route tables behind a router by host.
func (in *Instance) hostHandler(p *plan, l *config.Listener, so *config.ServerOptions, clientIP route.ClientIPFunc) func(*netpoll.Loop) stream.Handler {
	return func(loop *netpoll.Loop) stream.Handler {
		bySite := map[*config.Site]stream.Handler{}
		site := func(s *config.Site) stream.Handler {
			if h := bySite[s]; h != nil {
				return h
			}
			obs := in.observer(loop, p, s)
			var proxies []stream.Handler
			for _, rp := range s.AllProxies() {
				pc := p.proxies[rp]
				pc.Observer = obs
				// The listener's servers { trusted_proxies client_ip_headers timeouts { read_body } }
				pc.TrustedProxies = append(slices.Clip(so.TrustedProxies), pc.TrustedProxies...) // reverse_proxy's own add to them
				pc.ClientIPHeaders, pc.StrictClientIP = so.ClientIPHeaders, so.TrustedProxiesStrict
				pc.ReadBodyTimeout, pc.ClientIP = so.ReadBodyTimeout, clientIP
				pc.LogHeaders = len(p.logs.sites[s]) > 0
				pc.Shutdown = &in.shutdown
				ph := proxy.NewHandler(loop, pc)
				p.track(loop, s, ph)
				proxies = append(proxies, ph)
			}
			h := siteHandler(s.Table(), proxies, clientIP, loop)
			if rh, ok := h.(*site.Handler); ok {
				rh.WatchShutdown(&in.shutdown)
				if len(p.logs.sites[s]) > 0 {
					// What the routes answer themselves goes to the access
					// logs too (the metrics count proxied requests).
					rh.Observe(siteObserver{logs: p.logs.sites[s]}, true)
				}
			}
			bySite[s] = h
			return h
		}
		if len(l.Hosts) == 1 && l.Hosts[0].Host == "" {
			// One site for any host: a router would always pick it.
			return site(l.Hosts[0].Site)
		}
		r := route.NewRouter()
		for _, hs := range l.Hosts {
			r.Handle(hs.Host, site(hs.Site))
		}
		return r
	}
}

// siteHandler evaluates a site's routes on one loop; a site whose only
// route proxies every request, with no response or error routes, is its
// proxy, with nothing in between.
func siteHandler(t *site.Table, proxies []stream.Handler, clientIP route.ClientIPFunc, loop *netpoll.Loop) stream.Handler {
	if n := t.Nodes; len(n) == 1 && n[0].Match == nil && len(t.Errors) == 0 {
		if p, ok := n[0].Do.(*site.Proxy); ok && len(p.Responses) == 0 {
			return proxies[p.Index]
		}
	}
	return site.NewHandler(t, proxies, clientIP, loop)
}

// clientIPFunc is how client_ip matchers and client_ip_hash learn the
// client address: the peer's, or the one a trusted proxy names
// (route.ClientAddr), the same derivation as X-Forwarded-For and the access
// log use.
func clientIPFunc(so *config.ServerOptions) route.ClientIPFunc {
	if len(so.TrustedProxies) == 0 {
		return route.PeerIP
	}
	trusted, headers := so.TrustedProxies, so.ClientIPHeaders
	derive := route.ClientAddr
	if so.TrustedProxiesStrict {
		derive = route.StrictClientAddr
	}
	return func(r *stream.Request) netip.Addr {
		return derive(r.RemoteAddr.Addr(), r.Header, trusted, headers)
	}
}

// observer is what watches a site's requests on one loop: the metrics,
// the site's access logs, both or nothing.
func (in *Instance) observer(loop *netpoll.Loop, p *plan, s *config.Site) observe.Observer {
	var m *metrics.LoopObserver
	if in.metrics != nil {
		m = in.metrics.ForLoop(loop, observe.Upstreams(p.siteUps[s]))
		if p.cfg.MetricsPerHost {
			m.CountHosts(siteHosts(s), p.cfg.MetricsCatchAllHosts)
		}
	}
	logs := p.logs.sites[s]
	switch {
	case len(logs) > 0:
		return siteObserver{m, logs}
	case m != nil:
		return m
	}
	return nil
}

// siteHosts are the names of a site that per-host metrics count on their
// own: its exact host names, as Caddy counts its host matchers' names
// that are not wildcards.
func siteHosts(s *config.Site) []string {
	var out []string
	for _, a := range s.Addrs {
		if a.Host != "" && !strings.Contains(a.Host, "*") {
			out = append(out, a.Host)
		}
	}
	return out
}

func (in *Instance) newServer(cfg *config.Config, p *plan, l *config.Listener) (*server.Server, error) {
	so := cfg.ServerOptionsFor(l.Addr)
	sc := server.Config{
		Addr:             l.Addr,
		TLS:              in.tlsCfg,
		NewHandler:       in.newHandler(p, l),
		HandshakeTimeout: so.Timeouts.Handshake,
		WriteTimeout:     so.Timeouts.Write,
	}
	if l.Cleartext {
		sc.TLS, sc.Cleartext, sc.H2C = nil, true, so.H2C
	} else {
		sc.HTTPRedirect = so.HTTPRedirect
	}
	// Caddy's TCP keep-alive, on by default: a negative interval turns
	// it off.
	sc.KeepAlive = &netpoll.KeepAlive{Enable: so.KeepAlive.Interval >= 0, Idle: so.KeepAlive.Idle,
		Interval: so.KeepAlive.Interval, Count: so.KeepAlive.Count}
	applyServers(&sc, so)
	sc.H1.HeaderTimeout = so.Timeouts.ReadHeader
	sc.H1.IdleTimeout = so.Timeouts.Idle
	sc.H2.IdleTimeout = so.Timeouts.Idle
	sc.H2.NoExtendedConnect = cfg.NoExtendedConnect
	srv, err := server.New(in.group, sc)
	if err != nil {
		if pos := l.Hosts[0].Site.Pos; pos.File != "" {
			return nil, &config.Error{Pos: pos, Msg: fmt.Sprintf("listen %s: %v", l.Addr, err)}
		}
		return nil, err
	}
	return srv, nil
}

// adminHeaderTimeout bounds a request head on the admin and HTTP
// listeners.
const adminHeaderTimeout = 10 * time.Second

// startAdmin serves metrics, the A/B verdict and /poller on the admin
// listener, every request through the one adminGuard.
func (in *Instance) startAdmin(cfg *config.Config) error {
	ln, err := listenAdmin(cfg.Admin)
	if err != nil {
		return fmt.Errorf("admin %s: %w", cfg.Admin, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", in.metrics.Handler())
	mux.HandleFunc("/poller", in.servePoller)
	abPage, abJSON := in.ab.Handlers()
	mux.Handle("/ab", abPage)
	mux.Handle("/ab.json", abJSON)
	mux.Handle("/ab.csv", in.ab.CSVHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	guard := newAdminGuard(ln.Addr(), cfg.AdminOrigins, cfg.AdminEnforceOrigin, mux)
	in.admin = &http.Server{Handler: guard, ReadHeaderTimeout: adminHeaderTimeout}
	go in.admin.Serve(ln)
	if ln.Addr().Network() == "unix" {
		in.log.Info("admin listening", "socket", ln.Addr().String())
	} else {
		in.log.Info("admin listening", "addr", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics")
	}
	return nil
}

// listenAdmin listens on an admin address (config.ParseAdminAddress). A
// unix socket left by a process that is gone is replaced, as Caddy does,
// and the new one takes the address's permissions; a socket something
// still answers on is left alone (the listen fails).
func listenAdmin(addr string) (net.Listener, error) {
	a, err := config.ParseAdminAddress(addr)
	if err != nil {
		return nil, err
	}
	if a.Network != "unix" {
		return net.Listen(a.Network, a.Address)
	}
	abstract := strings.HasPrefix(a.Address, "@")
	if fi, err := os.Lstat(a.Address); !abstract && err == nil && fi.Mode()&fs.ModeSocket != 0 {
		if c, err := net.Dial("unix", a.Address); err == nil {
			c.Close()
		} else {
			os.Remove(a.Address)
		}
	}
	ln, err := net.Listen("unix", a.Address)
	if err != nil || abstract {
		return ln, err
	}
	if err := os.Chmod(a.Address, a.Mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// startHTTP answers ACME HTTP-01 challenges and redirects plain HTTP to
// HTTPS on the http_port, as Caddy does: every name of an HTTPS site goes
// to https:// on its own port (config.RedirectHosts), any other name to
// https:// without a port. It runs off the loops, in net/http: it serves one
// redirect per client, not traffic. When a plain-HTTP site of the
// configuration listens on the http_port itself, that site answers there
// and no redirect is added. Failing to listen is not fatal: the
// TLS-ALPN-01 challenge on the HTTPS port still works.
func (in *Instance) startHTTP(cfg *config.Config) {
	redirects := cfg.RedirectHosts()
	if cfg.HTTPPort == 0 || len(redirects) == 0 && (in.certs == nil || !usesACME(cfg)) {
		return
	}
	addr := net.JoinHostPort(cfg.DefaultBind, strconv.Itoa(cfg.HTTPPort))
	if in.servers[addr] != nil {
		in.log.Info("a site serves plain HTTP on the http_port: no HTTP->HTTPS redirects there", "addr", addr)
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		in.log.Warn("no HTTP listener for ACME challenges and redirects", "addr", addr, "error", err)
		return
	}
	in.redirects.Store(&redirects)
	var h http.Handler = redirectHandler(&in.redirects)
	if in.certs != nil {
		h = in.certs.HTTPChallengeHandler(h)
	}
	in.http = &http.Server{Handler: h, ReadHeaderTimeout: adminHeaderTimeout}
	go in.http.Serve(ln)
	in.log.Info("HTTP listening for ACME challenges and redirects", "addr", ln.Addr().String())
}

// reloadHTTP gives the http_port's redirects the names of a reloaded
// configuration, starting its listener if the running one had none.
func (in *Instance) reloadHTTP(cfg *config.Config) {
	if in.http == nil {
		in.startHTTP(cfg)
		return
	}
	redirects := cfg.RedirectHosts()
	in.redirects.Store(&redirects)
}

// redirectHandler answers 308 with the request's HTTPS location: the port
// is the one its name is served on (the hosts map, exact or *.wildcard,
// which a reload replaces); another name goes to https://NAME/ with no
// port, as Caddy's catch-all redirect does whatever its https_port.
func redirectHandler(current *atomic.Pointer[map[string]int]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		hosts := *current.Load()
		port, ok := hosts[strings.ToLower(host)]
		if !ok {
			if _, rest, found := strings.Cut(host, "."); found {
				port, ok = hosts["*."+strings.ToLower(rest)]
			}
		}
		if !ok {
			port = 443
		}
		target := host
		if strings.Contains(host, ":") {
			target = "[" + host + "]"
		}
		if port != 443 {
			target = net.JoinHostPort(strings.Trim(target, "[]"), strconv.Itoa(port))
		}
		// As Caddy's redirect route, a static_response: the Location
		// and an empty body, no page and no Content-Type (which
		// http.Redirect would write).
		w.Header().Set("Location", "https://"+target+r.RequestURI)
		w.WriteHeader(http.StatusPermanentRedirect)
	})
}

// usesACME reports whether some HTTPS site gets its certificate from ACME.
func usesACME(cfg *config.Config) bool {
	for _, s := range cfg.Sites {
		if s.Cleartext() || s.TLS.Mode == config.TLSFiles || s.TLS.Pos.Line == 0 && cfg.AutoHTTPS.NoCerts {
			continue // no certificate obtained (auto_https off: siteCerts)
		}
		p := sitePolicy(cfg, &s.TLS)
		for _, is := range p.Issuers {
			if is.ACME != nil || is.ZeroSSL != nil {
				return true
			}
		}
		if len(p.Issuers) > 0 || s.TLS.Mode == config.TLSInternal || cfg.TLSOptions.LocalCerts {
			continue
		}
		for _, a := range s.Addrs {
			if !a.Cleartext && (a.Host == "" && s.TLS.GetsOnDemand() || a.Host != "" && !tlscerts.UsesInternalByDefault(a.Host)) {
				return true
			}
		}
	}
	return false
}
