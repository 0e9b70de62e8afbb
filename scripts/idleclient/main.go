package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "the proxy, 127.0.0.1:PORT or [::1]:PORT (required)")
	n := flag.Int("n", 10000, "idle connections to hold")
	proto := flag.String("proto", "h2", "h2 or h1")
	pid := flag.Int("pid", 0, "the proxy's process, whose VmRSS is measured (required)")
	path := flag.String("path", "/1k/000.txt", "the path each connection asks for once")
	parallel := flag.Int("parallel", 32, "connections being opened at once")
	settle := flag.Duration("settle", 3*time.Second, "wait this long after the last connection before reading VmRSS")
	deadline := flag.Duration("deadline", 3*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*addr, *n, *proto, *pid, *path, *parallel, *settle, *deadline); err != nil {
		fmt.Fprintln(os.Stderr, "idleclient:", err)
		os.Exit(1)
	}
}

func run(addr string, n int, proto string, pid int, path string, parallel int, settle, deadline time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr: %v", err)
	}
	// loopback only: this opens thousands of connections
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %s: only loopback addresses", addr)
	}
	if n < 1 || n > 100000 {
		return fmt.Errorf("-n %d: want 1 to 100000", n)
	}
	if proto != "h2" && proto != "h1" {
		return fmt.Errorf("-proto %q: want h2 or h1", proto)
	}
	if pid <= 0 {
		return errors.New("-pid is required")
	}
	if parallel < 1 {
		parallel = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	before, err := vmRSS(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	conns := make([]io.Closer, n)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				c, err := open(ctx, addr, proto, path)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("connection %d: %w", i, err) })
					cancel()
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if firstErr != nil {
		return firstErr
	}
	if ctx.Err() != nil {
		return fmt.Errorf("not all %d connections opened within %v", n, deadline)
	}
	opened := time.Since(start)
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return fmt.Errorf("deadline %v passed while settling", deadline)
	}
	after, err := vmRSS(pid)
	if err != nil {
		return err
	}
	fmt.Printf("proto=%s conns=%d rss_before_kib=%d rss_after_kib=%d growth_mib=%.1f per_conn_kib=%.2f open_s=%.1f\n",
		proto, n, before, after, float64(after-before)/1024, float64(after-before)/float64(n), opened.Seconds())
	return nil
}

// open makes one TLS connection, asks for path once, reads the whole
// response and leaves the connection open and idle.
func open(ctx context.Context, addr, proto, path string) (io.Closer, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := "https://" + addr + path
	if proto == "h2" {
		return openH2(dctx, addr, url)
	}
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}}
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := nc.(*tls.Conn)
	if got := tc.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		tc.Close()
		return nil, fmt.Errorf("ALPN %q, want http/1.1", got)
	}
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	host := strings.TrimPrefix(url, "https://")
	host = host[:strings.IndexByte(host, '/')]
	if _, err := fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host); err != nil {
		tc.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err == nil {
		err = drain(resp)
	}
	if err != nil {
		tc.Close()
		return nil, err
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// openH2 is open over HTTP/2: one connection of its own, not pooled, which
// the client closes.
func openH2(ctx context.Context, addr, url string) (io.Closer, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP2(true)
	cc, err := tr.NewClientConn(ctx, "https", addr)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := cc.RoundTrip(req)
	if err == nil && resp.ProtoMajor != 2 {
		resp.Body.Close()
		err = fmt.Errorf("answered over %s, want HTTP/2", resp.Proto)
	}
	if err == nil {
		err = drain(resp)
	}
	if err != nil {
		cc.Close()
		return nil, err
	}
	return cc, nil
}

func drain(resp *http.Response) error {
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// vmRSS is the resident set of pid in KiB, from /proc/PID/status.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}
