package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pollproxy/pollproxy/proxy/app"
)

func init() {
	addCommand("adapt", "print what pollproxy understood from a Caddyfile, as JSON", runAdapt)
}

// runAdapt is pollproxy's caddy adapt: the Caddyfile read and checked as
// run would, then printed as pollproxy's own configuration in JSON
// (config.Describe says its shape). Caddy's JSON it neither prints nor
// loads: pollproxy's configuration is the Caddyfile.
func runAdapt(args []string) error {
	fs := flag.NewFlagSet("adapt", flag.ContinueOnError)
	file := fs.String("config", "Caddyfile", "the Caddyfile to read")
	fs.Bool("validate", false, "accepted as caddy adapt's flag: pollproxy always checks what it prints")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 1 || (len(files) == 1 && *file != "Caddyfile") {
		return fmt.Errorf("adapt takes one Caddyfile")
	}
	if len(files) == 1 {
		*file = files[0]
	}
	cfg, err := app.Load(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return errReported
	}
	out, err := cfg.Describe()
	if err != nil {
		return err
	}
	os.Stdout.Write(append(out, '\n'))
	return nil
}
