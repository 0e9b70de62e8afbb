package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy"
)

func mustParse(t *testing.T, body string) *Config {
	t.Helper()
	c, err := Parse("Caddyfile", []byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestParseFull(t *testing.T) {
	c := mustParse(t, `{
	poller epoll poll
	loops 4
	admin 127.0.0.1:9019
	email ops@example.com
	acme_ca https://acme-staging-v02.api.letsencrypt.org/directory
	storage /var/lib/pollproxy
	default_bind 127.0.0.1
	timeouts {
		read_header 5s
		idle 30s
		handshake 7s
	}
	grace_period 20s
	log {
		format common
		output stdout
	}
}

example.com, www.example.com {
	reverse_proxy 10.0.0.1:8080 http://10.0.0.2:8080 {
		to 10.0.0.3
		lb_policy least_conn
		health_fails 5
		health_timeout 30s
		header_up X-Real-IP v
		header_up +X-Extra a
		header_up -X-Secret
		header_down -Server
		keepalive 16
		keepalive_timeout 2s
		max_conns 64
		dial_timeout 2s
		response_header_timeout 30s
		read_timeout 1m
	}
}

localhost:8443 {
	reverse_proxy 127.0.0.1:3000
	tls internal
}

*.example.net:8443 {
	reverse_proxy 127.0.0.1:3001
	tls cert.pem key.pem
}

:8443 {
	reverse_proxy 127.0.0.1:3002
	tls me@example.net
}
`)
	if got := strings.Join(c.Pollers, ","); got != "epoll,poll" {
		t.Errorf("pollers %q", got)
	}
	if c.Loops != 4 || c.Admin != "127.0.0.1:9019" || c.Email != "ops@example.com" || c.Storage != "/var/lib/pollproxy" || c.DefaultBind != "127.0.0.1" {
		t.Errorf("globals %+v", c)
	}
	if c.Timeouts != (Timeouts{5 * time.Second, 30 * time.Second, 7 * time.Second}) || c.GracePeriod != 20*time.Second {
		t.Errorf("timeouts %+v grace %v", c.Timeouts, c.GracePeriod)
	}
	if c.Log == nil || *c.Log != (Log{"common", "stdout"}) {
		t.Errorf("log %+v", c.Log)
	}
	if len(c.Sites) != 4 {
		t.Fatalf("%d sites", len(c.Sites))
	}
	s := c.Sites[0]
	if len(s.Addrs) != 2 || s.Addrs[0].Host != "example.com" || s.Addrs[0].Port != 443 || s.Pos.Line != 21 {
		t.Errorf("site 0 %+v", s)
	}
	rp := s.Proxy
	if strings.Join(rp.Upstreams, " ") != "10.0.0.1:8080 10.0.0.2:8080 10.0.0.3:80" {
		t.Errorf("upstreams %q", rp.Upstreams)
	}
	if rp.Policy != proxy.LeastConnections || rp.ActiveHealth.Fails != 5 || rp.ActiveHealth.Timeout != 30*time.Second ||
		rp.KeepAlive != 16 || rp.KeepAliveTimeout != 2*time.Second || rp.MaxConns != 64 || rp.DialTimeout != 2*time.Second ||
		rp.ResponseHeaderTimeout != 30*time.Second || rp.ReadTimeout != time.Minute {
		t.Errorf("proxy %+v", rp)
	}
	wantUp := []proxy.HeaderOp{op('=', "X-Real-IP", "v"), op('+', "X-Extra", "a"), op('-', "X-Secret", "")}
	if len(rp.HeaderUp) != 3 || rp.HeaderUp[0] != wantUp[0] || rp.HeaderUp[1] != wantUp[1] || rp.HeaderUp[2] != wantUp[2] {
		t.Errorf("header_up %+v", rp.HeaderUp)
	}
	if len(rp.HeaderDown) != 1 || rp.HeaderDown[0] != op('-', "Server", "") {
		t.Errorf("header_down %+v", rp.HeaderDown)
	}
	pc := rp.ProxyConfig(nil)
	if pc.Pool.MaxIdle != 16 || pc.Pool.MaxConns != 64 || pc.ConnectTimeout != 2*time.Second || pc.ActiveHealth.Fails != 5 {
		t.Errorf("proxy config %+v", pc)
	}
	if s.TLS.Mode != TLSAuto || c.Sites[1].TLS.Mode != TLSInternal || c.Sites[2].TLS.Mode != TLSFiles ||
		c.Sites[2].TLS.Cert != "cert.pem" || c.Sites[3].TLS.Mode != TLSACME || c.Sites[3].TLS.Email != "me@example.net" {
		t.Errorf("tls modes %v %v %v %v", s.TLS, c.Sites[1].TLS, c.Sites[2].TLS, c.Sites[3].TLS)
	}
	ls := c.Listeners()
	if len(ls) != 2 || ls[0].Port != 443 || ls[0].Addr != "127.0.0.1:443" || len(ls[0].Hosts) != 2 ||
		ls[1].Port != 8443 || len(ls[1].Hosts) != 3 || ls[1].Hosts[1].Host != "*.example.net" || ls[1].Hosts[2].Host != "" {
		t.Errorf("listeners %+v %+v", ls[0], ls[1])
	}
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, "localhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n")
	if c.Admin != DefaultAdmin || c.GracePeriod != DefaultGracePeriod || c.Log != nil || len(c.Pollers) != 0 || c.Loops != 0 {
		t.Errorf("defaults %+v", c)
	}
	if ls := c.Listeners(); len(ls) != 1 || ls[0].Addr != ":8443" {
		t.Errorf("listeners %+v", ls)
	}
	c = mustParse(t, "{\n\tadmin off\n\tlog\n}\nlocalhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n")
	if c.Admin != "" || c.Log == nil || *c.Log != (Log{"json", "stderr"}) {
		t.Errorf("admin off / log %+v %+v", c, c.Log)
	}
}

func TestErrors(t *testing.T) {
	site := func(body string) string { return "localhost:8443 {\n" + body + "\n}\n" }
	for _, tc := range []struct{ name, in, want string }{
		{"unknown policy", site("\treverse_proxy 127.0.0.1:8080 {\n\t\tlb_policy fastest\n\t}"),
			`Caddyfile:3: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, least_conn, first)`},
		{"unknown directive", site("\treverse_proxy 127.0.0.1:8080\n\tfile_server"),
			`Caddyfile:3: unknown directive "file_server" (want one of reverse_proxy, tls)`},
		{"missing upstream", site("\treverse_proxy"),
			`Caddyfile:2: reverse_proxy: no upstream (want: reverse_proxy host:port [host:port...])`},
		{"no reverse_proxy", site("\ttls internal"),
			`Caddyfile:1: site localhost:8443: no reverse_proxy (want: reverse_proxy UPSTREAM...)`},
		{"bad upstream", site("\treverse_proxy 127.0.0.1:http2"),
			`Caddyfile:2: reverse_proxy: upstream "127.0.0.1:http2": want host:port with a port in 1-65535`},
		{"tls upstream", site("\treverse_proxy https://10.0.0.1"),
			`Caddyfile:2: reverse_proxy: upstream "https://10.0.0.1": upstreams speak plain HTTP/1.1`},
		{"matcher", site("\treverse_proxy /api/* 10.0.0.1:80"),
			`Caddyfile:2: reverse_proxy: request matchers ("/api/*") are not supported`},
		{"bad duration", site("\treverse_proxy 127.0.0.1:8080 {\n\t\tdial_timeout soon\n\t}"),
			`Caddyfile:3: reverse_proxy: dial_timeout: "soon": want a positive duration such as 500ms, 10s or 2m`},
		{"bad number", site("\treverse_proxy 127.0.0.1:8080 {\n\t\tmax_conns 0\n\t}"),
			`Caddyfile:3: reverse_proxy: max_conns: "0": want a whole number >= 1`},
		{"unknown proxy option", site("\treverse_proxy 127.0.0.1:8080 {\n\n\t\tflush_interval 1s\n\t}"),
			`Caddyfile:4: reverse_proxy: unknown option "flush_interval" (want one of to, lb_policy,`},
		{"header without value", site("\treverse_proxy 127.0.0.1:8080 {\n\t\theader_up X-A\n\t}"),
			`Caddyfile:3: reverse_proxy: header_up: X-A needs a value (or -X-A to delete it)`},
		{"header bad name", site("\treverse_proxy 127.0.0.1:8080 {\n\t\theader_down \"X A\" v\n\t}"),
			`Caddyfile:3: reverse_proxy: header_down: "X A" is not a valid field name`},
		{"delete with value", site("\treverse_proxy 127.0.0.1:8080 {\n\t\theader_up -X-A v\n\t}"),
			`Caddyfile:3: reverse_proxy: header_up: -X-A deletes the field and takes no value`},
		{"two proxies", site("\treverse_proxy 127.0.0.1:8080\n\treverse_proxy 127.0.0.1:8081"),
			`Caddyfile:3: reverse_proxy: a site has one reverse_proxy (the first is at Caddyfile:2)`},
		{"tls args", site("\treverse_proxy 127.0.0.1:8080\n\ttls a b c"),
			`Caddyfile:3: tls: want internal, CERT_FILE KEY_FILE, or an ACME account e-mail`},
		{"http site", "http://localhost {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "http://localhost": plain HTTP sites are not supported`},
		{"path in site", "localhost/app {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "localhost/app": paths are not supported`},
		{"bad port", "localhost:99999 {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "localhost:99999": port "99999": want 1-65535`},
		{"bad wildcard", "a.*.example.com {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "a.*.example.com": a wildcard replaces the leftmost label only`},
		{"duplicate host", site("\treverse_proxy 127.0.0.1:8080") + site("\treverse_proxy 127.0.0.1:8081"),
			`Caddyfile:4: site localhost:8443: host "localhost" on port 8443 is also served by the site at Caddyfile:1`},
		{"unknown global", "{\n\tdebug\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: unknown global option "debug" (want one of poller, loops,`},
		{"unknown poller", "{\n\tpoller fastpoll\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: poller: unknown backend "fastpoll" (want auto or one of `},
		{"auto in split", "{\n\tpoller auto poll\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: poller: an A/B split names its backends (auto is only allowed alone)`},
		{"bad loops", "{\n\tloops many\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: loops: "many": want a whole number >= 0`},
		{"bad admin", "{\n\tadmin 2019\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: admin: "2019": want host:port (e.g. 127.0.0.1:2019) or off`},
		{"bad timeout", "{\n\ttimeouts {\n\t\tread_header 10s\n\t\twrite 5s\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:4: timeouts: unknown timeout "write" (want read_header, idle, handshake)`},
		{"bad grace", "{\n\tgrace_period -1s\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: grace_period: "-1s": want a positive duration`},
		{"bad log format", "{\n\tlog {\n\t\tformat xml\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: log: format: unknown format "xml" (want json, common)`},
		{"unclosed block", "localhost {\n\treverse_proxy 127.0.0.1:8080 {\n",
			`Caddyfile:2: unexpected EOF`},
		{"no sites", "{\n\tloops 2\n}\n", `Caddyfile:1: no site block`},
		{"missing import", site("\timport missing.caddy"), `Caddyfile:2: File to import not found: missing.caddy`},
		{"unset env", site("\treverse_proxy {$POLLPROXY_TEST_UNSET_UPSTREAM}"),
			`Caddyfile:2: reverse_proxy: no upstream`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			es, ok := err.(Errors)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T %v is not Errors", err, err)
			}
			if !strings.HasPrefix(es[0].Error(), tc.want) {
				t.Errorf("got  %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestSeveralErrors(t *testing.T) {
	_, err := Parse("Caddyfile", []byte("{\n\tloops x\n}\nlocalhost {\n\treverse_proxy a:1 {\n\t\tlb_policy fastest\n\t\tkeepalive -1\n\t}\n\tgzip\n}\n"))
	es, _ := err.(Errors)
	var lines []int
	for _, e := range es {
		lines = append(lines, e.Pos.Line)
	}
	if len(es) != 4 || lines[0] != 2 || lines[1] != 6 || lines[2] != 7 || lines[3] != 9 {
		t.Errorf("errors at lines %v:\n%v", lines, err)
	}
}

func TestImportsSnippetsEnv(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("proxy-opts.caddy", "lb_policy first\nheader_up X-From-Import yes\n")
	write("sites.caddy", "imported.localhost:8443 {\n\treverse_proxy 127.0.0.1:7000\n}\n")
	t.Setenv("POLLPROXY_TEST_UPSTREAM", "127.0.0.1:7777")
	main := write("Caddyfile", `(hardened) {
	header_down -Server
	header_up X-Site {args[0]}
}

localhost:8443 {
	reverse_proxy {$POLLPROXY_TEST_UPSTREAM} {$POLLPROXY_TEST_MISSING:127.0.0.1:7778} {
		import proxy-opts.caddy
		import hardened main
	}
}

import sites.caddy
`)
	c, err := Load(main)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sites) != 2 {
		t.Fatalf("%d sites", len(c.Sites))
	}
	rp := c.Sites[0].Proxy
	if strings.Join(rp.Upstreams, " ") != "127.0.0.1:7777 127.0.0.1:7778" {
		t.Errorf("env upstreams %q", rp.Upstreams)
	}
	if rp.Policy != proxy.First || len(rp.HeaderUp) != 2 || rp.HeaderUp[1] != op('=', "X-Site", "main") || len(rp.HeaderDown) != 1 {
		t.Errorf("imported options %+v", rp)
	}
	if c.Sites[1].Addrs[0].Host != "imported.localhost" {
		t.Errorf("imported site %+v", c.Sites[1].Addrs)
	}

	// An error inside an imported file names that file and its line.
	write("bad.caddy", "lb_policy first\nlb_policy fastest\n")
	bad := write("Caddyfile.bad", "localhost:8443 {\n\treverse_proxy 127.0.0.1:1 {\n\t\timport bad.caddy\n\t}\n}\n")
	_, err = Load(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.caddy:2: reverse_proxy: lb_policy: unknown policy \"fastest\"") {
		t.Errorf("import error: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "reading configuration") {
		t.Errorf("err %v", err)
	}
}

func op(o byte, name, value string) proxy.HeaderOp {
	return proxy.HeaderOp{Op: o, Name: name, Value: value}
}
