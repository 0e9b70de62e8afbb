package main

import (
	"context"
	stdtls "crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/accesslog"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/stream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

func init() {
	addCommand("run", "serve the sites of a Caddyfile (SIGHUP reloads it, SIGTERM drains and exits)", runRun)
}

func runRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	file := fs.String("config", "Caddyfile", "the Caddyfile to serve")
	var lf loopFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return errReported
	}
	// --poller (or POLLPROXY_POLLER) overrides the Caddyfile's poller line,
	// --loops its loops line.
	backends := cfg.Pollers
	if set["poller"] || os.Getenv("POLLPROXY_POLLER") != "" {
		if backends, err = lf.backends(); err != nil {
			return err
		}
	}
	loops := cfg.Loops
	if set["loops"] {
		loops = lf.loops
	}
	in := &instance{file: *file, log: log, flags: lf}
	if err := in.start(cfg, backends, loops); err != nil {
		in.stop()
		return err
	}
	return in.serve()
}

// instance is a running configuration: the loops, one server per listen
// address, the admin listener, certificates and the access log.
type instance struct {
	file  string
	log   *slog.Logger
	flags loopFlags

	cfg       *config.Config
	group     *netpoll.Group
	pollerSet string // the process's backends, "epoll" or "epoll,poll"
	certs     *pptls.Certs
	tlsCfg    *stdtls.Config
	metrics   *metrics.Metrics
	admin     *http.Server
	http      *http.Server // ACME HTTP-01 answers and redirects to HTTPS
	alog      *accesslog.Logger
	servers   map[string]*server.Server // by listen address
	upstreams map[string]*proxy.Upstream
}

// plan is a configuration made ready to serve: upstreams resolved,
// certificates managed, the access log open.
type plan struct {
	cfg       *config.Config
	upstreams map[string]*proxy.Upstream
	sites     map[*config.Site]proxy.Config
	siteUps   map[*config.Site][]*proxy.Upstream
	alog      *accesslog.Logger
	newLog    bool // alog was opened for this plan
}

func (in *instance) start(cfg *config.Config, backends []string, loops int) error {
	g, err := netpoll.NewGroup(loops, backends)
	if err != nil {
		return err
	}
	in.group = g
	g.Start()
	var names []string
	seen := map[string]bool{}
	for _, s := range g.Stats() {
		if !seen[s.Backend] {
			seen[s.Backend] = true
			names = append(names, s.Backend)
		}
	}
	in.pollerSet = strings.Join(names, ",")
	in.metrics = metrics.New(version)
	in.servers = map[string]*server.Server{}
	in.upstreams = map[string]*proxy.Upstream{}

	in.certs, err = pptls.NewCerts(pptls.CertConfig{
		StorageDir: cfg.Storage,
		Email:      accountEmail(cfg),
		CA:         cfg.ACMECA,
		HTTPPort:   cfg.HTTPPort,
		// http_port off: no HTTP-01; TLS-ALPN-01 on the HTTPS port remains.
		DisableHTTPChallenge: cfg.HTTPPort == 0,
		Logger:               in.log,
	})
	if err != nil {
		return err
	}
	in.tlsCfg = in.certs.TLSConfig()

	p, err := in.prepare(cfg)
	if err != nil {
		return err
	}
	for _, l := range cfg.Listeners() {
		srv, err := in.newServer(cfg, p, l)
		if err != nil {
			return err
		}
		in.servers[l.Addr] = srv
	}
	in.commit(p)
	if cfg.Admin != "" {
		if err := in.startAdmin(cfg.Admin); err != nil {
			return err
		}
	}
	in.startHTTP(cfg)
	for _, l := range cfg.Listeners() {
		in.log.Info("serving", "listen", in.servers[l.Addr].Addr().String(), "hosts", hostList(l))
	}
	in.log.Info("pollproxy running", "config", in.file, "loops", len(g.Loops()), "pollers", in.describeLoops(), "pid", os.Getpid())
	return nil
}

func (in *instance) describeLoops() string {
	var parts []string
	for _, s := range in.group.Stats() {
		parts = append(parts, s.Backend)
	}
	return strings.Join(parts, ",")
}

func hostList(l *config.Listener) string {
	var hs []string
	for _, h := range l.Hosts {
		if h.Host == "" {
			hs = append(hs, "*")
		} else {
			hs = append(hs, h.Host)
		}
	}
	return strings.Join(hs, ",")
}

