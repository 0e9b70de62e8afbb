package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/config"
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
	from := fs.String("from", "localhost:8443", "the site to serve over HTTPS, [https://]host[:port] (443 without a port); localhost and *.localhost bind loopback, an IP binds itself, another name every interface")
	to := fs.String("to", "", "upstream HTTP/1.1 address(es) as in a Caddyfile's reverse_proxy: host:port, :port, http://host[:port], unix//path.sock; comma-separated (required)")
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
	if *to == "" {
		fs.Usage()
		return fmt.Errorf("--to is required, e.g. --to 127.0.0.1:8080")
	}
	if !proxy.ValidPolicy(proxy.Policy(*policy)) {
		return fmt.Errorf("--lb %q: want round_robin, least_conn or first", *policy)
	}
	upstreams, err := upstreamList(*to)
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
	cfg.Sites[0].Proxy = config.Proxy{Upstreams: upstreams, Policy: proxy.Policy(*policy), KeepAlive: *maxIdle, MaxConns: *maxConns}
	tlsCfg, certPath, err := certificate(*certFile, *keyFile, []string{site.name})
	if err != nil {
		return err
	}
	in, url, err := startDev(cfg, site, app.Options{TLS: tlsCfg})
	if err != nil {
		return err
	}
	fmt.Printf("pollproxy: %s -> %s on %s\n", url, *to, describeLoops(in))
	if *certFile == "" {
		fmt.Printf("local CA root (for curl --cacert): %s\n", certPath)
	}
	if announce != nil {
		announce(url, certPath)
	}
	return serveUntilSignal(in, lf, cfg)
}

// upstreamList splits the --to list and reads each entry as a Caddyfile's
// reverse_proxy does; the instance resolves the names.
func upstreamList(list string) ([]string, error) {
	var ups []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		addrs, err := config.UpstreamAddresses(v)
		if err != nil {
			return nil, fmt.Errorf("--to: %w", err)
		}
		ups = append(ups, addrs...)
	}
	if len(ups) == 0 {
		return nil, fmt.Errorf("no upstream in %q", list)
	}
	return ups, nil
}
