package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/pollproxy/pollproxy/proxy/config"
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
	cfg, err := loadConfig(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return errReported
	}
	ls := cfg.Listeners()
	fmt.Printf("OK: %s: %d site(s) on %d listener(s)\n", *file, len(cfg.Sites), len(ls))
	return nil
}

// loadConfig parses the Caddyfile and checks the files it names.
func loadConfig(file string) (*config.Config, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckFiles(); err != nil {
		return nil, err
	}
	return cfg, nil
}
