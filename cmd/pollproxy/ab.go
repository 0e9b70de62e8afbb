package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/config"
)

func init() {
	addCommand("ab", "print the A/B verdict of a running instance's pollers, or --compare two instances (from their admin listeners)", runAB)
}

func runAB(args []string) error {
	fs := flag.NewFlagSet("ab", flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:2019", "the instance's admin listener, host:port or unix//path/to.sock")
	effect := fs.Float64("effect", 100*ab.DefaultEffect, "the difference, in percent, that \"more intervals\" is computed for")
	compare := fs.Bool("compare", false, "compare two instances: pollproxy ab --compare ADMIN_A ADMIN_B judges B against A by whole-process CPU per request, p99 and memory")
	watch := fs.Duration("watch", 0, "print the verdict again every so often (its intervals stay valid however often they are read); 0 prints it once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*compare && fs.NArg() > 0 {
		return fmt.Errorf("ab: unexpected argument %q (two admin addresses go with --compare)", fs.Arg(0))
	}
	if *compare && fs.NArg() != 2 {
		return errors.New("ab --compare: want two admin listeners, ADMIN_A ADMIN_B (host:port)")
	}
	for {
		var err error
		if *compare {
			err = printCanary(fs.Arg(0), fs.Arg(1), *effect)
		} else {
			var r *ab.Report
			if r, err = fetchReport(*admin, *effect); err == nil {
				err = ab.WriteText(os.Stdout, r)
			}
		}
		if err != nil || *watch <= 0 {
			return err
		}
		time.Sleep(*watch)
		fmt.Println()
	}
}

func printCanary(adminA, adminB string, effect float64) error {
	a, err := fetchReport(adminA, effect)
	if err != nil {
		return err
	}
	b, err := fetchReport(adminB, effect)
	if err != nil {
		return err
	}
	return ab.WriteCanaryText(os.Stdout, ab.Compare(a, b, adminA, adminB, effect/100))
}

// fetchReport reads an instance's /ab.json from its admin listener:
// host:port or unix//path/to.sock, as the Caddyfile's admin option
// writes it.
func fetchReport(admin string, effect float64) (*ab.Report, error) {
	a, err := config.ParseAdminAddress(admin)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "http", Host: a.Address, Path: "/ab.json", RawQuery: "effect=" + strconv.FormatFloat(effect, 'g', -1, 64)}
	c := &http.Client{Timeout: 10 * time.Second}
	if a.Network == "unix" {
		u.Host = "localhost" // not checked on a socket
		c.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.Address)
		}}
	}
	resp, err := c.Get(u.String())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u.String(), resp.Status)
	}
	var r ab.Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", u.String(), err)
	}
	return &r, nil
}
