package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/site"
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
	servers {
		timeouts {
			read_body 3s
			read_header 5s
			write 40s
			idle 30s
			handshake 7s
		}
		trusted_proxies static 10.1.0.0/16 private_ranges
		client_ip_headers X-Real-IP X-Forwarded-For
		max_header_size 16KB
		listener_wrappers {
			proxy_protocol {
				timeout 0
				allow 10.0.0.0/8 192.168.1.1
				deny 10.9.0.0/16
				fallback_policy REJECT
			}
			tls
		}
	}
	grace_period 20s
	metrics
	log {
		format common
		output stdout
	}
}

example.com, www.example.com {
	reverse_proxy 10.0.0.1:8080 http://10.0.0.2:8080 {
		to 10.0.0.3
		lb_policy least_conn
		max_fails 5
		fail_duration 30s
		unhealthy_status 5xx 429
		unhealthy_latency 2s
		lb_retries 2
		lb_try_duration 5s
		header_up X-Real-IP v
		header_up +X-Extra a
		header_up -X-Secret
		header_down -Server
		flush_interval -1
		transport http {
			keepalive_idle_conns_per_host 16
			keepalive 2s
			max_conns_per_host 64
			dial_timeout 2s
			response_header_timeout 30s
			read_timeout 1m
			write_timeout 10s
			proxy_protocol v2
		}
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
	if c.Timeouts != (Timeouts{5 * time.Second, 30 * time.Second, 7 * time.Second, 40 * time.Second}) || c.GracePeriod != 20*time.Second ||
		c.ReadBodyTimeout != 3*time.Second || c.MaxHeaderSize != 16000 {
		t.Errorf("timeouts %+v grace %v read_body %v max_header_size %d", c.Timeouts, c.GracePeriod, c.ReadBodyTimeout, c.MaxHeaderSize)
	}
	if pp := c.ProxyProtocol; pp == nil || pp.Timeout != 0 || fmt.Sprint(pp.Allow) != "[10.0.0.0/8 192.168.1.1/32]" ||
		fmt.Sprint(pp.Deny) != "[10.9.0.0/16]" || pp.Fallback != server.PolicyReject {
		t.Errorf("proxy_protocol %+v", c.ProxyProtocol)
	}
	if len(c.TrustedProxies) != 7 || c.TrustedProxies[0].String() != "10.1.0.0/16" || strings.Join(c.ClientIPHeaders, ",") != "X-Real-IP,X-Forwarded-For" {
		t.Errorf("trusted %v client_ip_headers %v", c.TrustedProxies, c.ClientIPHeaders)
	}
	if c.Log == nil || c.Log.Format != "common" || c.Log.Output.Kind != "stdout" {
		t.Errorf("log %+v", c.Log)
	}
	if len(c.Sites) != 4 {
		t.Fatalf("%d sites", len(c.Sites))
	}
	s := c.Sites[0]
	if len(s.Addrs) != 2 || s.Addrs[0].Host != "example.com" || s.Addrs[0].Port != 443 || s.Pos.Line != 38 {
		t.Errorf("site 0 %+v", s)
	}
	rp := *s.Proxies[0]
	if strings.Join(rp.Upstreams, " ") != "10.0.0.1:8080 10.0.0.2:8080 10.0.0.3:80" {
		t.Errorf("upstreams %q", rp.Upstreams)
	}
	if rp.Policy != proxy.LeastConnections || rp.Health.MaxFails != 5 || rp.Health.FailDuration != 30*time.Second ||
		fmt.Sprint(rp.Health.UnhealthyStatus) != "[5 429]" || rp.Health.UnhealthyLatency != 2*time.Second ||
		rp.Retries != 2 || rp.TryDuration != 5*time.Second || rp.WriteTimeout != 10*time.Second ||
		rp.KeepAlive != 16 || rp.KeepAliveTimeout != 2*time.Second || rp.ProxyProtocol != 2 || rp.MaxConns != 64 || rp.DialTimeout != 2*time.Second ||
		rp.ResponseHeaderTimeout != 30*time.Second || rp.ReadTimeout != time.Minute {
		t.Errorf("proxy %+v", rp)
	}
	wantUp := []route.HeaderOp{op('=', "X-Real-IP", "v"), op('+', "X-Extra", "a"), op('-', "X-Secret", "")}
	if len(rp.HeaderUp) != 3 || !sameOp(rp.HeaderUp[0], wantUp[0]) || !sameOp(rp.HeaderUp[1], wantUp[1]) || !sameOp(rp.HeaderUp[2], wantUp[2]) {
		t.Errorf("header_up %+v", rp.HeaderUp)
	}
	if len(rp.HeaderDown) != 1 || !sameOp(rp.HeaderDown[0], op('-', "Server", "")) {
		t.Errorf("header_down %+v", rp.HeaderDown)
	}
	pc := rp.ProxyConfig(nil)
	if pc.Pool.MaxIdle != 16 || pc.Pool.MaxConns != 64 || pc.ConnectTimeout != 2*time.Second {
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
	if c.Admin != "" || c.Log == nil || c.Log.Name != DefaultLoggerName || c.Log.Output.Kind != "" {
		t.Errorf("admin off / log %+v %+v", c, c.Log)
	}
}

// TestAdminBlock: Caddy's admin block, with and without an address.
func TestAdminBlock(t *testing.T) {
	site := "localhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n"
	c := mustParse(t, "{\n\tadmin 127.0.0.1:9019 {\n\t\torigins localhost:9019 https://dash.example\n\t\tenforce_origin\n\t}\n}\n"+site)
	if c.Admin != "127.0.0.1:9019" || !c.AdminEnforceOrigin || strings.Join(c.AdminOrigins, " ") != "localhost:9019 https://dash.example" {
		t.Errorf("admin block: %q %q %v", c.Admin, c.AdminOrigins, c.AdminEnforceOrigin)
	}
	c = mustParse(t, "{\n\tadmin {\n\t\torigins admin.example:2019\n\t}\n}\n"+site)
	if c.Admin != DefaultAdmin || c.AdminEnforceOrigin || len(c.AdminOrigins) != 1 {
		t.Errorf("admin block without an address: %q %q %v", c.Admin, c.AdminOrigins, c.AdminEnforceOrigin)
	}
	if c := mustParse(t, site); c.AdminOrigins != nil || c.AdminEnforceOrigin {
		t.Errorf("default admin origins %q %v", c.AdminOrigins, c.AdminEnforceOrigin)
	}
}

func TestErrors(t *testing.T) {
	site := func(body string) string { return "localhost:8443 {\n" + body + "\n}\n" }
	rp := func(opts string) string { return site("\treverse_proxy 127.0.0.1:8080 {\n" + opts + "\n\t}") }
	tr := func(opts string) string { return rp("\t\ttransport http {\n" + opts + "\n\t\t}") }
	for _, tc := range []struct{ name, in, want string }{
		// reverse_proxy
		{"unknown policy", rp("\t\tlb_policy fastest"),
			`Caddyfile:3: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, least_conn, first, random,`},
		{"weighted policy", rp("\t\tlb_policy weighted_round_robin 1 x"),
			`Caddyfile:3: reverse_proxy: lb_policy: weight "x": want a whole number >= 0`},
		{"header policy without field", rp("\t\tlb_policy header"),
			`Caddyfile:3: reverse_proxy: lb_policy: header wants one argument: the field name`},
		{"policy argument", rp("\t\tlb_policy round_robin x"),
			`Caddyfile:3: reverse_proxy: lb_policy: round_robin takes no argument`},
		{"policy fallback", rp("\t\tlb_policy header X {\n\t\t\tfallback ip_hash\n\t\t}"),
			`Caddyfile:4: reverse_proxy: lb_policy: fallback ip_hash is not supported by pollproxy`},
		{"fallback of a policy that always picks", rp("\t\tlb_policy round_robin {\n\t\t\tfallback first\n\t\t}"),
			`Caddyfile:4: reverse_proxy: lb_policy: round_robin always picks; fallback is for header, query and cookie`},
		{"random_choose", rp("\t\tlb_policy random_choose 0"),
			`Caddyfile:3: reverse_proxy: lb_policy: random_choose "0": want a whole number >= 1`},
		{"lb_retries", rp("\t\tlb_retries -1"), `Caddyfile:3: reverse_proxy: lb_retries: "-1": want a whole number >= 0`},
		{"lb_try_duration", rp("\t\tlb_try_duration soon"), `Caddyfile:3: reverse_proxy: lb_try_duration: "soon": want a positive duration`},
		{"max_fails", rp("\t\tmax_fails 0"), `Caddyfile:3: reverse_proxy: max_fails: "0": want a whole number >= 1`},
		{"fail_duration", rp("\t\tfail_duration"), `Caddyfile:3: reverse_proxy: fail_duration: want one argument`},
		{"unhealthy_status", rp("\t\tunhealthy_status 5xx 600"),
			`Caddyfile:3: reverse_proxy: unhealthy_status: "600": want a status code (100-599) or a class such as 5xx`},
		{"unhealthy_latency", rp("\t\tunhealthy_latency 0s"), `Caddyfile:3: reverse_proxy: unhealthy_latency: "0s": want a positive duration`},
		{"active health method", rp("\t\thealth_method HEAD"), `Caddyfile:3: reverse_proxy: health_method is not supported by pollproxy`},
		{"dynamic multi", rp("\t\tdynamic multi"), `Caddyfile:3: reverse_proxy: dynamic multi is not supported by pollproxy`},
		{"upstream placeholder in header_down", rp("\t\theader_down X-Origin {upstream_hostport}"),
			`Caddyfile:3: reverse_proxy: header_down: placeholder {upstream_hostport} outside header_up is not supported by pollproxy`},
		{"upstream placeholder in header", site("\theader X-Origin {http.reverse_proxy.upstream.host}\n\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: header: placeholder {http.reverse_proxy.upstream.host} outside header_up is not supported by pollproxy`},
		{"replace in an upstream-filled field", rp("\t\theader_up Host {upstream_hostport}\n\t\theader_up Host ^(.*):80$ $1"),
			`Caddyfile:4: reverse_proxy: header_up: replacing in host, which is set from an upstream placeholder, is not supported by pollproxy`},
		{"handle_response matcher", rp("\t\thandle_response @nope {\n\t\t\trespond 500\n\t\t}"),
			`Caddyfile:3: reverse_proxy: response matcher @nope is not defined in this reverse_proxy`},
		{"copy_response outside", site("\tcopy_response"),
			`Caddyfile:2: copy_response: only inside reverse_proxy's handle_response, as in Caddy`},
		{"unknown proxy option", rp("\n\t\tfastest yes"),
			`Caddyfile:4: reverse_proxy: unknown option "fastest" (want one of to, lb_policy,`},
		{"old pollproxy name", rp("\t\tdial_timeout 2s"),
			`Caddyfile:3: reverse_proxy: dial_timeout: as in Caddy, this belongs in transport http { ... }`},
		{"bad flush_interval", rp("\t\tflush_interval often"), `Caddyfile:3: reverse_proxy: flush_interval: "often": want a duration`},
		{"header without value", rp("\t\theader_up X-A"),
			`Caddyfile:3: reverse_proxy: header_up: X-A needs a value (or -X-A to delete it)`},
		{"header bad name", site("\theader \"X A\" v"),
			`Caddyfile:2: header: "X A" is not a valid field name`},
		{"delete with value", rp("\t\theader_up -X-A v"),
			`Caddyfile:3: reverse_proxy: header_up: -X-A deletes the field and takes no value`},
		{"bad regexp", rp("\t\theader_up X-A ( b"), `Caddyfile:3: reverse_proxy: header_up: regexp "(": `},
		{"default on request", rp("\t\theader_up ?X-A b"),
			`Caddyfile:3: reverse_proxy: header_up: ?X-A: the default form only applies to response fields`},
		{"unknown placeholder", rp("\t\theader_up X-A {upstream_latency}"),
			`Caddyfile:3: reverse_proxy: header_up: placeholder {upstream_latency} is not supported by pollproxy`},
		{"request field in response", rp("\t\theader_down X-A {header.Cookie}"),
			`Caddyfile:3: reverse_proxy: header_down: placeholder {header.Cookie}: request fields in response edits are not supported by pollproxy`},
		// transport
		{"transport kind", rp("\t\ttransport http3"), `Caddyfile:3: reverse_proxy: transport http3 is not supported by pollproxy (want transport http { ... } or fastcgi { ... })`},
		{"fastcgi split not ascii", rp("\t\ttransport fastcgi {\n\t\t\tsplit .ｐhp\n\t\t}"), `Caddyfile:3: reverse_proxy: transport fastcgi: split path contains non-ASCII characters`},
		{"fastcgi option", rp("\t\ttransport fastcgi {\n\t\t\tkeepalive 2s\n\t\t}"), `Caddyfile:4: transport fastcgi: unrecognized subdirective keepalive (want root, split, env, resolve_root_symlink, dial_timeout, read_timeout, write_timeout, capture_stderr)`},
		{"transport proxy_protocol", tr("\t\t\tproxy_protocol v3"), `Caddyfile:4: transport http: proxy_protocol: "v3": want v1 or v2`},
		{"transport tls_except_ports", tr("\t\t\ttls_except_ports 8080"), `Caddyfile:4: transport http: tls_except_ports is not supported by pollproxy`},
		{"transport unknown", tr("\t\t\tturbo on"), `Caddyfile:4: transport http: unknown option "turbo"`},
		{"transport duration", tr("\t\t\tdial_timeout soon"), `Caddyfile:4: transport http: dial_timeout: "soon": want a positive duration`},
		{"transport number", tr("\t\t\tmax_conns_per_host 0"), `Caddyfile:4: transport http: max_conns_per_host: "0": want a whole number >= 1`},
		{"transport keepalive", tr("\t\t\tkeepalive 16"), `Caddyfile:4: transport http: keepalive: "16": want a duration such as 2m, or off`},
		{"transport versions 3", tr("\t\t\tversions 3"), `Caddyfile:4: transport http: versions: HTTP/3 to upstreams is not supported by pollproxy`},
		{"transport versions unknown", tr("\t\t\tversions 1.0"), `Caddyfile:4: transport http: versions: unsupported HTTP version: 1.0, supported version: 1.1, 2, h2c, 3`},
		// upstreams
		{"missing upstream", site("\treverse_proxy"),
			`Caddyfile:2: reverse_proxy: no upstream (want: reverse_proxy host:port [host:port...])`},
		{"bad upstream", site("\treverse_proxy 127.0.0.1:http2"),
			`Caddyfile:2: reverse_proxy: upstream "127.0.0.1:http2": want host:port with a port in 1-65535`},
		{"mixed schemes", site("\treverse_proxy https://10.0.0.1 http://10.0.0.2"),
			`Caddyfile:2: reverse_proxy: for now, all proxy upstreams must use the same scheme (transport protocol); expecting 'https://' but got 'http://'`},
		{"unix upstream without path", site("\treverse_proxy unix/"),
			`Caddyfile:2: reverse_proxy: upstream "unix/": want unix//path/to/socket`},
		{"upstream path", site("\treverse_proxy 10.0.0.1:80/api"),
			`Caddyfile:2: reverse_proxy: upstream "10.0.0.1:80/api": upstream addresses cannot have paths`},
		{"unset env", site("\treverse_proxy {$POLLPROXY_TEST_UNSET_UPSTREAM}"),
			`Caddyfile:2: reverse_proxy: no upstream`},
		// site directives
		{"unsupported directive", site("\treverse_proxy 127.0.0.1:8080\n\tpush"),
			`Caddyfile:3: push is not supported by pollproxy`},
		{"fastcgi health", rp("\t\thealth_uri /ping\n\t\ttransport fastcgi"), `Caddyfile:2: reverse_proxy: active health checks with transport fastcgi are not supported by pollproxy`},
		{"fastcgi h2c", site("\treverse_proxy h2c://127.0.0.1:9000 {\n\t\ttransport fastcgi\n\t}"), `Caddyfile:2: reverse_proxy: transport fastcgi speaks FastCGI, not HTTP/2 (want upstreams without h2c://)`},
		{"php_fastcgi index", site("\tphp_fastcgi 127.0.0.1:9000 {\n\t\tindex a.php b.php\n\t}"), `Caddyfile:3: php_fastcgi: index: want one file name, or off`},
		{"file_server fs", site("\tfile_server {\n\t\tfs embedded\n\t}"), `Caddyfile:3: file_server: fs is not supported by pollproxy`},
		{"file_server precompressed", site("\tfile_server {\n\t\tprecompressed gzip lzma\n\t}"), `Caddyfile:3: file_server: precompressed "lzma": want br, zstd or gzip`},
		{"root placeholder", site("\troot * /srv/{host}\n\tfile_server"), `Caddyfile:2: root: placeholders in "/srv/{host}" are not supported by pollproxy`},
		{"root args", site("\troot\n\tfile_server"), `Caddyfile:2: root: want [matcher] path`},
		{"try_files glob", site("\ttry_files /a/*.html\n\tfile_server"), `Caddyfile:2: try_files: glob patterns in "/a/*.html" are not supported by pollproxy`},
		{"try_files policy", site("\ttry_files {path} {\n\t\tpolicy biggest\n\t}\n\tfile_server"), `Caddyfile:3: try_files: unrecognized try policy: biggest`},
		{"file split_path", site("\t@f file {\n\t\tsplit_path\n\t}\n\trespond @f 200"), `Caddyfile:3: file: split_path wants extensions such as .php`},
		{"unknown directive", site("\treverse_proxy 127.0.0.1:8080\n\tgzip"),
			`Caddyfile:3: unknown directive "gzip" (want one of reverse_proxy, php_fastcgi, handle,`},
		{"undefined matcher", site("\treverse_proxy @api 127.0.0.1:8080"), `Caddyfile:2: matcher @api is not defined in this site`},
		{"unknown matcher", site("\t@a {\n\t\tcolour red\n\t}\n\trespond @a 200"), `Caddyfile:3: unknown matcher "colour"`},
		{"unsupported matcher", site("\t@a tls sni a.example\n\trespond @a 200"), `Caddyfile:2: matcher tls is not supported by pollproxy`},
		{"matcher without args", site("\t@a path\n\trespond @a 200"), `Caddyfile:2: path: want arguments`},
		{"bad path_regexp", site("\t@a path_regexp (\n\trespond @a 200"), `Caddyfile:2: path_regexp: "(": `},
		{"two path_regexp", site("\t@a {\n\t\tpath_regexp ^/a\n\t\tpath_regexp ^/b\n\t}\n\trespond @a 200"), `Caddyfile:4: path_regexp: only one per named matcher`},
		{"bad header_regexp", site("\t@a header_regexp X\n\trespond @a 200"), `Caddyfile:2: header_regexp: want [name] field regexp`},
		{"bad query", site("\t@a query debug\n\trespond @a 200"), `Caddyfile:2: query: "debug": want key=value`},
		{"bad remote_ip", site("\t@a remote_ip 10.0.0.0/33\n\trespond @a 200"), `Caddyfile:2: remote_ip: "10.0.0.0/33": want an IP address or a CIDR range`},
		{"remote_ip forwarded", site("\t@a remote_ip forwarded 10.0.0.0/8\n\trespond @a 200"), `Caddyfile:2: remote_ip: forwarded is not supported by pollproxy`},
		{"bad client_ip", site("\t@a client_ip nowhere\n\trespond @a 200"), `Caddyfile:2: client_ip: "nowhere": want an IP address`},
		{"bad protocol", site("\t@a protocol http/3\n\trespond @a 200"), `Caddyfile:2: protocol: http/3 is not supported by pollproxy`},
		{"bad expression", site("\t@a expression `{method} ==`\n\trespond @a 200"), `Caddyfile:2: expression: expression {method} ==: ERROR`},
		{"expression type", site("\t@a expression `{method}`\n\trespond @a 200"), `Caddyfile:2: expression: expression {method}: is string, want a bool`},
		// vars and map, refused where Caddy refuses them
		{"map shorthand destination", site("\tmap {path} {host} {\n\t\t/a b\n\t}\n\trespond ok"), `Caddyfile:2: map: destination {host} conflicts with a Caddyfile placeholder shorthand`},
		{"map destination not a placeholder", site("\tmap {path} dest {\n\t\t/a b\n\t}\n\trespond ok"), `Caddyfile:2: map: destination 0 must be a placeholder and only a placeholder, but got 'dest'`},
		{"map duplicate input", site("\tmap {path} {d} {\n\t\t/a b\n\t\t/a c\n\t}\n\trespond ok"), `Caddyfile:4: map: mapping 1 has a duplicate input '/a' previously used with mapping 0`},
		{"map too many outputs", site("\tmap {path} {d} {\n\t\t/a b c\n\t}\n\trespond ok"), `Caddyfile:3: map: too many outputs`},
		{"map cycle", site("\tmap {path} {a} {\n\t\t/x {b}\n\t}\n\tmap {a} {b} {\n\t\tdefault {a}\n\t}\n\trespond ok"), `Caddyfile:2: map: placeholder {a} reads itself through the maps that define it`},
		{"vars without value", site("\tvars name\n\trespond ok"), `Caddyfile:2: vars: name: want a value`},
		{"vars matcher without value", site("\t@v vars name\n\trespond @v ok"), `Caddyfile:2: vars: malformed vars matcher: expected at least one value to match against`},
		{"expression placeholder", site("\t@a expression `{http.nope} == 'x'`\n\trespond @a 200"), `Caddyfile:2: expression: expression {http.nope} == 'x': placeholder {http.nope} is not supported by pollproxy`},
		{"bad not", site("\t@a not\n\trespond @a 200"), `Caddyfile:2: not: want a matcher or a block of them`},
		{"absent with value", site("\t@a header !X v\n\trespond @a 200"), `Caddyfile:2: header: !x asserts the field is absent and takes no value`},
		{"duplicate matcher", site("\t@a path /a\n\t@a path /b\n\trespond @a 200"), `Caddyfile:3: matcher @a is defined twice`},
		{"redir without target", site("\tredir"), `Caddyfile:2: redir: want [matcher] to [temporary|permanent|html|3xx]`},
		{"redir code", site("\tredir /old /new 200"), `Caddyfile:2: redir: "200": want temporary, permanent, html or a status in 300-308`},
		{"redir placeholder", site("\tredir https://{host}{http.nope}"), `Caddyfile:2: redir: placeholder {http.nope} is not supported by pollproxy`},
		{"respond status", site("\trespond \"gone\" 700"), `Caddyfile:2: respond: status 700: want 200-599`},
		{"respond status text", site("\trespond \"gone\" gone"), `Caddyfile:2: respond: status "gone": want a number`},
		{"respond close argument", site("\trespond 200 {\n\t\tclose now\n\t}"), `Caddyfile:3: respond: close takes no argument`},
		{"header empty", site("\treverse_proxy 127.0.0.1:8080\n\theader"), `Caddyfile:3: header: want a field edit`},
		{"header bad", site("\treverse_proxy 127.0.0.1:8080\n\theader -X v"), `Caddyfile:3: header: -X deletes the field and takes no value`},
		{"request_header default", site("\treverse_proxy 127.0.0.1:8080\n\trequest_header ?X v"), `Caddyfile:3: request_header: ?X: the default form only applies to response fields`},
		{"rewrite args", site("\trewrite /a /b /c"), `Caddyfile:2: rewrite: want [matcher] target`},
		{"uri op", site("\turi lowercase"), `Caddyfile:2: uri: unknown operation "lowercase" (want strip_prefix, strip_suffix, replace, path_regexp, query)`},
		{"uri path_regexp", site("\turi path_regexp a(b c"), `Caddyfile:2: uri: path_regexp "a(b": error parsing regexp`},
		{"uri query", site("\turi query +a"), `Caddyfile:2: uri: query +a: want one value`},
		{"uri query both", site("\turi query a b {\n\t\tc d\n\t}"), `Caddyfile:2: uri: query edits go on the line or in a block`},
		{"uri strip args", site("\turi strip_prefix"), `Caddyfile:2: uri: strip_prefix wants one argument`},
		{"handle_path without path", site("\t@a method GET\n\thandle_path @a {\n\t\trespond 200\n\t}"),
			`Caddyfile:3: handle_path: want one path prefix`},
		{"handle args", site("\thandle /a extra {\n\t\trespond 200\n\t}"), `Caddyfile:2: handle: want a matcher and a block, not "extra"`},
		{"nested unsupported", site("\thandle /a {\n\t\tpush\n\t}"), `Caddyfile:3: push is not supported by pollproxy`},
		{"tls in handle", site("\thandle {\n\t\ttls internal\n\t}"), `Caddyfile:3: tls: belongs at the top of a site block`},
		{"abort args", site("\tabort now"), `Caddyfile:2: abort: takes only a matcher`},
		{"invoke undefined", "&(app) {\n\trespond 200\n}\n" + site("\tinvoke nope"), `Caddyfile:5: cannot invoke named route 'nope', which was not defined`},
		{"invoke itself", "&(a) {\n\tinvoke b\n}\n&(b) {\n\tinvoke a\n}\n" + site("\tinvoke a"), `Caddyfile:5: invoke: named route 'a' invokes itself, which would never end`},
		{"named route twice", "&(a) {\n\trespond 1\n}\n&(a) {\n\trespond 2\n}\n" + site("\tinvoke a"), `Caddyfile:4: cannot have duplicate named_routes: a`},
		// tls
		{"tls args", site("\treverse_proxy 127.0.0.1:8080\n\ttls a b c"),
			`Caddyfile:3: tls: want internal, CERT_FILE KEY_FILE, or an ACME account e-mail`},
		{"tls option", site("\treverse_proxy 127.0.0.1:8080\n\ttls {\n\t\tdns cloudflare TOKEN\n\t}"),
			`Caddyfile:4: tls: dns is not supported by pollproxy`},
		{"tls protocol", site("\treverse_proxy 127.0.0.1:8080\n\ttls {\n\t\tprotocols tls1.1\n\t}"),
			`Caddyfile:4: tls: wrong protocol name or protocol not supported: 'tls1.1'`},
		{"tls issuers mixed", site("\treverse_proxy 127.0.0.1:8080\n\ttls internal {\n\t\tissuer acme\n\t}"),
			`Caddyfile:3: tls: cannot mix issuer subdirective (explicit issuers) with other issuer-specific subdirectives (implicit issuers)`},
		{"tls bare", site("\treverse_proxy 127.0.0.1:8080\n\ttls"), `Caddyfile:3: tls: want internal`},
		// site addresses
		{"plain and https:// on one port", ":8080 {\n\trespond ok\n}\nhttps://example.com:8080 {\n\trespond ok\n}\n",
			`Caddyfile:1: server listening on :8080 is configured for HTTPS and cannot natively multiplex HTTP and HTTPS: :8080 (try specifying https:// in the address)`},
		{"http:// and a name on one port", "http://a.example:8080 {\n\trespond ok\n}\nb.example:8080 {\n\trespond ok\n}\n",
			`Caddyfile:4: server listening on :8080 is configured for HTTP and cannot natively multiplex HTTP and HTTPS: b.example:8080 (an http:// site holds the port)`},
		{"http with tls", "http://localhost:8080 {\n\trespond ok\n\ttls {\n\t\tprotocols tls1.3\n\t}\n}\n",
			`Caddyfile:1: server listening on :8080 is HTTP, but attempts to configure TLS connection policies`},
		{"auto_https unknown", "{\n\tauto_https sometimes\n}\n" + site("\trespond ok"),
			`Caddyfile:2: auto_https: "sometimes": want off,`},
		{"protocols h3", "{\n\tservers {\n\t\tprotocols h1 h2 h3\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: protocols h3 (HTTP/3) is not supported by pollproxy`},
		{"path in site", "localhost/app {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "localhost/app": paths in site addresses are not supported by pollproxy`},
		{"bad port", "localhost:99999 {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "localhost:99999": port "99999": want 1-65535`},
		{"bad wildcard", "a.*.example.com {\n\treverse_proxy 127.0.0.1:8080\n}\n",
			`Caddyfile:1: site address "a.*.example.com": a wildcard replaces the leftmost label only`},
		{"duplicate host", site("\treverse_proxy 127.0.0.1:8080") + site("\treverse_proxy 127.0.0.1:8081"),
			`Caddyfile:4: site localhost:8443: host "localhost" on port 8443 is also served by the site at Caddyfile:1`},
		// global options
		{"unsupported global", "{\n\tacme_dns cloudflare TOKEN\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: acme_dns is not supported by pollproxy`},
		{"unknown global", "{\n\tturbo\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: unknown global option "turbo" (want one of poller, loops,`},
		{"unknown poller", "{\n\tpoller fastpoll\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: poller: unknown backend "fastpoll" (want auto or one of `},
		{"auto in split", "{\n\tpoller auto poll\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: poller: an A/B split names its backends (auto is only allowed alone)`},
		{"bad loops", "{\n\tloops many\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: loops: "many": want a whole number >= 0`},
		{"bad admin", "{\n\tadmin 2019\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: admin: "2019": want host:port (e.g. 127.0.0.1:2019), unix//path/to.sock or off`},
		{"admin socket mode", "{\n\tadmin unix//run/a.sock|0444\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: admin: "unix//run/a.sock|0444": the socket's owner needs write permission (0200) to connect`},
		{"admin socket bad mode", "{\n\tadmin unix//run/a.sock|rw\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: admin: "unix//run/a.sock|rw": the socket's mode "rw" is not octal`},
		{"admin off block", "{\n\tadmin off {\n\t\tenforce_origin\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: admin off: takes no block`},
		{"admin unknown", "{\n\tadmin {\n\t\tremote\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: admin: unknown option "remote" (want origins, enforce_origin)`},
		{"admin no origins", "{\n\tadmin {\n\t\torigins\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: admin: origins: want one or more origins`},
		{"admin bad origin", "{\n\tadmin {\n\t\torigins https://dash.example/path\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: admin: origins: "https://dash.example/path": want scheme://host[:port]`},
		{"global timeouts", "{\n\ttimeouts {\n\t\tread_header 10s\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: timeouts is not a global option: as in Caddy, write servers { timeouts {`},
		{"bad timeout", "{\n\tservers {\n\t\ttimeouts {\n\t\t\tread_header 10s\n\t\t\tforever 5s\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: timeouts: unknown timeout "forever" (want read_body, read_header, write, idle`},
		{"servers twice", "{\n\tservers :443 {\n\t\tmax_header_size 8KB\n\t}\n\tservers :443 {\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: servers :443: a second servers block for the same listener`},
		{"servers two addresses", "{\n\tservers :443 :80 {\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: servers: want at most one listener address`},
		{"servers unsupported", "{\n\tservers {\n\t\ttrace\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: trace is not supported by pollproxy: it logs each handler`},
		{"servers 0rtt", "{\n\tservers {\n\t\t0rtt off\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: 0rtt is not supported by pollproxy: it configures HTTP/3 (QUIC), which pollproxy does not serve`},
		{"servers name without address", "{\n\tservers {\n\t\tname public\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: name: cannot set a name for a server without a listener address`},
		{"strict_sni_host value", "{\n\tservers {\n\t\tstrict_sni_host off\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: strict_sni_host only supports 'on' or 'insecure_off', got 'off'`},
		{"keepalive_count", "{\n\tservers {\n\t\tkeepalive_count many\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: keepalive_count: "many": want a whole number`},
		{"http_redirect after tls", "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\ttls\n\t\t\thttp_redirect\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: servers: listener_wrappers: http_redirect must come before tls`},
		{"servers unknown", "{\n\tservers {\n\t\tturbo\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: unknown option "turbo"`},
		{"trusted source", "{\n\tservers {\n\t\ttrusted_proxies cloudflare\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: trusted_proxies: the cloudflare source is not supported by pollproxy`},
		{"trusted range", "{\n\tservers {\n\t\ttrusted_proxies static 10.0.0.0/99\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: trusted_proxies: "10.0.0.0/99": want an IP address or a CIDR range`},
		{"client_ip_headers", "{\n\tservers {\n\t\tclient_ip_headers\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: client_ip_headers: want one or more field names`},
		{"max_header_size", "{\n\tservers {\n\t\tmax_header_size lots\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: servers: max_header_size: "lots": want a size such as 16KB`},
		{"listener wrapper", "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\tlayer4\n\t\t\ttls\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:4: servers: listener_wrappers: the layer4 wrapper is not supported by pollproxy`},
		{"proxy_protocol after tls", "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\ttls\n\t\t\tproxy_protocol\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: servers: listener_wrappers: proxy_protocol must come before tls`},
		{"proxy_protocol policy", "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\tproxy_protocol {\n\t\t\t\tfallback_policy trust\n\t\t\t}\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: listener_wrappers: proxy_protocol fallback_policy: unknown policy "trust"`},
		{"proxy_protocol allow", "{\n\tservers {\n\t\tlistener_wrappers {\n\t\t\tproxy_protocol {\n\t\t\t\tallow 10.0.0.0/99\n\t\t\t}\n\t\t}\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:5: listener_wrappers: proxy_protocol allow: want one or more IP ranges`},
		{"metrics otlp", "{\n\tmetrics {\n\t\tper_host\n\t\totlp\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:4: metrics: otlp is not supported by pollproxy`},
		{"bad grace", "{\n\tgrace_period -1s\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:2: grace_period: "-1s": want a positive duration`},
		{"bad log format", "{\n\tlog {\n\t\tformat xml\n\t}\n}\n" + site("\treverse_proxy 127.0.0.1:8080"),
			`Caddyfile:3: log: format: unknown format "xml" (want json, console or filter)`},
		{"unclosed block", "localhost {\n\treverse_proxy 127.0.0.1:8080 {\n",
			`Caddyfile:2: unexpected EOF`},
		{"no sites", "{\n\tloops 2\n}\n", `Caddyfile:1: no site block`},
		// The lexer's errors name their line in the message only
		// (FuzzSites found templates' "between <<" taken for a heredoc).
		{"heredoc without marker", site("\ttemplates {\n\t\tbetween <<\n\t}"),
			`Caddyfile:3: missing opening heredoc marker on line #3`},
		{"heredoc marker", site("\trespond <<E-!\n\tx\n\tE-!"), `Caddyfile:2: heredoc marker on line #2`},
		{"unterminated heredoc", site("\trespond <<EOF\n\tx"), `Caddyfile:5: incomplete heredoc <<EOF on line #5`},
		{"missing import", site("\timport missing.caddy"), `Caddyfile:2: File to import not found: missing.caddy`},
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
	rp := *c.Sites[0].Proxies[0]
	if strings.Join(rp.Upstreams, " ") != "127.0.0.1:7777 127.0.0.1:7778" {
		t.Errorf("env upstreams %q", rp.Upstreams)
	}
	if rp.Policy != proxy.First || len(rp.HeaderUp) != 2 || !sameOp(rp.HeaderUp[1], op(0x3d, "X-Site", "main")) || len(rp.HeaderDown) != 1 {
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

	// A site whose block imports only an empty file (or a snippet with
	// nothing in it) is valid, as in Caddy, which warns and goes on, and
	// so is an empty block: it answers Caddy's empty 200.
	write("empty.caddy", "")
	for _, body := range []string{
		"import empty.caddy\nlocalhost:8443 {\n\timport empty.caddy\n}\n",
		"(nothing) {\n}\nlocalhost:8443 {\n\timport nothing\n}\n",
		"localhost:8443 {\n\timport empty.caddy\n\timport empty.caddy\n}\n",
		"localhost:8443 {\n}\n",
		"localhost:8443 {\n\ttls internal\n}\n",
	} {
		c, err := Load(write("Caddyfile.empty", body))
		if err != nil || len(c.Sites) != 1 || len(c.Sites[0].Routes.Nodes) != 0 {
			t.Errorf("%q: %v", body, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "reading configuration") {
		t.Errorf("err %v", err)
	}
}

func op(o byte, name, value string) route.HeaderOp {
	return route.HeaderOp{Op: o, Name: strings.ToLower(name), Value: value}
}

func sameOp(a, b route.HeaderOp) bool {
	return a.Op == b.Op && a.Name == b.Name && a.Value == b.Value
}

// directives names the directive of each of nodes by its type, as
// "*site.Proxy".
func directives(nodes []site.Node) []string {
	var ds []string
	for _, n := range nodes {
		ds = append(ds, fmt.Sprintf("%T", n.Do))
	}
	return ds
}
