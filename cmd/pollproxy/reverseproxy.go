package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/accesslog"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/route"
)

func init() {
	addCommand("reverse-proxy", "proxy HTTPS (h2, HTTP/1.1) on --from to HTTP/1.1 upstreams on --to", func(args []string) error {
		return runReverseProxy("reverse-proxy", args, nil)
	})
}

// runReverseProxy parses the reverse-proxy flags and serves until a signal.
// announce, when set, is called once serving with the URL and certificate.
func runReverseProxy(name string, args []string, announce func(url, certPath string)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The names, short forms and meanings of caddy reverse-proxy's flags.
	var to, headerUp, headerDown listFlag
	from := fs.String("from", "localhost:8443", "the site to serve over HTTPS, [https://]host[:port] (443 without a port); localhost and *.localhost bind loopback, an IP binds itself, another name every interface")
	fs.StringVar(from, "f", *from, "short for --from")
	fs.Var(&to, "to", "upstream HTTP/1.1 address(es) as in a Caddyfile's reverse_proxy: host:port, :port, http://host[:port], unix//path.sock; repeat the flag or separate with commas (required)")
	fs.Var(&to, "t", "short for --to")
	changeHost := fs.Bool("change-host-header", false, "send the upstream's host:port as Host instead of the client's (header-up \"Host: {upstream_hostport}\")")
	fs.BoolVar(changeHost, "c", false, "short for --change-host-header")
	fs.Var(&headerUp, "header-up", "set a request field for the upstream, \"Field: value\" (repeatable)")
	fs.Var(&headerUp, "H", "short for --header-up")
	fs.Var(&headerDown, "header-down", "set a response field for the client, \"Field: value\" (repeatable)")
	fs.Var(&headerDown, "d", "short for --header-down")
	accessLog := fs.Bool("access-log", false, "write an access log (JSON lines on stderr, as Caddy's)")
	debug := fs.Bool("debug", false, "log at debug level")
	fs.BoolVar(debug, "v", false, "short for --debug")
	// Accepted for Caddy's sake, with Caddy's meaning already true here:
	// the development commands take certificates from the local CA and
	// bind no plain-HTTP port to redirect from.
	fs.Bool("internal-certs", false, "certificates from the local CA (always so here)")
	fs.Bool("i", false, "short for --internal-certs")
	fs.Bool("disable-redirects", false, "no HTTP to HTTPS redirect (none is served here)")
	fs.Bool("r", false, "short for --disable-redirects")
	insecure := fs.Bool("insecure", false, "skip verifying the certificates of https:// upstreams (testing only)")
	certFile := fs.String("cert", "", "certificate file (PEM); default: one from pollproxy's local CA (see pollproxy trust)")
	keyFile := fs.String("key", "", "private key file (PEM)")
	policy := fs.String("lb", string(proxy.RoundRobin), "load balancing across upstreams: round_robin, least_conn, first")
	maxIdle := fs.Int("max-idle", 0, "kept-alive idle connections per upstream per loop (0: as many as -max-conns)")
	maxConns := fs.Int("max-conns", 256, "connections per upstream per loop; requests beyond wait in a bounded queue")
	idle := fs.Duration("idle-timeout", 0, "close a client connection with no request in flight after this long (0: 60s for HTTP/1.1, 2m for HTTP/2)")
	var lf loopFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(to) == 0 {
		fs.Usage()
		return fmt.Errorf("--to is required, e.g. --to 127.0.0.1:8080")
	}
	if !proxy.ValidPolicy(proxy.Policy(*policy)) {
		return fmt.Errorf("--lb %q: want round_robin, least_conn or first", *policy)
	}
	upstreams, https, err := upstreamList(to)
	if err != nil {
		return err
	}
	site, err := parseFrom(*from)
	if err != nil {
		return err
	}
	cfg, err := devConfig(site, lf)
	if err != nil {
		return err
	}
	if *idle < 0 {
		return fmt.Errorf("--idle-timeout %v: want a positive duration", *idle)
	}
	cfg.Timeouts.Idle = *idle
	rp := config.Proxy{Upstreams: upstreams, Policy: proxy.Policy(*policy), KeepAlive: *maxIdle, MaxConns: *maxConns}
	if https {
		// As caddy reverse-proxy: https:// upstreams speak TLS, verified
		// unless --insecure (which changes nothing for http ones).
		rp.TLS = &config.UpstreamTLS{InsecureSkipVerify: *insecure}
	}
	if *changeHost {
		headerUp = append(headerUp, "Host: {upstream_hostport}")
	}
	if rp.HeaderUp, err = headerFlags("--header-up", headerUp, route.ParseUpstreamHeaderOp); err != nil {
		return err
	}
	if err := route.CheckUpstreamOps(rp.HeaderUp); err != nil {
		return fmt.Errorf("--header-up: %w", err)
	}
	if rp.HeaderDown, err = headerFlags("--header-down", headerDown, func(args []string) (route.HeaderOp, error) {
		return route.ParseHeaderOp(args, true)
	}); err != nil {
		return err
	}
	cfg.Sites[0].Proxy = rp
	if *accessLog {
		// caddy reverse-proxy --access-log: the site's access log, Caddy's
		// json on stderr.
		cfg.Sites[0].Logs = []*config.Log{{Format: "json", Output: accesslog.Output{Kind: "stderr"}}}
	}
	if *debug {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	tlsCfg, certPath, err := certificate(*certFile, *keyFile, []string{site.name})
	if err != nil {
		return err
	}
	in, url, err := startDev(cfg, site, app.Options{TLS: tlsCfg})
	if err != nil {
		return err
	}
	fmt.Printf("pollproxy: %s -> %s on %s\n", url, strings.Join(upstreams, ","), describeLoops(in))
	if *certFile == "" {
		fmt.Printf("local CA root (for curl --cacert): %s\n", certPath)
	}
	if announce != nil {
		announce(url, certPath)
	}
	return serveUntilSignal(in, lf, cfg, nil)
}

// upstreamList reads every --to (each may list several, comma-separated)
// as a Caddyfile's reverse_proxy does; the instance resolves the names.
// https reports https:// upstreams, which must then be all of them.
func upstreamList(to []string) (ups []string, https bool, err error) {
	common := ""
	for _, v := range strings.Split(strings.Join(to, ","), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		addrs, scheme, err := config.UpstreamAddresses(v)
		if err != nil {
			return nil, false, fmt.Errorf("--to: %w", err)
		}
		if scheme == "" {
			scheme = "http"
		}
		if scheme == "h2c" {
			return nil, false, fmt.Errorf("--to %s: h2c:// upstreams are for a Caddyfile's reverse_proxy (the command speaks HTTP/1.1 to its upstreams)", v)
		}
		if common != "" && scheme != common {
			return nil, false, fmt.Errorf("--to: all upstreams must use the same scheme; expecting '%s://' but got '%s://'", common, scheme)
		}
		common = scheme
		ups = append(ups, addrs...)
	}
	if len(ups) == 0 {
		return nil, false, fmt.Errorf("no upstream in --to %q", strings.Join(to, ","))
	}
	return ups, common == "https", nil
}

// headerFlags reads "Field: value" flags as caddy reverse-proxy does: each
// sets the field.
func headerFlags(name string, vals []string, parse func([]string) (route.HeaderOp, error)) ([]route.HeaderOp, error) {
	var ops []route.HeaderOp
	for _, h := range vals {
		k, v, found := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !found || k == "" || v == "" {
			return nil, fmt.Errorf("%s %q: want \"Field: value\"", name, h)
		}
		op, err := parse([]string{k, v})
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, h, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// listFlag is a flag given any number of times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
