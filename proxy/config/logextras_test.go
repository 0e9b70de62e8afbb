package config

import (
	"testing"
	"time"
)

// TestLogIncludeAccess: a global logger that includes http.log.access
// takes every site's access log (a bare log's, whose logger is
// http.log.access, and each named one's), except what it excludes; the
// default logger then leaves them out, as Caddy's adapter makes it
// exclude what another logger includes, and a site log with its own
// output writes there as well.
func TestLogIncludeAccess(t *testing.T) {
	c := mustParse(t, `{
	log access {
		output file /var/log/access.log
		format console
		include http.log.access
		exclude http.log.access.internal
		sampling {
			interval 10s
			first 5
		}
	}
}

a.example.com {
	log
	respond ok
}

b.example.com {
	log {
		output file /var/log/b.log
	}
	respond ok
}

internal.example.com {
	log internal
	respond ok
}
`)
	a, b, in := c.Sites[0].Logs, c.Sites[1].Logs, c.Sites[2].Logs
	if len(a) != 1 || a[0].Output.File != "/var/log/access.log" || a[0].Format != "console" || a[0].Sampling == nil ||
		a[0].Sampling.Interval != 10*time.Second || a[0].Sampling.First != 5 || a[0].Sampling.Thereafter != 100 {
		t.Errorf("bare log: %+v", a)
	}
	if len(b) != 2 || b[0].Output.File != "/var/log/b.log" || b[0].Sampling != nil || b[1].Output.File != "/var/log/access.log" || b[1].Sampling != a[0].Sampling {
		t.Errorf("log with its own output: %+v", b)
	}
	if len(in) != 1 || in[0].Output.Kind != "stderr" {
		t.Errorf("excluded log: %+v", in)
	}
}

// TestLogAppendAndSampling: format append's fields read as Caddy reads
// them, a site log's own sampling, and the errors Caddy gives.
func TestLogAppendAndSampling(t *testing.T) {
	t.Setenv("POLLPROXY_TEST_REGION", "eu-west")
	c := mustParse(t, `example.com {
	log {
		format append {
			wrap console
			fields {
				region {env.POLLPROXY_TEST_REGION}
				shard 3
			}
			canary true
			quoted "7"
			unknown {nothing.here}
		}
		sampling {
			thereafter 10
		}
	}
	respond ok
}
`)
	l := c.Sites[0].Logs[0]
	got := map[string]string{}
	for _, f := range l.Append {
		got[f.Name] = string(f.Value)
	}
	if l.Format != "console" || got["region"] != `"eu-west"` || got["shard"] != "3" || got["canary"] != "true" || got["quoted"] != `"7"` || got["unknown"] != "null" {
		t.Errorf("append: format %s, fields %v", l.Format, got)
	}
	if s := l.Sampling; s == nil || s.Interval != time.Second || s.First != 100 || s.Thereafter != 10 {
		t.Errorf("sampling %+v", s)
	}
	for _, tc := range []struct{ in, want string }{
		{"{\n\tlog {\n\t\tinclude http.log.access\n\t\texclude http.log.access\n\t}\n}\n", "Caddyfile:4: log: include and exclude must not intersect, but found http.log.access in both lists"},
		{"{\n\tlog {\n\t\tinclude http.log.access.a\n\t\texclude http.log.access.b\n\t}\n}\n", "Caddyfile:4: log: when both include and exclude are populated, each element must be a superspace or subspace of one in the other list; check 'http.log.access.a' in include"},
		{"{\n\tlog {\n\t\tsampling {\n\t\t\tfirst 1\n\t\t\tfirst 2\n\t\t}\n\t}\n}\n", "Caddyfile:5: log: 'first' specified more than once in the same sampling block"},
		{"{\n\tlog {\n\t\tformat append {\n\t\t\tnow {time.now}\n\t\t}\n\t}\n}\n", "Caddyfile:4: log: format append: now: the placeholder {time.now} is not supported by pollproxy"},
	} {
		_, err := Parse("Caddyfile", []byte(tc.in+"example.com {\n\trespond ok\n}\n"))
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%q: %v, want %s", tc.in, err, tc.want)
		}
	}
}
