package main

import (
	"bytes"
	"flag"
	"fmt"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

func init() {
	addCommand("static", "serve a fixed body over HTTPS (tests and benchmarks of the front ends)", runStatic)
}

func runStatic(args []string) error {
	fs := flag.NewFlagSet("static", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8443", "address to listen on")
	size := fs.Int("size", 1024, "response body size in bytes")
	certFile := fs.String("cert", "", "certificate file (PEM); default: one from pollproxy's local CA")
	keyFile := fs.String("key", "", "private key file (PEM)")
	var lf loopFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	site, err := parseFrom(*listen)
	if err != nil {
		return err
	}
	tlsCfg, certPath, err := certificate(*certFile, *keyFile, []string{site.name})
	if err != nil {
		return err
	}
	cfg, err := devConfig(site, lf)
	if err != nil {
		return err
	}
	h := static.New(bytes.Repeat([]byte("x"), *size), "application/octet-stream")
	in, _, err := startDev(cfg, site, app.Options{TLS: tlsCfg, NewHandler: func(*netpoll.Loop) stream.Handler { return h }})
	if err != nil {
		return err
	}
	addr, _ := in.Addr(cfg.Listeners()[0].Addr)
	fmt.Printf("pollproxy static: https://%s/ (%d-byte body) on %s\n", addr, *size, describeLoops(in))
	fmt.Printf("certificate: %s\n", certPath)
	return serveUntilSignal(in, lf, cfg, nil)
}
