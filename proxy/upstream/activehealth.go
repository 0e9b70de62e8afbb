package upstream

// Active health checks run off the request path: one goroutine per
// upstream per process asks the origin on an interval, and the verdict is
// an atomic on the shared Upstream that every loop's balancer reads.

import (
	"context"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ActiveHealth configures active health checks, with the meanings of
// Caddy's reverse_proxy subdirectives of the same names.
type ActiveHealth struct {
	// URI is the path (and query) requested (health_uri); Port, when set,
	// replaces the upstream's port (health_port). Checks run when either
	// is set; URI defaults to "/".
	URI  string
	Port int
	// Upstream, when set, is the host:port checked instead of the
	// upstream's own address (health_upstream: a sidecar that reports on
	// the upstream); the check asks for that host.
	Upstream string
	// Interval between checks (health_interval, default 30 s) and Timeout
	// of one (health_timeout, default 5 s).
	Interval, Timeout time.Duration
	// Status is the status wanted: "200", or a class "2xx" (health_status;
	// default 2xx).
	Status string
	// Body, when set, must match the response body (health_body).
	Body *regexp.Regexp
	// Headers are sent with each check (health_headers); "Host" sets the
	// host asked for.
	Headers http.Header
	// TLS, when set, is the transport's TLS: checks go over HTTPS with
	// it, as Caddy's do for a transport with TLS.
	TLS *stdtls.Config
	// H2C asks over HTTP/2 with prior knowledge, as the proxy speaks to
	// an h2c upstream (which may take nothing else); H2 offers h2 by ALPN
	// over TLS, as the proxy does. Caddy's checks use the proxy's
	// transport, so they speak as it does.
	H2C, H2 bool
	// Passes is how many checks in a row must pass before an unhealthy
	// upstream is used again, Fails how many must fail before a healthy one
	// is skipped (health_passes, health_fails; default 1 each).
	Passes, Fails int
}

// TargetUpstream is Caddy's placeholder for the upstream a check is
// about (its host:port), filled in health_headers: with health_upstream
// the check goes elsewhere and says which upstream it means.
const TargetUpstream = "{http.reverse_proxy.active.target_upstream}"

// Enabled reports whether active checks are configured.
func (a ActiveHealth) Enabled() bool { return a.URI != "" || a.Port != 0 || a.Upstream != "" }

func (a ActiveHealth) withDefaults() ActiveHealth {
	if a.URI == "" {
		a.URI = "/"
	}
	if a.Interval <= 0 {
		a.Interval = 30 * time.Second
	}
	if a.Timeout <= 0 {
		a.Timeout = 5 * time.Second
	}
	if a.Status == "" {
		a.Status = "2xx"
	}
	a.Passes, a.Fails = max(a.Passes, 1), max(a.Fails, 1)
	return a
}

// Unhealthy reports whether active checks took u out of rotation.
func (u *Upstream) Unhealthy() bool { return u.activeDown.Load() }

// HealthChecker runs the active checks of a set of upstreams, each on its
// own goroutine, once per upstream however many sites and loops use it.
type HealthChecker struct {
	mu     sync.Mutex
	checks map[*Upstream]*healthCheck
}

type healthCheck struct {
	cfg    ActiveHealth
	cancel context.CancelFunc
	done   chan struct{}
}

// NewHealthChecker returns a checker with nothing to check yet.
func NewHealthChecker() *HealthChecker {
	return &HealthChecker{checks: map[*Upstream]*healthCheck{}}
}

// Update makes the checker check exactly the upstreams in want, each with
// its configuration: new ones start (checked at once), removed ones stop
// and are put back in rotation, changed ones restart.
func (hc *HealthChecker) Update(want map[*Upstream]ActiveHealth) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for u, c := range hc.checks {
		if w, ok := want[u]; !ok || !sameHealth(w.withDefaults(), c.cfg) {
			c.stop()
			delete(hc.checks, u)
			if !ok {
				u.activeDown.Store(false)
			}
		}
	}
	for u, a := range want {
		if _, ok := hc.checks[u]; ok || !a.Enabled() {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &healthCheck{cfg: a.withDefaults(), cancel: cancel, done: make(chan struct{})}
		hc.checks[u] = c
		go c.run(ctx, u)
	}
}

// Close stops every check and waits for them.
func (hc *HealthChecker) Close() { hc.Update(nil) }

func sameHealth(a, b ActiveHealth) bool {
	if (a.Body == nil) != (b.Body == nil) || a.Body != nil && a.Body.String() != b.Body.String() {
		return false
	}
	if fmt.Sprint(a.Headers) != fmt.Sprint(b.Headers) {
		return false
	}
	return a.URI == b.URI && a.Port == b.Port && a.Upstream == b.Upstream && a.Interval == b.Interval && a.Timeout == b.Timeout &&
		a.Status == b.Status && a.Passes == b.Passes && a.Fails == b.Fails && a.TLS == b.TLS &&
		a.H2C == b.H2C && a.H2 == b.H2
}

func (c *healthCheck) stop() {
	c.cancel()
	<-c.done
}

func (c *healthCheck) run(ctx context.Context, u *Upstream) {
	defer close(c.done)
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   c.cfg.TLS,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			if c.cfg.Upstream != "" {
				return d.DialContext(ctx, "tcp", c.cfg.Upstream)
			}
			if u.Path != "" {
				return d.DialContext(ctx, "unix", u.Path)
			}
			ap := u.DialAddr(0)
			port := ap.Port()
			if c.cfg.Port != 0 {
				port = uint16(c.cfg.Port)
			}
			return d.DialContext(ctx, "tcp", net.JoinHostPort(ap.Addr().String(), strconv.Itoa(int(port))))
		},
	}
	switch {
	case c.cfg.H2C:
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	case c.cfg.H2 && c.cfg.TLS != nil:
		tr.ForceAttemptHTTP2 = true // a custom dialer and TLS configuration leave it off
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: c.cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var passes, fails int
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if err := c.check(ctx, cl, u); err == nil {
			passes, fails = passes+1, 0
			if passes >= c.cfg.Passes {
				u.activeDown.Store(false)
			}
		} else if ctx.Err() == nil {
			passes, fails = 0, fails+1
			if fails >= c.cfg.Fails {
				u.activeDown.Store(true)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maxHealthBody bounds what a check reads of a response body.
const maxHealthBody = 1 << 20

// check asks the upstream once; nil means healthy.
func (c *healthCheck) check(ctx context.Context, cl *http.Client, u *Upstream) error {
	host := u.Name
	switch {
	case c.cfg.Upstream != "":
		host = c.cfg.Upstream
	case u.Path != "":
		host = "localhost"
	}
	scheme := "http://"
	if c.cfg.TLS != nil {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+host+c.cfg.URI, nil)
	if err != nil {
		return err
	}
	for k, vs := range c.cfg.Headers {
		filled := make([]string, len(vs))
		for i, v := range vs {
			filled[i] = strings.ReplaceAll(v, TargetUpstream, u.Name)
		}
		if strings.EqualFold(k, "Host") && len(vs) > 0 {
			req.Host = filled[0]
			continue
		}
		req.Header[k] = filled
	}
	res, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if !statusMatches(c.cfg.Status, res.StatusCode) {
		return fmt.Errorf("status %d, want %s", res.StatusCode, c.cfg.Status)
	}
	if c.cfg.Body != nil {
		b, err := io.ReadAll(io.LimitReader(res.Body, maxHealthBody))
		if err != nil {
			return err
		}
		if !c.cfg.Body.Match(b) {
			return fmt.Errorf("body does not match %s", c.cfg.Body)
		}
	}
	return nil
}
