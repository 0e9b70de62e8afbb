package oracle

import (
	"bufio"
	stdtls "crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// Caddyfiles pollproxy once refused where Caddy accepts them, served as
// written (not through the oracle's rewriting, which puts every site on
// HTTPS with a certificate of its own): each by Caddy, then by pollproxy
// on every backend, with the same probes, whose answers must agree.

// acceptedCase is one Caddyfile, with HTTP and HTTPS standing for the
// test's ports, and its probes.
type acceptedCase struct {
	name      string
	caddyfile string
	files     map[string]string // more files in the Caddyfile's directory
	// tlsReady, when set, is a name the HTTPS port must complete a
	// handshake for before the probes start (a tls internal certificate
	// is issued after the port opens).
	tlsReady string
	probes   []probe
}

// probe asks a running server something and describes the answer.
type probe struct {
	name string
	ask  func(at served) string
}

// served is where a case's server runs: its ports and the directory of
// its Caddyfile (LOGDIR in the Caddyfile).
type served struct {
	http, https int
	dir         string
}

// getHTTP GETs path on the HTTP port, for host when not "".
func getHTTP(host, path string) probe {
	return probe{"GET http " + host + path, func(at served) string {
		c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", at.http, path), nil)
		if host != "" {
			req.Host = host
		}
		resp, err := c.Do(req)
		if err != nil {
			return "error"
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %q", resp.StatusCode, b)
	}}
}

// handshake is whether a TLS handshake for name succeeds on the HTTPS
// port.
func handshake(name string) probe {
	return probe{"TLS handshake " + name, func(at served) string {
		d := &net.Dialer{Timeout: 10 * time.Second}
		c, err := stdtls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", at.https), &stdtls.Config{InsecureSkipVerify: true, ServerName: name})
		if err != nil {
			return "fails"
		}
		c.Close()
		return "succeeds"
	}}
}

// plainToTLS sends a plain HTTP request to the HTTPS port and describes
// the answer by its status and Location (Caddy answers in HTTP/1.0,
// pollproxy in HTTP/1.1: the rest of the head differs).
func plainToTLS(target, host string) probe {
	return probe{"plain HTTP to the HTTPS port " + host + target, func(at served) string {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", at.https), 10*time.Second)
		if err != nil {
			return "error"
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "no HTTP answer"
		}
		resp.Body.Close()
		return fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Location"))
	}}
}

// getTLS GETs / over HTTP/1.1 and TLS with server name sni, the Host
// host and the header fields kv.
func getTLS(sni, host string, kv ...string) probe {
	return probe{fmt.Sprintf("GET https %s (SNI %s) %v", host, sni, kv), func(at served) string {
		tr := &http.Transport{TLSClientConfig: &stdtls.Config{InsecureSkipVerify: true, ServerName: sni}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/", at.https), nil)
		req.Host = host
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return "error"
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %q", resp.StatusCode, b)
	}}
}

// accessLog sends each of paths to the HTTP port with the header fields
// kv, the last one answering 5xx, then waits for that one in the log file
// and describes every entry by the fields a Caddy user reads: logger,
// uri, status, the Cookie field and the appended env and shard.
func accessLog(file string, paths []string, kv ...string) probe {
	return probe{"access log of " + strings.Join(paths, " "), func(at served) string {
		for _, p := range paths {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", at.http, p), nil)
			for i := 0; i+1 < len(kv); i += 2 {
				req.Header.Set(kv[i], kv[i+1])
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return "error"
			}
			resp.Body.Close()
		}
		last := paths[len(paths)-1]
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, _ := os.ReadFile(strings.ReplaceAll(file, "LOGDIR", at.dir))
			var out []string
			done := false
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var e struct {
					Logger  string
					Request struct {
						URI     string
						Headers map[string]any
					}
					Status int
					Env    any
					Shard  any
				}
				if json.Unmarshal([]byte(line), &e) != nil {
					continue
				}
				done = done || e.Request.URI == last
				out = append(out, fmt.Sprintf("%s %s %d cookie=%v env=%v shard=%v", e.Logger, e.Request.URI, e.Status, e.Request.Headers["Cookie"], e.Env, e.Shard))
			}
			if done {
				return strings.Join(out, "\n")
			}
			if time.Now().After(deadline) {
				return "no entry for " + last + " in:\n" + string(b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}}
}

var acceptedCases = []acceptedCase{
	// Caddy takes the email for an ACME account no name here needs, and
	// serves the site over HTTP.
	{name: "http-port-tls-email", caddyfile: ":HTTP {\n\ttls you@example.com\n\trespond \"plain {scheme}\"\n}\n",
		probes: []probe{getHTTP("", "/"), getHTTP("any.test", "/x")}},
	{name: "http-site-tls-internal", caddyfile: "http://localhost:HTTP {\n\ttls internal\n\trespond \"plain {scheme}\"\n}\n",
		probes: []probe{getHTTP("localhost", "/")}},
	// auto_https off: the named site listens with TLS but has no
	// certificate, so its handshakes fail; the HTTP port redirects
	// nothing; another site on it is served.
	{name: "auto-https-off", caddyfile: "{\n\tauto_https off\n}\nexample.test:HTTPS {\n\trespond \"secure\"\n}\nhttp://plain.test:HTTP {\n\trespond \"plain\"\n}\n",
		probes: []probe{handshake("example.test"), handshake("other.test"), getHTTP("plain.test", "/")}},
	// An empty import: Caddy warns and serves the site, whose block is
	// then empty: Caddy's empty 200.
	// Server options.
	{name: "http-redirect", tlsReady: "localhost", caddyfile: "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\thttp_redirect\n\t\t\ttls\n\t\t}\n\t}\n}\nlocalhost:HTTPS {\n\ttls internal\n\trespond \"secure\"\n}\n",
		probes: []probe{plainToTLS("/a/b?c=d", "localhost:HTTPS"), plainToTLS("/", "elsewhere.test"), getTLS("localhost", "localhost")}},
	{name: "strict-sni-host", tlsReady: "localhost", caddyfile: "{\n\tservers {\n\t\tstrict_sni_host\n\t}\n}\nlocalhost:HTTPS, other.localhost:HTTPS {\n\ttls internal\n\trespond \"{host}\"\n}\n",
		probes: []probe{getTLS("localhost", "localhost"), getTLS("localhost", "other.localhost"), getTLS("other.localhost", "other.localhost"), getTLS("other.localhost", "localhost")}},
	{name: "trusted-proxies-strict", tlsReady: "localhost", caddyfile: "{\n\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32 10.0.0.0/8\n\t\ttrusted_proxies_strict\n\t}\n}\nlocalhost:HTTPS {\n\ttls internal\n\trespond \"{client_ip}\"\n}\n",
		probes: []probe{getTLS("localhost", "localhost", "X-Forwarded-For", "198.51.100.7, 203.0.113.9, 10.1.1.1"),
			getTLS("localhost", "localhost", "X-Forwarded-For", "10.2.2.2, 10.1.1.1"), getTLS("localhost", "localhost")}},
	// Logging: a global logger that includes every access log, with
	// sampling, the append format around a filter with the cookie filter.
	{name: "log-include-sampling-append-cookie", caddyfile: `{
	servers {
		log_credentials
	}
	log access {
		output file LOGDIR/access.log
		include http.log.access
		sampling {
			interval 1m
			first 2
			thereafter 3
		}
		format append {
			wrap filter {
				wrap json
				fields {
					request>headers>Cookie cookie {
						replace session REPLACED
						hash id
						delete secret
					}
				}
			}
			env prod
			shard 3
		}
	}
}
:HTTP {
	log
	respond /boom 500
	respond "ok"
}
`, probes: []probe{accessLog("LOGDIR/access.log", []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7", "/8", "/boom"}, "Cookie", "session=abc; id=42; secret=s3; other=1")}},
	{name: "import-empty", caddyfile: "import empty.caddy\n:HTTP {\n\timport empty.caddy\n}\n", files: map[string]string{"empty.caddy": ""},
		probes: []probe{getHTTP("", "/"), getHTTP("a.test", "/any/path?q=1")}},
}

// TestAccepted serves each accepted case with Caddy and with pollproxy
// and compares their answers to the same probes.
func TestAccepted(t *testing.T) {
	bin := buildCaddy(t)
	for _, tc := range acceptedCases {
		t.Run(tc.name, func(t *testing.T) {
			httpPort, httpsPort := servertest.FreePort(t), servertest.FreePort(t)
			want := serveAccepted(t, tc, httpPort, httpsPort, true, func(file, dir string) func() {
				cmd := exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
				cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
				out := &servertest.SyncBuffer{}
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				return func() {
					cmd.Process.Kill()
					<-done
					if t.Failed() {
						t.Logf("Caddy's output:\n%s", out)
					}
				}
			})
			for i, p := range tc.probes {
				t.Logf("Caddy, %s: %s", p.name, want[i])
			}
			polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
				got := serveAccepted(t, tc, httpPort, httpsPort, false, func(file, _ string) func() {
					cfg, err := app.Load(file)
					if err != nil {
						t.Fatalf("pollproxy refuses it: %v", err)
					}
					log := &servertest.SyncBuffer{}
					in, err := app.Start(cfg, app.Options{Pollers: []string{backend}, Loops: 1, LoopsSet: true,
						Logger: slog.New(slog.NewTextHandler(log, nil)), Version: "oracle"})
					if err != nil {
						t.Fatalf("pollproxy: %v\n%s", err, log)
					}
					return func() { in.Close() }
				})
				for i, p := range tc.probes {
					if got[i] != want[i] {
						t.Errorf("%s: pollproxy %s, Caddy %s", p.name, got[i], want[i])
					}
				}
			})
		})
	}
}

// serveAccepted writes the case's files, starts a server on them with
// start (which returns its stop; caddy adds Caddy's own options), waits until one of its ports accepts,
// and returns its answers to the probes.
func serveAccepted(t *testing.T, tc acceptedCase, httpPort, httpsPort int, caddy bool, start func(file, dir string) func()) []string {
	t.Helper()
	dir := t.TempDir()
	global := fmt.Sprintf("\tadmin off\n\thttp_port %d\n\thttps_port %d\n\tdefault_bind 127.0.0.1\n\tstorage file_system %s\n",
		httpPort, httpsPort, filepath.Join(dir, "storage"))
	if caddy {
		global += "\tskip_install_trust\n"
	}
	text := strings.NewReplacer("HTTPS", fmt.Sprint(httpsPort), "HTTP", fmt.Sprint(httpPort)).Replace(tc.caddyfile)
	if strings.HasPrefix(text, "{\n") {
		text = "{\n" + global + text[2:]
	} else {
		text = "{\n" + global + "}\n" + text
	}
	text = strings.ReplaceAll(text, "LOGDIR", dir)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(text), 0o644)
	for name, body := range tc.files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	stop := start(file, dir)
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpPort))
		if err != nil {
			c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpsPort))
		}
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %d or %d", httpPort, httpsPort)
		}
		time.Sleep(20 * time.Millisecond)
	}
	at := served{httpPort, httpsPort, dir}
	for tc.tlsReady != "" && handshake(tc.tlsReady).ask(at) != "succeeds" {
		if time.Now().After(deadline) {
			t.Fatalf("no TLS handshake for %s", tc.tlsReady)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var out []string
	for _, p := range tc.probes {
		out = append(out, p.ask(at))
	}
	return out
}
