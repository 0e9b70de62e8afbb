package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "row":
		err = rowCmd(os.Args[2:])
	case "counters":
		err = countersCmd(os.Args[2:])
	case "report":
		err = reportCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchreport row|counters|report ... (see the package documentation)")
	os.Exit(2)
}

// oneArg parses args into fs and returns its one positional argument.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", fmt.Errorf("%s: want one %s after the flags", fs.Name(), what)
	}
	return fs.Arg(0), nil
}

// fileArg parses args into fs and opens its one positional argument.
func fileArg(fs *flag.FlagSet, args []string, what string) (*os.File, error) {
	path, err := oneArg(fs, args, what)
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

func rowCmd(args []string) error {
	fs := flag.NewFlagSet("row", flag.ContinueOnError)
	var c cellRun
	fs.StringVar(&c.round, "round", "", "the round (a number, or warmup)")
	fs.StringVar(&c.proxy, "proxy", "", "the proxy measured")
	fs.StringVar(&c.cell, "cell", "", "the cell, e.g. h2:6:20")
	fs.StringVar(&c.requests, "requests", "", "h2load -n")
	fs.IntVar(&c.exit, "exit", 0, "h2load's exit status")
	fs.Int64Var(&c.cpuNs, "cpu-ns", 0, "the proxy's CPU time across the run, in nanoseconds")
	fs.Int64Var(&c.wallUs, "wall-us", 0, "the run's wall-clock time, in microseconds")
	fs.StringVar(&c.load, "load", "", "the load average at the end of the run")
	syscalls := fs.Int64("syscalls", -1, "the proxy's system calls across the run (-1: not counted)")
	originConns := fs.Int("origin-conns", -1, "the proxy's connections to the origin at the end of the run (-1: not counted)")
	before := fs.String("threads-before", "", "the proxy's threads before the run (scripts/bench's snapshot)")
	after := fs.String("threads-after", "", "the proxy's threads after the run")
	f, err := fileArg(fs, args, "h2load log")
	if err != nil {
		return err
	}
	defer f.Close()
	if *syscalls >= 0 {
		c.syscalls = syscalls
	}
	if *originConns >= 0 {
		c.originConns = originConns
	}
	if (*before == "") != (*after == "") {
		return fmt.Errorf("row: -threads-before and -threads-after go together")
	}
	if *before != "" {
		b, err := readThreads(*before)
		if err != nil {
			return err
		}
		a, err := readThreads(*after)
		if err != nil {
			return err
		}
		sw := countSwitches(b, a)
		c.sw = &sw
	}
	o, err := parseH2load(f)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	fmt.Println(row(c, o))
	progress(os.Stderr, c, o, f.Name())
	return nil
}

func countersCmd(args []string) error {
	fs := flag.NewFlagSet("counters", flag.ContinueOnError)
	proxy := fs.String("proxy", "", "the pollproxy instance")
	requests := fs.Int64("requests", 0, "requests through it, warm-up included")
	f, err := fileArg(fs, args, "pollproxy log")
	if err != nil {
		return err
	}
	defer f.Close()
	return counters(os.Stdout, *proxy, *requests, f)
}

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	rounds := fs.String("rounds", "", "rounds of the run (default: those in results.tsv)")
	requests := fs.String("requests", "", "h2load -n per cell (default: the first run's)")
	chart := fs.String("chart", "", "also write gnuplot's data here (req/s) and to this name plus .us (µs per request)")
	dir, err := oneArg(fs, args, "results directory")
	if err != nil {
		return err
	}
	runs, err := readResults(filepath.Join(dir, "results.tsv"))
	if err != nil {
		return err
	}
	t := newTable(runs)
	if *rounds != "" {
		t.rounds = *rounds
	}
	if *requests != "" {
		t.requests = *requests
	}
	for name, write := range map[string]func(io.Writer) error{
		"median.tsv": func(w io.Writer) error { return writeMedians(w, t.m, t.proxies, t.cells) },
		"paired.tsv": func(w io.Writer) error { return writePaired(w, t.p, t.cells) },
		"counts.tsv": func(w io.Writer) error { return writeCounts(w, t.m, t.proxies, t.cells) },
		"table.md":   t.write,
	} {
		if err := writeFile(filepath.Join(dir, name), write); err != nil {
			return err
		}
	}
	if *chart != "" {
		if err := writeFile(*chart, func(w io.Writer) error { return writeChart(w, t, func(m median) string { return m.reqS }) }); err != nil {
			return err
		}
		return writeFile(*chart+".us", func(w io.Writer) error { return writeChart(w, t, func(m median) string { return m.us }) })
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
