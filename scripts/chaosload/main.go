package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/metrics/atrest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chaosload origin|load [flags] (see the package comment)")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "origin":
		fs := flag.NewFlagSet("origin", flag.ExitOnError)
		name := fs.String("name", "", "the origin's name, in every response's "+originHeader)
		listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on (its address is printed)")
		fs.Parse(os.Args[2:])
		if err := serveOrigin(*name, *listen); err != nil {
			fmt.Fprintln(os.Stderr, "chaosload origin:", err)
			os.Exit(2)
		}
	case "load":
		c, err := loadFlags(os.Args[2:])
		if err == nil {
			var pass bool
			pass, err = c.run(os.Stdout)
			if err == nil && !pass {
				os.Exit(1)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaosload load:", err)
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "chaosload: %q: want origin or load\n", os.Args[1])
		os.Exit(2)
	}
}

// soak is one run of the load, as its flags set it.
type soak struct {
	addr, admin      string
	roots            *x509.CertPool
	pid              int
	origins          map[string]string // upstream address -> origin name
	events, access   string
	out              string // where hung requests' snapshots go
	length, settle   time.Duration
	limit, timeout   time.Duration
	grace            time.Duration
	scale, sampleSec int
}

func loadFlags(args []string) (*soak, error) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	s := &soak{origins: map[string]string{}}
	fs.StringVar(&s.addr, "addr", "", "pollproxy's TLS listener, 127.0.0.1:PORT")
	ca := fs.String("ca", "", "PEM certificate pollproxy's is checked against")
	fs.StringVar(&s.admin, "admin", "", "pollproxy's admin listener, 127.0.0.1:PORT")
	fs.IntVar(&s.pid, "pid", 0, "pollproxy's process id (RSS and descriptors from /proc)")
	origins := fs.String("origins", "", "NAME=ADDR,... the upstreams and their names")
	fs.StringVar(&s.events, "events", "", "the faults' log the script writes")
	fs.StringVar(&s.access, "access", "", "pollproxy's JSON access log")
	fs.StringVar(&s.out, "out", "", "directory for the samples and hung requests' /metrics")
	fs.DurationVar(&s.length, "for", 25*time.Second, "how long the load runs")
	fs.DurationVar(&s.settle, "settle", 30*time.Second, "how long, at most, to wait after it for rest")
	fs.DurationVar(&s.limit, "limit", 10*time.Second, "a request or message older than this to an origin that is up: hung")
	fs.DurationVar(&s.timeout, "timeout", 30*time.Second, "a request or message is abandoned after this")
	fs.DurationVar(&s.grace, "grace", 2*time.Second, "a kill window lasts this long after the origin is back")
	fs.IntVar(&s.scale, "scale", 1, "clients of each kind")
	fs.IntVar(&s.sampleSec, "sample", 2, "seconds between samples")
	fs.Parse(args)
	pem, err := os.ReadFile(*ca)
	if err != nil {
		return nil, err
	}
	s.roots = x509.NewCertPool()
	if !s.roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no certificate", *ca)
	}
	for _, kv := range strings.Split(*origins, ",") {
		name, addr, found := strings.Cut(kv, "=")
		if !found {
			return nil, fmt.Errorf("-origins %q: want NAME=ADDR[,NAME=ADDR]", *origins)
		}
		s.origins[addr] = name
	}
	if s.addr == "" || s.admin == "" || s.pid == 0 || s.events == "" || s.access == "" || s.out == "" ||
		s.scale < 1 || s.scale > 16 || s.length > 2*time.Hour || s.settle > 5*time.Minute {
		return nil, fmt.Errorf("want -addr, -admin, -pid, -events, -access and -out; -scale 1..16, -for up to 2h, -settle up to 5m")
	}
	return s, nil
}

// sample is pollproxy's state at one moment.
type sample struct {
	rss, fds int
	gauges   atrest.Gauges
}

func (s *soak) sample(sc *scraper) (sample, error) {
	var m sample
	var err error
	if m.fds, err = descriptors(s.pid); err != nil {
		return m, err
	}
	if m.rss, err = rssKiB(s.pid); err != nil {
		return m, err
	}
	m.gauges, err = sc.gauges()
	return m, err
}

// restingStart is the first sample with no live thing counted (no
// connection, no tunnel) that the one 500 ms before it matches
// (descriptors and every gauge): the start, without the connections the
// script's checks that pollproxy is up may have left closing. After 10 s,
// the last one.
func (s *soak) restingStart(sc *scraper) (sample, error) {
	prev, err := s.sample(sc)
	for i := 0; i < 20 && err == nil; i++ {
		time.Sleep(500 * time.Millisecond)
		var m sample
		if m, err = s.sample(sc); err != nil {
			break
		}
		if m.fds == prev.fds && len(m.gauges.NotAtRest(m.gauges)) == 0 &&
			len(m.gauges.NotAtRest(prev.gauges)) == 0 && len(prev.gauges.NotAtRest(m.gauges)) == 0 {
			return m, nil
		}
		prev = m
	}
	return prev, err
}

