package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/accesslog"
	"github.com/pollproxy/pollproxy/proxy/site"
)

// TestSiteLogs: a site's log takes what it does not set from the global
// logger of its name (whose own defaults are Caddy's), else the default
// logger; unnamed logs with settings
// are log0, log1 ..., a bare log is Caddy's http.log.access.
func TestSiteLogs(t *testing.T) {
	c := mustParse(t, `{
	servers {
		log_credentials
	}
	log {
		output file /var/log/default.log
		level WARN
	}
	log access {
		include http.log.access.access
		output file /var/log/access.log {
			roll_size 1.5MiB
			roll_uncompressed
			roll_local_time
			roll_keep 5
			roll_keep_for 48h
			roll_at 00:00,12:00
			roll_minutes 15 45
			roll_interval 1d
			mode 0640
		}
		format console
	}
}

a.example.com {
	log
	reverse_proxy :8080
}

b.example.com {
	log access
	log {
		output stdout
		hostnames b.example.com
	}
	log {
		output discard
		format json
		level ERROR
	}
	reverse_proxy :8080
}

c.example.com {
	reverse_proxy :8080
}
`)
	a, b, none := c.Sites[0].Logs, c.Sites[1].Logs, c.Sites[2].Logs
	if len(a) != 1 || a[0].Name != "" || a[0].Output.File != "/var/log/default.log" || a[0].Level != accesslog.Warn || a[0].Format != "json" {
		t.Errorf("bare log %+v", a[0])
	}
	want := accesslog.Output{Kind: "file", File: "/var/log/access.log", Roll: accesslog.Roll{SizeMB: 2, Uncompressed: true, LocalTime: true, Keep: 5, KeepDays: 2, Mode: 0o640,
		Interval: 24 * time.Hour, At: []string{"00:00", "12:00"}, Minutes: []int{15, 45}}}
	if len(b) != 3 || b[0].Name != "access" || !reflect.DeepEqual(b[0].Output, want) || b[0].Format != "console" || b[0].Level != accesslog.Info {
		t.Errorf("named log %+v", b[0])
	}
	if b[1].Name != "log0" || b[1].Output.Kind != "stdout" || strings.Join(b[1].Hostnames, ",") != "b.example.com" || b[1].Level != accesslog.Warn {
		t.Errorf("log0 %+v", b[1])
	}
	if b[2].Name != "log1" || b[2].Output.Kind != "discard" || b[2].Level != accesslog.Error {
		t.Errorf("log1 %+v", b[2])
	}
	if len(none) != 0 {
		t.Errorf("a site without log has logs %+v", none)
	}
	if c.Log == nil || c.Loggers["access"] == nil || !c.LogCredentials {
		t.Errorf("global loggers %+v", c.Loggers)
	}
	// Caddy's "multiple outputs": two global loggers include the site's
	// log foo, which then writes to both and nowhere else.
	c = mustParse(t, `{
	log access-text {
		include http.log.access.foo
		output file /var/log/access-foo.log
		format console
	}
	log access-json {
		include http.log.access.foo
		output file /var/log/access-foo.json
		format json
	}
}

foo.example.com {
	log foo
	reverse_proxy :8080
}
`)
	if ls := c.Sites[0].Logs; len(ls) != 2 || ls[0].Output.File != "/var/log/access-foo.json" || ls[0].Format != "json" ||
		ls[1].Output.File != "/var/log/access-foo.log" || ls[1].Format != "console" || ls[0].Name != "foo" {
		t.Errorf("included logs %+v", ls)
	}
	// Caddy's filter examples.
	c = mustParse(t, `example.com {
	log {
		format filter {
			wrap console
			request>headers>User-Agent delete
			request>remote_ip ip_mask 16 32
			request>client_ip ip_mask {
				ipv4 24
				ipv6 48
			}
			fields {
				request>uri regexp "token=[^&]*" "token=x"
			}
		}
	}
	reverse_proxy :8080
}
`)
	if l := c.Sites[0].Logs[0]; l.Format != "console" || len(l.Filters) != 4 || l.Filters[1].V4 != 16 || l.Filters[1].V6 != 32 ||
		l.Filters[2].V4 != 24 || l.Filters[2].V6 != 48 || l.Filters[3].Re == nil || l.Filters[3].Value != "token=x" {
		t.Errorf("filter %+v", l)
	}
	// Without any global log: stderr, json, info.
	c = mustParse(t, "x.example.com {\n\tlog {\n\t\tformat console\n\t}\n\treverse_proxy :8080\n}\n")
	if l := c.Sites[0].Logs[0]; l.Output.Kind != "stderr" || l.Format != "console" || l.Level != accesslog.Info || l.Name != "log0" {
		t.Errorf("defaults %+v", l)
	}
}

