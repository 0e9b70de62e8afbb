package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/pollproxy/pollproxy/proxy/app"
)

func init() {
	addCommand("validate", "check a Caddyfile: prints OK, or every error with its file:line", runValidate)
}

// errReported is returned once the errors were printed, so main only sets
// the exit status.
var errReported = errors.New("invalid configuration")

func runValidate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	file := fs.String("config", "Caddyfile", "the Caddyfile to check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := app.Load(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return errReported
	}
	ls := cfg.Listeners()
	fmt.Printf("OK: %s: %d site(s) on %d listener(s)\n", *file, len(cfg.Sites), len(ls))
	return nil
}
