package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on (port 0 picks one, printed on stdout)")
	target := flag.String("target", "", "address to relay to, HOST:PORT (required)")
	delay := flag.Duration("delay", 25*time.Millisecond, "delay added to every chunk, each way")
	inflight := flag.Int("inflight", 64<<20, "bytes held per direction at most")
	mbit := flag.Float64("mbit", 0, "link rate each way in Mbit/s (0: unlimited, as fast as loopback)")
	limit := flag.Duration("for", 0, "exit after this long (0: until interrupted)")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "delayrelay: -target is required")
		os.Exit(2)
	}
	r, err := servertest.NewDelayRelay(*listen, *target, *delay, *inflight)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayrelay:", err)
		os.Exit(1)
	}
	r.SetRate(int64(*mbit * 1e6 / 8))
	fmt.Println(r.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	var timeout <-chan time.Time
	if *limit > 0 {
		timeout = time.After(*limit)
	}
	select {
	case <-sig:
	case <-timeout:
	}
	r.Close()
}
