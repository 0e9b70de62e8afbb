package config

import (
	"strings"
	"testing"
	"time"
)

// TestDynamic: Caddy's dynamic a, in its inline and block forms.
func TestDynamic(t *testing.T) {
	c := mustParse(t, `localhost:8443 {
	reverse_proxy /a/* {
		dynamic a app.internal 9000
	}
	reverse_proxy {
		dynamic a {
			name app2.internal
			port 9001
			refresh 5s
			resolvers 10.0.0.53 [::1]:5353
			dial_timeout 2s
			versions ipv6
		}
	}
}
`)
	ps := c.Sites[0].Proxies
	if len(ps) != 2 {
		t.Fatalf("%d proxies", len(ps))
	}
	a, b := ps[0], ps[1]
	if a.Dynamic == nil || strings.Join(a.Upstreams, " ") != "app.internal:9000" || a.Dynamic.Network != "ip" || a.Dynamic.Refresh != 0 {
		t.Errorf("inline: %+v %+v", a.Upstreams, a.Dynamic)
	}
	want := Dynamic{Name: "app2.internal", Port: "9001", Refresh: 5 * time.Second, Resolvers: []string{"10.0.0.53", "[::1]:5353"},
		DialTimeout: 2 * time.Second, Network: "ip6"}
	if b.Dynamic == nil || strings.Join(b.Upstreams, " ") != "app2.internal:9001" || b.Dynamic.Name != want.Name || b.Dynamic.Port != want.Port ||
		b.Dynamic.Refresh != want.Refresh || strings.Join(b.Dynamic.Resolvers, ",") != "10.0.0.53,[::1]:5353" ||
		b.Dynamic.DialTimeout != want.DialTimeout || b.Dynamic.Network != want.Network {
		t.Errorf("block: %+v %+v", b.Upstreams, b.Dynamic)
	}
}

func TestDynamicErrors(t *testing.T) {
	rp := func(opts string) string {
		return "localhost:8443 {\n\treverse_proxy {\n" + opts + "\n\t}\n}\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"srv without a name", rp("\t\tdynamic srv {\n\t\t\tservice api\n\t\t}"), `Caddyfile:5: reverse_proxy: dynamic srv: want a full name`},
		{"srv option", rp("\t\tdynamic srv _api._tcp.example.com {\n\t\t\tgrace_period 5s\n\t\t}"), `Caddyfile:4: reverse_proxy: dynamic srv: grace_period is not supported by pollproxy`},
		{"multi", rp("\t\tdynamic multi {\n\t\t\ta x 1\n\t\t}"), `Caddyfile:3: reverse_proxy: dynamic multi is not supported by pollproxy`},
		{"no module", rp("\t\tdynamic"), `Caddyfile:3: reverse_proxy: dynamic: want a module, e.g. dynamic a example.com 9000`},
		{"no port", rp("\t\tdynamic a example.com"), `Caddyfile:3: reverse_proxy: dynamic a: want NAME PORT, or both in the block`},
		{"bad port", rp("\t\tdynamic a example.com http"), `Caddyfile:3: reverse_proxy: dynamic a: port "http": want 1-65535`},
		{"no name", rp("\t\tdynamic a {\n\t\t\tport 80\n\t\t}"), `Caddyfile:5: reverse_proxy: dynamic a: want a host name (dynamic a NAME PORT)`},
		{"refresh", rp("\t\tdynamic a x 80 {\n\t\t\trefresh often\n\t\t}"), `Caddyfile:4: reverse_proxy: dynamic a: refresh: "often": want a positive duration`},
		{"resolver", rp("\t\tdynamic a x 80 {\n\t\t\tresolvers dns.google\n\t\t}"),
			`Caddyfile:4: reverse_proxy: dynamic a: resolvers: "dns.google": want an IP address, optionally with a port`},
		{"versions", rp("\t\tdynamic a x 80 {\n\t\t\tversions ipv5\n\t\t}"), `Caddyfile:4: reverse_proxy: dynamic a: versions: "ipv5": want ipv4 and/or ipv6`},
		{"fallback delay", rp("\t\tdynamic a x 80 {\n\t\t\tdial_fallback_delay 1s\n\t\t}"),
			`Caddyfile:4: reverse_proxy: dynamic a: dial_fallback_delay is not supported by pollproxy`},
		{"unknown", rp("\t\tdynamic a x 80 {\n\t\t\tttl 1s\n\t\t}"), `Caddyfile:4: reverse_proxy: dynamic a: unknown option "ttl" (want name, port,`},
		{"with static", "localhost:8443 {\n\treverse_proxy 127.0.0.1:80 {\n\t\tdynamic a x 80\n\t}\n}\n",
			`Caddyfile:2: reverse_proxy: static upstreams beside dynamic (Caddy's fallback) are not supported by pollproxy`},
		{"twice", rp("\t\tdynamic a x 80\n\t\tdynamic a y 80"), `Caddyfile:4: reverse_proxy: dynamic: a reverse_proxy has one dynamic source`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
