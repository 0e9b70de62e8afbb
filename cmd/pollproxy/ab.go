package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/pollproxy/pollproxy/proxy/ab"
)

func init() {
	addCommand("ab", "print the A/B verdict of a running instance's pollers (from its admin listener)", runAB)
}

func runAB(args []string) error {
	fs := flag.NewFlagSet("ab", flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:2019", "the instance's admin listener, host:port")
	effect := fs.Float64("effect", 100*ab.DefaultEffect, "the difference, in percent, that \"more intervals\" is computed for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u := url.URL{Scheme: "http", Host: *admin, Path: "/ab.json", RawQuery: "effect=" + strconv.FormatFloat(*effect, 'g', -1, 64)}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u.String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u.String(), resp.Status)
	}
	var r ab.Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", u.String(), err)
	}
	return ab.WriteText(os.Stdout, &r)
}
