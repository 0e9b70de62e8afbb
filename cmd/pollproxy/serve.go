package main

import (
	stdtls "crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pollproxy/pollproxy/cmd/pollproxy/internal/sdnotify"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/config"
	pptls "github.com/pollproxy/pollproxy/tls"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// loopFlags are the flags every serving command shares.
type loopFlags struct {
	poller string
	loops  int
	stats  bool
}

func (f *loopFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.poller, "poller", envOr("POLLPROXY_POLLER", netpoll.Auto),
		// Built, not Available: starting must not probe a backend nobody
		// named (`pollproxy pollers` says which work here).
		"poller backend: "+strings.Join(append([]string{netpoll.Auto}, netpoll.Built()...), ", ")+
			" (which work here: pollproxy pollers), or a comma list to alternate across loops (A/B); env POLLPROXY_POLLER")
	fs.IntVar(&f.loops, "loops", 0, "event loops (0: one per CPU)")
	fs.BoolVar(&f.stats, "stats", false, "print each loop's poller counters on exit")
}

func (f *loopFlags) backends() ([]string, error) {
	var out []string
	for _, name := range strings.Split(f.poller, ",") {
		name = strings.TrimSpace(name)
		if err := netpoll.ValidName(name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// serveUntilSignal waits for signals: SIGINT and SIGTERM shut the instance
// down gracefully and return nil, also when grace_period ended with
// connections open (Shutdown logs them). With a Caddyfile (dev is nil) SIGHUP
// reloads it and the instance logs; the development commands, built from
// flags, do not reload and print dev's line when they start draining.
// Under systemd (Type=notify) it reports each step through sdnotify.
// A send on changed (run --watch) reloads as SIGHUP does.
func serveUntilSignal(in *app.Instance, lf loopFlags, dev *config.Config, changed <-chan struct{}) error {
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if dev == nil {
		sigs = append(sigs, syscall.SIGHUP)
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, sigs...)
	defer signal.Stop(sig)
	// Ready only now: the listeners are up, and a SIGHUP systemd sends
	// from here on is caught rather than ending the process.
	notify(sdnotify.Ready(""))
	for {
		var s os.Signal
		select {
		case s = <-sig:
		case <-changed:
			s = syscall.SIGHUP
		}
		if s == syscall.SIGHUP {
			notify(sdnotify.Reloading())
			// The status line replaces the previous one, so a failed
			// reload's message goes away with the next good reload.
			status := "configuration reloaded"
			if err := in.Reload(); err != nil { // it logs the error and keeps running
				status = "reload failed, running the previous configuration: " + err.Error()
			}
			notify(sdnotify.Ready(status))
			continue
		}
		notify(sdnotify.Stopping())
		if dev != nil {
			fmt.Fprintf(os.Stderr, "pollproxy: %v: draining connections (up to %v)\n", s, dev.GracePeriod)
		}
		err := in.Shutdown()
		if errors.Is(err, app.ErrGraceEnded) {
			// Cutting what outlives grace_period is the stop the operator
			// configured, not a failure: it is logged (printed by the
			// development commands, which log nothing), and the status is
			// 0, as Caddy's and nginx's are.
			if dev != nil {
				fmt.Fprintf(os.Stderr, "pollproxy: %v\n", err)
			}
			err = nil
		}
		if lf.stats {
			for _, s := range in.LoopStats() {
				fmt.Fprintf(os.Stderr, "loop %d %s: waits=%d calls=%d events=%d wakeups=%d adds=%d mods=%d dels=%d yields=%d\n",
					s.Loop, s.Backend, s.Waits, s.Calls, s.Events, s.Wakeups, s.Adds, s.Mods, s.Dels, s.Yields)
			}
		}
		return err
	}
}

// notify reports a failed notification: systemd would then wait for a
// readiness that never comes, so the operator should see why.
func notify(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "pollproxy: %v\n", err)
	}
}

// devConfig is the configuration of a development command: one site for
// any host on a, with the loop flags' pollers and loops.
func devConfig(a siteAddr, lf loopFlags) (*config.Config, error) {
	backends, err := lf.backends()
	if err != nil {
		return nil, err
	}
	return &config.Config{
		Pollers:     backends,
		Loops:       lf.loops,
		DefaultBind: a.bind,
		GracePeriod: config.DefaultGracePeriod,
		Sites:       []*config.Site{{Addrs: []config.Address{{Original: a.hostport(), Port: a.port}}}},
	}, nil
}

// startDev starts a development command's instance and returns it with
// the URL it serves (with the port it bound, for port 0).
func startDev(cfg *config.Config, a siteAddr, opts app.Options) (*app.Instance, string, error) {
	in, err := app.Start(cfg, opts)
	if err != nil {
		return nil, "", err
	}
	addr, _ := in.Addr(cfg.Listeners()[0].Addr)
	return in, fmt.Sprintf("https://%s:%d/", a.urlHost(), addr.Port()), nil
}

// describeLoops is "N loops (backend,backend...)".
func describeLoops(in *app.Instance) string {
	b := in.Backends()
	return fmt.Sprintf("%d loops (%s)", len(b), strings.Join(b, ","))
}

// certificate returns the TLS config: the file pair when given, otherwise
// certificates from pollproxy's local CA (kept in the certificate storage,
// $POLLPROXY_DATA or the user's config directory, and renewed while the
// command runs) for localhost, 127.0.0.1, ::1 and hosts. The path returned
// is the PEM file to give curl --cacert: the certificate itself for a file
// pair, the local CA's root otherwise ("pollproxy trust" installs it).
func certificate(certFile, keyFile string, hosts []string) (*stdtls.Config, string, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, "", errors.New("--cert and --key go together")
		}
		cert, err := pptls.LoadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, "", err
		}
		return pptls.ServerConfig([]stdtls.Certificate{cert}), certFile, nil
	}
	// Clients send no SNI for an IP address; when the listener's address
	// matches no certificate (a wildcard address), serve 127.0.0.1's.
	certs, err := tlscerts.New(tlscerts.Config{DefaultServerName: "127.0.0.1"})
	if err != nil {
		return nil, "", err
	}
	if err := certs.AddInternal(devNames(hosts)...); err != nil {
		certs.Close()
		return nil, "", err
	}
	root, err := certs.RootFile()
	if err != nil {
		certs.Close()
		return nil, "", err
	}
	// certs lives as long as the process: it renews the short-lived leaves.
	return certs.TLSConfig(), root, nil
}