// TestOrderAndRequestBody: order moves a directive pollproxy implements
// within Caddy's order; request_body and log_skip compile to their
// routes.
func TestOrderAndRequestBody(t *testing.T) {
	c := mustParse(t, `{
	order respond before header
}

x.example.com {
	header X-A 1
	respond "hi"
	log_skip /health
	request_body /up* {
		max_size 10KiB
	}
}
`)
	kinds := directives(c.Sites[0].Routes.Nodes)
	// Caddy's order with respond moved to just before header: log_skip,
	// respond, header, request_body.
	want := []string{"*site.LogSkip", "*site.Respond", "*site.EditResponse", "*site.RequestBody"}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	if n := c.Sites[0].Routes.Nodes[3]; n.Do.(*site.RequestBody).MaxBody != 10<<10 || n.Match == nil {
		t.Errorf("request_body %+v", n)
	}
}

// TestLogErrors: what pollproxy leaves of Caddy's log, order and
// request_body says so with its line.
func TestLogErrors(t *testing.T) {
	site := "\nx.example.com {\n\treverse_proxy :8080\n}\n"
	for _, c := range []struct{ in, want string }{
		{"{\n\torder push before respond\n}" + site, "Caddyfile:2: order: push is not supported by pollproxy"},
		{"{\n\torder rate_limit before basic_auth\n}" + site, "Caddyfile:2: order: rate_limit is not a directive pollproxy knows (plugins are not supported by pollproxy)"},
		{"{\n\torder header sideways\n}" + site, "Caddyfile:2: order: unknown positional 'sideways' (want first, last, before or after)"},
		{"{\n\torder header before nothing\n}" + site, "Caddyfile:2: order: directive 'nothing' not found"},
		{"{\n\tlog {\n\t\toutput net localhost:9999\n\t}\n}" + site, "Caddyfile:3: log: output net is not supported by pollproxy (want stdout, stderr, discard or file)"},
		{"{\n\tlog {\n\t\tinclude admin.api\n\t}\n}" + site, "Caddyfile:3: log: include admin.api is not supported by pollproxy (its loggers carry only access logs, http.log.access...)"},
		{"{\n\tlog {\n\t\tformat filter {\n\t\t\twrap logfmt\n\t\t\trequest>headers>Cookie cookie {\n\t\t\t\tdelete secret\n\t\t\t}\n\t\t\trequest>tls>proto delete\n\t\t}\n\t}\n}" + site,
			"Caddyfile:4: log: format filter: wrap logfmt is not supported by pollproxy (want json or console)\n" +
				"Caddyfile:8: log: format filter: filtering request>tls>proto is not supported by pollproxy (want request>remote_ip, request>client_ip, request>uri, request>headers>NAME, resp_headers>NAME or user_id)"},
		{"{\n\tlog {\n\t\tformat transform \"{common_log}\"\n\t}\n}" + site, "Caddyfile:3: log: format transform is not supported by pollproxy (want json, console, filter or append)"},
		{"{\n\tlog a\n\tlog a\n}" + site, "Caddyfile:3: log: duplicate global log option for a (the first is at Caddyfile:2)"},
		{"x.example.com {\n\tlog {\n\t\tlevel LOUD\n\t\tinclude x\n\t}\n\treverse_proxy :8080\n}\n", "Caddyfile:3: log: level: unknown level \"LOUD\" (want DEBUG, INFO, WARN, ERROR, PANIC, FATAL)\nCaddyfile:4: log: include is not allowed in the log directive"},
		{"x.example.com {\n\tlog {\n\t\toutput file a.log {\n\t\t\tdir_mode 0755\n\t\t\troll_at 25:00\n\t\t}\n\t}\n\treverse_proxy :8080\n}\n", "Caddyfile:4: log: output file: dir_mode is not supported by pollproxy\nCaddyfile:5: log: output file: roll_at: \"25:00\": want a time of day, HH:MM"},
		{"x.example.com {\n\trequest_body {\n\t\tset x\n\t}\n\treverse_proxy :8080\n}\n", "Caddyfile:3: request_body: set is not supported by pollproxy"},
		{"x.example.com {\n\thandle {\n\t\tlog\n\t}\n\treverse_proxy :8080\n}\n", "Caddyfile:3: log: belongs at the top of a site block, not inside a route"},
		{"x.example.com {\n\tlog_skip /a /b\n\treverse_proxy :8080\n}\n", "Caddyfile:2: log_skip: takes only a matcher"},
	} {
		_, err := Parse("Caddyfile", []byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\ngot  %v\nwant %s", c.in, err, c.want)
		}
	}
}
