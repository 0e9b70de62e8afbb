package main

import (
	"bytes"
	"flag"
	"fmt"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
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
	tlsCfg, certPath, err := certificate(*certFile, *keyFile, hostsOf(*listen))
	if err != nil {
		return err
	}
	h := static.New(bytes.Repeat([]byte("x"), *size), "application/octet-stream")
	r, err := start(lf, *listen, tlsCfg, func(*netpoll.Loop) stream.Handler { return h })
	if err != nil {
		return err
	}
	fmt.Printf("pollproxy static: https://%s/ (%d-byte body) on %s\n", r.srv.Addr(), *size, r.describeLoops())
	fmt.Printf("certificate: %s\n", certPath)
	return r.waitForSignal(10 * time.Second)
}
