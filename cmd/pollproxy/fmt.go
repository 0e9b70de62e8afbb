package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aryann/difflib"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func init() {
	addCommand("fmt", "format a Caddyfile as caddy fmt does (--overwrite, --diff; - reads stdin)", runFmt)
}

// runFmt is Caddy's fmt command: the same formatter (Caddy's caddyfile
// package, which pollproxy parses with too), the same flags, output and
// exit status, so a Caddyfile formatted by either is formatted for both.
func runFmt(args []string) error {
	fs := flag.NewFlagSet("fmt", flag.ContinueOnError)
	config := fs.String("config", "", "the Caddyfile to format (or give it as the argument; default Caddyfile)")
	overwrite := fs.Bool("overwrite", false, "write the formatted Caddyfile back to its file")
	diff := fs.Bool("diff", false, "print the changes formatting makes, line by line")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 1 || (*config != "" && len(files) == 1) {
		return fmt.Errorf("fmt does not support multiple files %s %s", *config, strings.Join(files, " "))
	}
	file := *config
	if len(files) == 1 {
		file = files[0]
	}
	if file == "" {
		file = "Caddyfile"
	}
	if file == "-" {
		input, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("reading stdin: %v", err)
		}
		os.Stdout.Write(caddyfile.Format(input))
		return nil
	}
	input, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading input file: %v", err)
	}
	output := caddyfile.Format(input)
	if *overwrite {
		if err := os.WriteFile(file, output, 0o600); err != nil {
			return fmt.Errorf("overwriting formatted file: %v", err)
		}
		return nil
	}
	if *diff {
		printDiff(os.Stdout, string(input), string(output))
	} else {
		os.Stdout.Write(output)
	}
	if w, differs := caddyfile.FormattingDifference(file, input); differs {
		return fmt.Errorf("%s:%d: Caddyfile input is not formatted; Tip: use '--overwrite' to update your Caddyfile in-place instead of previewing it. Consult '--help' for more options", w.File, w.Line)
	}
	return nil
}

// printDiff writes Caddy's fmt --diff: every line of both, marked "  "
// when common, "- " when only in the input, "+ " when only formatted.
func printDiff(w io.Writer, input, output string) {
	for _, d := range difflib.Diff(strings.Split(input, "\n"), strings.Split(output, "\n")) {
		mark := "  "
		switch d.Delta {
		case difflib.LeftOnly:
			mark = "- "
		case difflib.RightOnly:
			mark = "+ "
		}
		fmt.Fprintf(w, "%s%s\n", mark, d.Payload)
	}
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, as Caddy's commands take them (caddy fmt
// Caddyfile --overwrite), and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "-" || !strings.HasPrefix(args[0], "-") {
			pos = append(pos, args[0])
			args = args[1:]
			continue
		}
		// "--" ends the flags: the rest are arguments.
		return append(pos, args...), nil
	}
}