// accountEmail is the ACME account: the global email, else the first
// site's "tls EMAIL".
func accountEmail(cfg *config.Config) string {
	if cfg.Email != "" {
		return cfg.Email
	}
	for _, s := range cfg.Sites {
		if s.TLS.Mode == config.TLSACME && s.TLS.Email != "" {
			return s.TLS.Email
		}
	}
	return ""
}

// prepare resolves upstreams (off the loops), adds the sites'
// certificates and opens the access log. Nothing running changes.
func (in *instance) prepare(cfg *config.Config) (*plan, error) {
	p := &plan{cfg: cfg, upstreams: map[string]*proxy.Upstream{},
		sites: map[*config.Site]proxy.Config{}, siteUps: map[*config.Site][]*proxy.Upstream{}}
	var errs config.Errors
	for _, s := range cfg.Sites {
		var ups []*proxy.Upstream
		for _, name := range s.Proxy.Upstreams {
			up, err := in.upstream(p, name)
			if err != nil {
				errs = append(errs, &config.Error{Pos: s.Proxy.Pos, Msg: fmt.Sprintf("reverse_proxy: upstream %q: %v", name, err)})
				continue
			}
			ups = append(ups, up)
		}
		p.siteUps[s] = ups
		p.sites[s] = s.Proxy.ProxyConfig(ups)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if err := in.addCerts(cfg); err != nil {
		return nil, err
	}
	if cfg.Log != nil {
		if in.alog != nil && in.cfg != nil && reflect.DeepEqual(in.cfg.Log, cfg.Log) {
			p.alog = in.alog
		} else {
			l, err := accesslog.Open(cfg.Log.Format, cfg.Log.Output, accesslog.DefaultQueue)
			if err != nil {
				return nil, err
			}
			p.alog, p.newLog = l, true
		}
	}
	return p, nil
}

// upstream resolves name, reusing the running Upstream when it resolves
// to the same address, so counters and health survive a reload.
func (in *instance) upstream(p *plan, name string) (*proxy.Upstream, error) {
	if up := p.upstreams[name]; up != nil {
		return up, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	addrs, err := netpoll.ResolveTCP(ctx, name)
	cancel()
	if err != nil {
		return nil, err
	}
	up := in.upstreams[name]
	if up == nil || up.Addr != addrs[0] {
		up = &proxy.Upstream{Name: name, Addr: addrs[0]}
	}
	p.upstreams[name] = up
	return up, nil
}

// addCerts manages every site's certificate. Certificates are only ever
// added: one that a reload no longer names stays until the next start.
func (in *instance) addCerts(cfg *config.Config) error {
	var errs config.Errors
	add := func(s *config.Site, err error) {
		if err != nil {
			pos := s.TLS.Pos
			if pos.File == "" {
				pos = s.Pos
			}
			errs = append(errs, &config.Error{Pos: pos, Msg: "tls: " + strings.TrimPrefix(err.Error(), "tls: ")})
		}
	}
	ctx := context.Background()
	for _, s := range cfg.Sites {
		var names []string
		for _, a := range s.Addrs {
			if a.Host == "" {
				// A site for any host: clients that send no server name, or
				// an IP address, get the local CA's localhost certificate.
				names = append(names, "localhost", "127.0.0.1", "::1")
				continue
			}
			names = append(names, a.Host)
		}
		switch s.TLS.Mode {
		case config.TLSFiles:
			add(s, in.certs.AddFilePair(s.TLS.Cert, s.TLS.Key))
		case config.TLSInternal:
			add(s, in.certs.AddInternal(names...))
		case config.TLSACME:
			add(s, in.certs.AddACMEAsync(ctx, names...))
		default:
			var internal, public []string
			for _, n := range names {
				if pptls.UsesInternalByDefault(n) {
					internal = append(internal, n)
				} else {
					public = append(public, n)
				}
			}
			if len(internal) > 0 {
				add(s, in.certs.AddInternal(internal...))
			}
			if len(public) > 0 {
				add(s, in.certs.AddACMEAsync(ctx, public...))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// usesACME reports whether some site gets its certificate from ACME.
func usesACME(cfg *config.Config) bool {
	for _, s := range cfg.Sites {
		switch s.TLS.Mode {
		case config.TLSACME:
			return true
		case config.TLSAuto:
			for _, a := range s.Addrs {
				if a.Host != "" && !pptls.UsesInternalByDefault(a.Host) {
					return true
				}
			}
		}
	}
	return false
}

// newHandler builds one listener's per-loop handler: a router over the
// sites on that port, each a reverse proxy with this loop's pools and an
// observer with this loop's metric children.
func (in *instance) newHandler(p *plan, l *config.Listener) func(*netpoll.Loop) stream.Handler {
	return func(loop *netpoll.Loop) stream.Handler {
		r := proxy.NewRouter()
		bySite := map[*config.Site]stream.Handler{}
		for _, hs := range l.Hosts {
			h := bySite[hs.Site]
			if h == nil {
				pc := p.sites[hs.Site]
				obs := in.metrics.ForLoop(loop, observe.Upstreams(p.siteUps[hs.Site]))
				if p.alog != nil {
					pc.Observer = bothObservers{obs, p.alog}
				} else {
					pc.Observer = obs
				}
				h = proxy.NewHandler(loop, pc)
				bySite[hs.Site] = h
			}
			r.Handle(hs.Host, h)
		}
		return r
	}
}

// bothObservers feeds the metrics and the access log.
type bothObservers struct {
	m *metrics.LoopObserver
	l *accesslog.Logger
}

func (o bothObservers) Observe(r *observe.RequestLog) {
	o.m.Observe(r)
	o.l.Observe(r)
}

func (in *instance) newServer(cfg *config.Config, p *plan, l *config.Listener) (*server.Server, error) {
	sc := server.Config{
		Addr:             l.Addr,
		TLS:              in.tlsCfg,
		NewHandler:       in.newHandler(p, l),
		HandshakeTimeout: cfg.Timeouts.Handshake,
	}
	sc.H1.HeaderTimeout = cfg.Timeouts.ReadHeader
	sc.H1.IdleTimeout = cfg.Timeouts.Idle
	sc.H2.IdleTimeout = cfg.Timeouts.Idle
	srv, err := server.New(in.group, sc)
	if err != nil {
		return nil, &config.Error{Pos: l.Hosts[0].Site.Pos, Msg: fmt.Sprintf("listen %s: %v", l.Addr, err)}
	}
	return srv, nil
}

// commit makes p the running plan's bookkeeping: upstreams, metrics
// source, access log.
func (in *instance) commit(p *plan) {
	old := in.alog
	in.cfg, in.upstreams, in.alog = p.cfg, p.upstreams, p.alog
	if old != nil && old != p.alog {
		// Requests in flight on the old handlers may still finish into
		// the old log; give them the grace period.
		time.AfterFunc(p.cfg.GracePeriod, func() { old.Close() })
	}
	src := metrics.Source{Pollers: in.pollerSet, Group: in.group}
	for addr, srv := range in.servers {
		src.Servers = append(src.Servers, metrics.NamedServer{Listen: addr, Server: srv})
	}
	for _, up := range p.upstreams {
		src.Upstreams = append(src.Upstreams, up)
	}
	if l := p.alog; l != nil {
		src.AccessLogDropped = l.Dropped
	}
	in.metrics.SetSource(src)
}

func (in *instance) startAdmin(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("admin %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", in.metrics.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	in.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go in.admin.Serve(ln)
	in.log.Info("admin listening", "addr", ln.Addr().String(), "metrics", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// startHTTP answers ACME HTTP-01 challenges and redirects plain HTTP to
// HTTPS when some site uses ACME. Failing to listen is not fatal: the
// TLS-ALPN-01 challenge on the HTTPS port still works.
func (in *instance) startHTTP(cfg *config.Config) {
	if cfg.HTTPPort == 0 || !usesACME(cfg) {
		return
	}
	addr := net.JoinHostPort(cfg.DefaultBind, strconv.Itoa(cfg.HTTPPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		in.log.Warn("no HTTP listener for ACME challenges and redirects", "addr", addr, "error", err)
		return
	}
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
	in.http = &http.Server{Handler: in.certs.HTTPChallengeHandler(redirect), ReadHeaderTimeout: 10 * time.Second}
	go in.http.Serve(ln)
	in.log.Info("HTTP listening for ACME challenges and redirects", "addr", ln.Addr().String())
}

// serve waits for signals: SIGHUP reloads, SIGINT and SIGTERM drain and
// return.
func (in *instance) serve() error {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	for s := range sig {
		if s == syscall.SIGHUP {
			in.reload()
			continue
		}
		return in.shutdown(s)
	}
	return nil
}

// reload re-reads the Caddyfile. On any error the running configuration
// stays as it is. Otherwise every kept listener gets new per-loop handlers
// (new requests use them; requests in flight and open connections are not
// touched), new listen addresses get servers, and servers whose address
// is gone drain within the grace period.
func (in *instance) reload() {
	in.log.Info("reloading", "config", in.file)
	fail := func(err error) {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				in.log.Error("reload failed, keeping the running configuration", "error", e.Error())
			}
			return
		}
		in.log.Error("reload failed, keeping the running configuration", "error", err.Error())
	}
	cfg, err := loadConfig(in.file)
	if err != nil {
		fail(err)
		return
	}
	p, err := in.prepare(cfg)
	if err != nil {
		fail(err)
		return
	}
	listeners := cfg.Listeners()
	added := map[string]*server.Server{}
	for _, l := range listeners {
		if in.servers[l.Addr] != nil {
			continue
		}
		srv, err := in.newServer(cfg, p, l)
		if err != nil {
			for _, s := range added {
				s.Close()
			}
			if p.newLog {
				p.alog.Close()
			}
			fail(err)
			return
		}
		added[l.Addr] = srv
	}
	keep := map[string]bool{}
	for _, l := range listeners {
		keep[l.Addr] = true
		if srv := in.servers[l.Addr]; srv != nil {
			srv.SetHandler(in.newHandler(p, l))
		}
	}
	for addr, srv := range added {
		in.servers[addr] = srv
		in.log.Info("serving", "listen", srv.Addr().String())
	}
	for addr, srv := range in.servers {
		if keep[addr] {
			continue
		}
		delete(in.servers, addr)
		in.log.Info("listener removed, draining", "listen", addr, "grace", cfg.GracePeriod)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.GracePeriod)
			defer cancel()
			srv.Shutdown(ctx)
		}()
	}
	in.warnRestart(cfg)
	if p.alog != nil && !p.newLog {
		if err := p.alog.Reopen(); err != nil {
			in.log.Error("access log reopen failed, still writing the old file", "error", err)
		}
	}
	in.commit(p)
	in.log.Info("reloaded", "config", in.file, "sites", len(cfg.Sites), "listeners", len(listeners))
}

// warnRestart names the global options a reload cannot apply.
func (in *instance) warnRestart(cfg *config.Config) {
	old := in.cfg
	for _, o := range []struct {
		name     string
		was, now any
	}{
		{"poller", old.Pollers, cfg.Pollers},
		{"loops", old.Loops, cfg.Loops},
		{"admin", old.Admin, cfg.Admin},
		{"email", old.Email, cfg.Email},
		{"acme_ca", old.ACMECA, cfg.ACMECA},
		{"storage", old.Storage, cfg.Storage},
		{"http_port", old.HTTPPort, cfg.HTTPPort},
		{"timeouts", old.Timeouts, cfg.Timeouts},
	} {
		if !reflect.DeepEqual(o.was, o.now) {
			in.log.Warn("option changed; it applies after a restart (timeouts: to new listeners only)", "option", o.name)
		}
	}
}

// shutdown drains every server within the grace period.
func (in *instance) shutdown(s os.Signal) error {
	grace := in.cfg.GracePeriod
	in.log.Info("shutting down: draining connections", "signal", s.String(), "grace", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var late []string
	for addr, srv := range in.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				late = append(late, addr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	in.servers = nil
	in.stop()
	if len(late) > 0 {
		return fmt.Errorf("connections on %s still open after %v were closed", strings.Join(late, ", "), grace)
	}
	in.log.Info("stopped")
	return nil
}

// stop releases everything; servers still open are closed at once.
func (in *instance) stop() {
	for _, srv := range in.servers {
		srv.Close()
	}
	if in.admin != nil {
		in.admin.Close()
	}
	if in.http != nil {
		in.http.Close()
	}
	if in.alog != nil {
		in.alog.Close()
	}
	if in.certs != nil {
		in.certs.Close()
	}
	if in.group != nil {
		r := running{group: in.group, flags: in.flags}
		r.stop()
	}
}
