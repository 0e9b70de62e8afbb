package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/pollproxy/pollproxy/netpoll"
)

func init() {
	addCommand("version", "print the version and the poller backends of this build", func([]string) error {
		fmt.Printf("pollproxy %s %s/%s %s\n", version, runtime.GOOS, runtime.GOARCH, runtime.Version())
		auto, why := netpoll.AutoChoice()
		fmt.Printf("pollers: %s (auto picks %s)\n", strings.Join(netpoll.Available(), ", "), auto)
		if why != "" {
			fmt.Printf("auto: %s\n", why)
		}
		return nil
	})
	addCommand("pollers", "list the poller backends available here, best first (and on stderr those that are not, with why)", func([]string) error {
		for _, n := range netpoll.Available() {
			fmt.Println(n)
		}
		// Scripts read the names from stdout, one a line; the refused
		// ones go to stderr so that they never loop over them.
		for _, n := range netpoll.Available() {
			if d := netpoll.Describe(n); d != "" {
				fmt.Fprintf(os.Stderr, "%s: %s\n", n, d)
			}
		}
		for _, r := range netpoll.Unavailable() {
			fmt.Fprintf(os.Stderr, "%s: unavailable: %v\n", r.Name, r.Reason)
		}
		return nil
	})
}
