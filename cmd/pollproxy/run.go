package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/pollproxy/pollproxy/proxy/app"
)

func init() {
	addCommand("run", "serve the sites of a Caddyfile (SIGHUP or --watch reloads it, SIGTERM drains and exits)", runRun)
}

func runRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	file := fs.String("config", "Caddyfile", "the Caddyfile to serve")
	watch := fs.Bool("watch", false, "reload when the Caddyfile or a file it imports changes (as SIGHUP does)")
	var lf loopFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg, err := app.Load(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return errReported
	}
	opts := app.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), Version: version}
	// --poller (or POLLPROXY_POLLER) overrides the Caddyfile's poller line,
	// --loops its loops line.
	if set["poller"] || os.Getenv("POLLPROXY_POLLER") != "" {
		if opts.Pollers, err = lf.backends(); err != nil {
			return err
		}
	}
	if set["loops"] {
		opts.Loops, opts.LoopsSet = lf.loops, true
	}
	in, err := app.Start(cfg, opts)
	if err != nil {
		return err
	}
	var changed chan struct{}
	if *watch {
		changed = make(chan struct{})
		stop := make(chan struct{})
		defer close(stop)
		go watchConfig(*file, opts.Logger, changed, stop)
	}
	return serveUntilSignal(in, lf, nil, changed)
}
