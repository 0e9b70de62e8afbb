package app

import (
	"context"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// Load parses the Caddyfile at file and checks the files it names
// (certificates). The error, when not nil, names the file and line.
func Load(file string) (*config.Config, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckFiles(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Options are what an instance takes from its caller rather than from the
// configuration.
type Options struct {
	// Logger receives the instance's logs (start, reload, shutdown) and
	// certmagic's. Nil: no instance logs, and certmagic's warnings go to
	// slog.Default().
	Logger *slog.Logger

	// Version is the build's version, for the pollproxy_build_info metric.
	Version string

	// Pollers, when not empty, replaces the configuration's poller option,
	// and Loops replaces its loops option when LoopsSet: the command
	// line's overrides. A reload still compares against the configuration.
	Pollers  []string
	Loops    int
	LoopsSet bool

	// TLS, when set, serves every listener with this TLS configuration
	// instead of certificates managed from the sites' tls options: the
	// development commands bring a file pair or a local CA certificate.
	TLS *stdtls.Config

	// NewHandler, when set, serves every site with the handler it returns
	// for each loop instead of the site's reverse proxy (the static
	// command's fixed body).
	NewHandler func(*netpoll.Loop) stream.Handler

	// EditCerts, when set, adjusts the certificate manager's settings
	// before it starts: tests point ACME at their CA's roots and ports.
	EditCerts func(*tlscerts.Config)
}

// Instance is a running configuration. Its methods are not safe for
// concurrent use; one goroutine (the command's signal loop) drives it.
type Instance struct {
	opts Options
	log  *slog.Logger

	cfg       *config.Config
	group     *netpoll.Group
	pollerSet string     // the process's backends, "epoll" or "epoll,poll"
	pollerMu  sync.Mutex // guards pollerSet: POST /poller switches from the admin listener
	certs     *tlscerts.Manager
	tlsCfg    *stdtls.Config
	metrics   *metrics.Metrics // nil without an admin listener
	ab        *ab.Sampler      // the A/B samples; nil without an admin listener
	admin     *http.Server
	http      *http.Server                   // ACME HTTP-01 answers and redirects to HTTPS
	redirects atomic.Pointer[map[string]int] // the names http redirects, with their HTTPS ports
	servers   map[string]*server.Server      // by configured listen address
	upstreams map[string]*upstream.Upstream
	watch     upstreamWatch   // re-resolution off the loops (upstreams.go)
	running   *plan           // the plan serving now, whose handlers the next reload retires
	upTLS     upstreamTLS     // handshakes and failure log of HTTPS upstreams (upstreamtls.go)
	shutdown  stream.Shutdown // when a stop with shutdown_delay closes the servers, which the routes' placeholders read
	closed    bool
}

// Start makes cfg serve. On error nothing is left running.
func Start(cfg *config.Config, opts Options) (*Instance, error) {
	if opts.Logger != nil && cfg.TLSOptions.Debug {
		// debug: the instance's logs and certmagic's at every level.
		opts.Logger = slog.New(debugHandler{opts.Logger.Handler()})
	}
	in := &Instance{opts: opts, log: opts.Logger}
	if in.log == nil {
		in.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := in.start(cfg); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

func (in *Instance) start(cfg *config.Config) error {
	backends, loops := cfg.Pollers, cfg.Loops
	if len(in.opts.Pollers) > 0 {
		backends = in.opts.Pollers
	}
	if in.opts.LoopsSet {
		loops = in.opts.Loops
	}
	g, err := netpoll.NewGroup(loops, backends)
	if err != nil {
		return err
	}
	in.group = g
	if lg := in.opts.Logger; lg != nil && autoPoller(backends) {
		name, why := netpoll.AutoChoice()
		lg.Info("poller auto", "picks", name, "why", why)
	}
	if lg := in.opts.Logger; lg != nil {
		// A panic a loop contained is logged with the instance's logs,
		// off the loop (netpoll.LogPanic blocks on the log's writer).
		for _, l := range g.Loops() {
			l.OnPanic(func(r netpoll.Recovered) { go netpoll.LogPanic(lg, r) })
		}
	}
	g.Start()
	in.pollerSet = backendSet(in.Backends())
	if cfg.Admin != "" {
		// Without an admin listener nobody reads the metrics, so the
		// loops do not keep them.
		in.metrics = metrics.New(in.opts.Version)
		in.startAB(cfg, backends)
	}
	in.servers = map[string]*server.Server{}
	in.upstreams = map[string]*upstream.Upstream{}

	if in.opts.TLS != nil {
		in.tlsCfg = in.opts.TLS
	} else {
		storage, err := in.certStorage(cfg)
		if err != nil {
			return err
		}
		cc, err := certsConfig(cfg)
		if err != nil {
			return err
		}
		cc.Storage, cc.Logger = storage, in.opts.Logger
		if in.opts.EditCerts != nil {
			in.opts.EditCerts(&cc)
		}
		in.certs, err = tlscerts.New(cc)
		if err != nil {
			return err
		}
		in.tlsCfg = in.certs.TLSConfig()
	}

	p, err := in.prepare(cfg)
	if err != nil {
		return err
	}
	if err := in.setConnPolicies(p); err != nil {
		p.logs.abandon()
		return err
	}
	for _, l := range cfg.Listeners() {
		srv, err := in.newServer(cfg, p, l)
		if err != nil {
			p.logs.abandon()
			return err
		}
		in.servers[l.Addr] = srv
	}
	in.commit(p)
	if cfg.Admin != "" {
		if err := in.startAdmin(cfg); err != nil {
			return err
		}
	}
	in.startHTTP(cfg)
	for _, l := range cfg.Listeners() {
		in.log.Info("serving", append([]any{"listen", in.servers[l.Addr].Addr().String(), "hosts", hostList(l)}, serverName(cfg, l.Addr)...)...)
	}
	in.log.Info("pollproxy running", "config", cfg.File, "loops", len(g.Loops()), "pollers", strings.Join(in.Backends(), ","), "pid", os.Getpid())
	return nil
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

// autoPoller reports whether some loop's backend is left to "auto".
func autoPoller(backends []string) bool {
	return len(backends) == 0 || slices.Contains(backends, netpoll.Auto) || slices.Contains(backends, "")
}

// Backends returns each loop's poller backend, in loop order.
func (in *Instance) Backends() []string {
	var out []string
	for _, s := range in.group.Stats() {
		out = append(out, s.Backend)
	}
	return out
}

// LoopStats returns every loop's poller counters; they stay readable
// after Shutdown and Close.
func (in *Instance) LoopStats() []netpoll.Stats { return in.group.Stats() }

// Addr returns the address a listener is bound to (its real port when the
// configuration asked for port 0), by its configured listen address as
// config.Listener.Addr spells it.
func (in *Instance) Addr(listen string) (netip.AddrPort, bool) {
	srv := in.servers[listen]
	if srv == nil {
		return netip.AddrPort{}, false
	}
	return srv.Addr(), true
}

// Reload re-reads the Caddyfile the running configuration came from and
// applies it: see the package documentation. On any error, which it also
// logs with its file:line, the running configuration stays as it is.
func (in *Instance) Reload() error {
	file := in.cfg.File
	in.log.Info("reloading", "config", file)
	err := in.reload(file)
	if err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				in.log.Error("reload failed, keeping the running configuration", "error", e.Error())
			}
		} else {
			in.log.Error("reload failed, keeping the running configuration", "error", err.Error())
		}
	}
	return err
}

func (in *Instance) reload(file string) error {
	if file == "" {
		return errors.New("the configuration was not read from a file")
	}
	cfg, err := Load(file)
	if err != nil {
		return err
	}
	p, err := in.prepare(cfg)
	if err != nil {
		return err
	}
	listeners := cfg.Listeners()
	added := map[string]*server.Server{}
	for _, l := range listeners {
		if srv := in.servers[l.Addr]; srv != nil && srv.Cleartext() != l.Cleartext {
			p.logs.abandon()
			return &config.Error{Pos: l.Hosts[0].Site.Pos, Msg: fmt.Sprintf("listener %s changes between HTTP and HTTPS: that takes a restart", l.Addr)}
		}
	}
	if err := in.setConnPolicies(p); err != nil {
		p.logs.abandon()
		return err
	}
	for _, l := range listeners {
		if in.servers[l.Addr] != nil {
			continue
		}
		srv, err := in.newServer(cfg, p, l)
		if err != nil {
			for _, s := range added {
				s.Close()
			}
			p.logs.abandon()
			// The running configuration's policies again.
			in.setConnPolicies(in.running)
			return err
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
		in.log.Info("serving", append([]any{"listen", srv.Addr().String()}, serverName(cfg, addr)...)...)
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
	retire(in.running, p)
	if in.ab != nil {
		// The A/B history is the process's and carries on; the mark
		// shows where the configuration changed under it.
		in.ab.Mark("reload")
	}
	in.reloadPollers(in.cfg.Pollers, cfg.Pollers)
	in.reloadHTTP(cfg)
	in.warnRestart(cfg)
	if err := p.logs.reopen(); err != nil {
		in.log.Error("access log reopen failed, still writing the old file", "error", err)
	}
	in.commit(p)
	in.log.Info("reloaded", "config", file, "sites", len(cfg.Sites), "listeners", len(listeners))
	return nil
}

// warnRestart names the global options a reload cannot apply.
func (in *Instance) warnRestart(cfg *config.Config) {
	old := in.cfg
	for _, o := range []struct {
		name     string
		was, now any
	}{
		{"loops", old.Loops, cfg.Loops},
		{"admin", old.Admin, cfg.Admin},
		{"admin", old.AdminOrigins, cfg.AdminOrigins},
		{"admin", old.AdminEnforceOrigin, cfg.AdminEnforceOrigin},
		{"ab_interval", old.ABInterval, cfg.ABInterval},
		{"ab_rotate", old.ABRotate, cfg.ABRotate},
		{"email", old.Email, cfg.Email},
		{"acme_ca", old.ACMECA, cfg.ACMECA},
		{"storage", old.Storage, cfg.Storage},
		{"storage", old.Redis, cfg.Redis},
		{"http_port", old.HTTPPort, cfg.HTTPPort},
		{"https_port", old.HTTPSPort, cfg.HTTPSPort},
		{"auto_https", old.AutoHTTPS, cfg.AutoHTTPS},
		{"servers protocols", old.H2C, cfg.H2C},
		{"timeouts", old.Timeouts, cfg.Timeouts},
		{"listener_wrappers", old.ProxyProtocol, cfg.ProxyProtocol},
		{"servers ADDR", serverBlocks(old.Servers), serverBlocks(cfg.Servers)},
	} {
		if !reflect.DeepEqual(o.was, o.now) {
			in.log.Warn("option changed; it applies after a restart (timeouts: to new listeners only)", "option", o.name)
		}
	}
}

// serverBlocks are the servers ADDR blocks' options without their
// positions, which a reload may move without changing anything.
func serverBlocks(blocks []*config.ServerOptions) []config.ServerOptions {
	out := make([]config.ServerOptions, len(blocks))
	for i, b := range blocks {
		out[i] = *b
		out[i].Pos = config.Pos{}
	}
	return out
}

// ErrGraceEnded is what Shutdown returns, wrapped, when grace_period ended
// with connections still open and they were closed: the stop completed as
// configured, and the error says what it cut.
var ErrGraceEnded = errors.New("grace period ended")

// Shutdown stops accepting, sends GOAWAY and drains every listener within
// the configuration's grace_period, closes the connections still open at
// the deadline (it logs a warning and returns ErrGraceEnded naming their
// listeners) and releases everything.
func (in *Instance) Shutdown() error {
	if d := in.cfg.TLSOptions.ShutdownDelay; d > 0 {
		// shutdown_delay: serve as before for a while, so that a load
		// balancer's health checks notice before connections drain.
		in.shutdown.Schedule(time.Now().Add(d))
		in.log.Info("shutdown delayed", "delay", d)
		time.Sleep(d)
	}
	grace := in.cfg.GracePeriod
	in.log.Info("shutting down: draining connections", "grace", grace)
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
	in.Close()
	if len(late) > 0 {
		sort.Strings(late)
		in.log.Warn("stopped: grace period ended, connections still open were closed", "grace", grace, "listeners", strings.Join(late, ","))
		return fmt.Errorf("connections on %s still open after %v were closed: %w", strings.Join(late, ", "), grace, ErrGraceEnded)
	}
	in.log.Info("stopped")
	return nil
}

// Close releases everything at once: listeners and their connections, the
// admin and HTTP listeners, the access log, certificate renewal and the
// loops.
func (in *Instance) Close() {
	if in.closed {
		return
	}
	in.closed = true
	in.watch.close()
	for _, srv := range in.servers {
		srv.Close()
	}
	in.servers = nil
	// The proxies' idle origin connections: a server closes only the
	// handler it serves now, not those a reload retired with requests
	// still in flight, nor a proxy behind a site's routes.
	closeHandlers(in.running)
	if in.admin != nil {
		in.admin.Close()
	}
	if in.ab != nil {
		in.ab.Stop()
	}
	if in.http != nil {
		in.http.Close()
	}
	if in.running != nil {
		in.running.logs.closeAll()
	}
	if in.certs != nil {
		in.certs.Close()
	}
	// Handshakes to origins end first: a worker's last notify posts to its
	// loop, which must still be there to take it.
	in.upTLS.close()
	if in.group != nil {
		in.group.Stop()
		in.group.Close()
	}
}
