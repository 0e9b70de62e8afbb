package main

import (
	"context"
	stdtls "crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/stream"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// loopFlags are the flags every serving command shares.
type loopFlags struct {
	poller string
	loops  int
	stats  bool
}

func (f *loopFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.poller, "poller", envOr("POLLPROXY_POLLER", netpoll.Auto),
		"poller backend: "+strings.Join(append([]string{netpoll.Auto}, netpoll.Available()...), ", ")+
			", or a comma list to alternate across loops (A/B); env POLLPROXY_POLLER")
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
	certs, err := pptls.NewCerts(pptls.CertConfig{DefaultServerName: "127.0.0.1"})
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

// hostsOf lists the names a listen address should be valid for.
func hostsOf(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return []string{"localhost"}
	}
	return []string{host}
}

// running is a started group with its server.
type running struct {
	group *netpoll.Group
	srv   *server.Server
	flags loopFlags
}

func start(lf loopFlags, addr string, tlsCfg *stdtls.Config, newHandler func(*netpoll.Loop) stream.Handler) (*running, error) {
	backends, err := lf.backends()
	if err != nil {
		return nil, err
	}
	g, err := netpoll.NewGroup(lf.loops, backends)
	if err != nil {
		return nil, err
	}
	g.Start()
	srv, err := server.New(g, server.Config{Addr: addr, TLS: tlsCfg, NewHandler: newHandler})
	if err != nil {
		g.Stop()
		g.Close()
		return nil, err
	}
	return &running{group: g, srv: srv, flags: lf}, nil
}

func (r *running) describeLoops() string {
	var parts []string
	for _, s := range r.group.Stats() {
		parts = append(parts, s.Backend)
	}
	return fmt.Sprintf("%d loops (%s)", len(parts), strings.Join(parts, ","))
}

// waitForSignal serves until SIGINT or SIGTERM, then shuts down gracefully
// within the grace period.
func (r *running) waitForSignal(grace time.Duration) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "pollproxy: %v: draining connections (up to %v)\n", s, grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	r.stop()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("connections still open after %v were closed", grace)
	}
	return err
}

func (r *running) stop() {
	if r.flags.stats {
		for _, s := range r.group.Stats() {
			fmt.Fprintf(os.Stderr, "loop %d %s: waits=%d events=%d wakeups=%d adds=%d mods=%d dels=%d\n",
				s.Loop, s.Backend, s.Waits, s.Events, s.Wakeups, s.Adds, s.Mods, s.Dels)
		}
	}
	r.group.Stop()
	r.group.Close()
}
