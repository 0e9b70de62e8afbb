package oracle

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// shutdownDelay is how long the stop in TestOracleShutdownDelay serves
// before it drains: long enough for a few requests.
const shutdownDelay = 5 * time.Second

// shutdownFile is Caddy's shutdown_delay example (the global options
// page) on a cleartext site.
const shutdownFile = `{
	admin off
	http_port HTTPPORT
	auto_https off
	shutdown_delay DELAY
	grace_period 1s
}

http://127.0.0.1:PORT {
	handle /health-check {
		@goingDown vars {http.shutting_down} true
		respond @goingDown "Bye-bye in {http.time_until_shutdown}" 503
		respond 200
	}
	handle {
		respond "Hello, world!"
	}
}
`

// TestOracleShutdownDelay: Caddy's shutdown_delay example before and
// during a stop, Caddy stopped by SIGTERM as its process is, pollproxy by
// Shutdown as its SIGTERM does: the same answers, the time left written
// as D when it is a duration within the delay.
func TestOracleShutdownDelay(t *testing.T) {
	bin := buildCaddy(t)
	file := func(port, httpPort int) string {
		return strings.NewReplacer("HTTPPORT", fmt.Sprint(httpPort), "PORT", fmt.Sprint(port),
			"DELAY", shutdownDelay.String()).Replace(shutdownFile)
	}
	paths := []string{"/health-check", "/"}
	// answers asks every path at base: status, Content-Type and body.
	answers := func(t *testing.T, base string) []string {
		t.Helper()
		c := &http.Client{Timeout: 10 * time.Second}
		var out []string
		for _, p := range paths {
			res, err := c.Get(base + p)
			if err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
			body := string(b)
			if left, ok := strings.CutPrefix(body, "Bye-bye in "); ok {
				if d, err := time.ParseDuration(left); err == nil && d > 0 && d <= shutdownDelay {
					body = "Bye-bye in D"
				}
			}
			out = append(out, fmt.Sprintf("%s: %d %q %q", p, res.StatusCode, res.Header.Get("Content-Type"), body))
		}
		return out
	}
	ready := func(base string, exited <-chan error) {
		t.Helper()
		untilAnswers(t, exited, "answer", func() bool {
			res, err := http.Get(base + "/")
			if err == nil {
				res.Body.Close()
			}
			return err == nil
		})
	}

	// Caddy.
	port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
	p, out, exited := startCaddyProcess(t, bin, file(port, httpPort))
	defer func() {
		p.Kill()
		<-exited
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ready(base, exited)
	before := answers(t, base)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Await("shutdown scheduled", 10*time.Second, nil); !ok {
		t.Fatalf("Caddy: no shutdown scheduled after SIGTERM\n%s", out)
	}
	during := answers(t, base)
	t.Logf("Caddy before the stop: %q, during the delay: %q", before, during)

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
		in, log := startPollproxy(t, backend, file(port, httpPort))
		defer in.Close()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		ready(base, nil)
		if got := answers(t, base); fmt.Sprint(got) != fmt.Sprint(before) {
			t.Errorf("before the stop: pollproxy %q, Caddy %q", got, before)
		}
		done := make(chan error, 1)
		go func() { done <- in.Shutdown() }()
		if _, ok := log.Await("shutdown delayed", 10*time.Second, nil); !ok {
			t.Fatalf("pollproxy: no shutdown delayed after the stop\n%s", log)
		}
		if got := answers(t, base); fmt.Sprint(got) != fmt.Sprint(during) {
			t.Errorf("during the delay: pollproxy %q, Caddy %q", got, during)
		}
		if err := <-done; err != nil {
			t.Errorf("pollproxy: shutdown: %v", err)
		}
	})
}