// run runs the load and says whether it passed.
func (s *soak) run(w *os.File) (bool, error) {
	sc := newScraper(s.admin)
	start, err := s.restingStart(sc)
	if err != nil {
		return false, fmt.Errorf("first sample: %w", err)
	}
	t0 := time.Now()
	fmt.Fprintf(w, "chaosload: %v of load, pollproxy pid %d: RSS %d KiB, %d sockets at the start\n", s.length, s.pid, start.rss, start.fds)

	series, err := os.Create(filepath.Join(s.out, "samples.tsv"))
	if err != nil {
		return false, err
	}
	defer series.Close()
	fmt.Fprintln(series, "t_s\trss_kib\tfds\tgauges_not_at_rest")
	peak := sample{rss: start.rss, fds: start.fds}
	peakGauge := map[string]float64{}
	record := func(m sample) {
		bad := m.gauges.NotAtRest(start.gauges)
		fmt.Fprintf(series, "%.0f\t%d\t%d\t%s\n", time.Since(t0).Seconds(), m.rss, m.fds, strings.Join(bad, "; "))
		peak.rss, peak.fds = max(peak.rss, m.rss), max(peak.fds, m.fds)
		for _, name := range m.gauges.Name {
			if !atrest.NotCounts[name] {
				peakGauge[name] = max(peakGauge[name], m.gauges.Sum(name))
			}
		}
	}
	record(start)

	l := &load{
		base: "https://" + s.addr, addr: s.addr,
		tls:  &tls.Config{RootCAs: s.roots, NextProtos: []string{"h2"}},
		stop: t0.Add(s.length), timeout: s.timeout, limit: s.limit,
	}
	l.onOld = func(f *flight) {
		// What pollproxy's gauges said while it was under way: the
		// record of a hang for later reading.
		fmt.Fprintf(os.Stderr, "chaosload: %s id %d in flight for over %v (started at %.3fs)\n", f.kind, f.id, s.limit, f.start.Sub(t0).Seconds())
		if text, err := sc.text(); err == nil {
			os.WriteFile(filepath.Join(s.out, fmt.Sprintf("old-%d.metrics", f.id)), []byte(text), 0o644)
		}
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go l.watch(done)
	go func() {
		defer close(sampled)
		every(time.Duration(s.sampleSec)*time.Second, done, func() {
			if m, err := s.sample(sc); err == nil {
				record(m)
			} else {
				fmt.Fprintf(series, "%.0f\tsample failed: %v\n", time.Since(t0).Seconds(), err)
			}
		})
	}()
	l.run(s.scale)
	close(done)
	<-sampled
	l.closeIdle()
	loadEnd := time.Now()

	// Rest: the clients gone, the pool's idle connections closed.
	var end sample
	var rest []string
	for deadline := time.Now().Add(s.settle); ; {
		time.Sleep(500 * time.Millisecond)
		if end, err = s.sample(sc); err != nil {
			return false, fmt.Errorf("sample after the load: %w", err)
		}
		rest = end.gauges.AboveRest(start.gauges)
		if (end.fds <= start.fds && len(rest) == 0) || time.Now().After(deadline) {
			break
		}
	}
	record(end)

	t, counts, err := s.account(l.records)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "faults: %d origin kills, %d reloads, %d poller switches\n", counts["kill"], counts["reload"], counts["switch"])
	t.write(w, t0, false)
	names := make([]string, 0, len(peakGauge))
	for n := range peakGauge {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "RSS: %d KiB at the start, %d at most, %d at rest after\n", start.rss, peak.rss, end.rss)
	fmt.Fprintf(w, "sockets: %d at the start, %d at most, %d at rest after (%.1fs after the load)\n",
		start.fds, peak.fds, end.fds, time.Since(loadEnd).Seconds())
	for _, n := range names {
		fmt.Fprintf(w, "gauge %s: at most %v (summed)\n", n, peakGauge[n])
	}
	pass := true
	if n := t.fails(); n > 0 {
		fmt.Fprintf(w, "FAIL: %d requests or messages failed outside a kill window of their origin, corrupt or hung\n", n)
		pass = false
	}
	// Fewer is no leak: a connection of the script's own start-up checks
	// may still have been open at the first sample.
	if end.fds > start.fds {
		fmt.Fprintf(w, "FAIL: %d sockets at rest, %d at the start\n", end.fds, start.fds)
		pass = false
	}
	for _, b := range rest {
		fmt.Fprintf(w, "FAIL: gauge not at rest: %s\n", b)
		pass = false
	}
	if pass {
		fmt.Fprintln(w, "chaosload: PASS")
	}
	return pass, nil
}

// account classifies the records against the faults' log and pollproxy's
// access log.
func (s *soak) account(records []record) (tally, map[string]int, error) {
	ev, err := os.Open(s.events)
	if err != nil {
		return tally{}, nil, err
	}
	defer ev.Close()
	down, counts, err := readEvents(ev, s.grace)
	if err != nil {
		return tally{}, nil, err
	}
	al, err := os.Open(s.access)
	if err != nil {
		return tally{}, nil, err
	}
	defer al.Close()
	up, err := readAccessLog(al, s.origins)
	if err != nil {
		return tally{}, nil, err
	}
	l := &ledger{limit: s.limit, down: down, upstream: up}
	return l.tally(records), counts, nil
}
