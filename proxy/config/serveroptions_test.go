package config

import (
	"testing"
	"time"
)

// TestServerOptionsParsed: the servers options Caddy has and pollproxy
// implements land in ServerOptions with Caddy's meanings.
func TestServerOptionsParsed(t *testing.T) {
	c, err := Parse("Caddyfile", []byte(`{
	servers :443 {
		name public
		strict_sni_host
		keepalive_interval 30s
		keepalive_idle -1s
		keepalive_count 5
		trusted_proxies static private_ranges
		trusted_proxies_strict
		trusted_proxies_unix
		enable_full_duplex
		listener_wrappers {
			http_redirect
			proxy_protocol
			tls
		}
	}
	servers {
		strict_sni_host insecure_off
		keepalive_interval -1s
	}
	metrics {
		per_host
	}
}
example.com {
	respond ok
}
`))
	if err != nil {
		t.Fatal(err)
	}
	so := c.ServerOptionsFor(":443")
	if so.Name != "public" || !so.StrictSNIHost || so.KeepAlive != (KeepAlive{30 * time.Second, -time.Second, 5}) ||
		!so.TrustedProxiesStrict || !so.TrustedProxiesUnix || !so.HTTPRedirect || so.ProxyProtocol == nil || len(so.TrustedProxies) == 0 {
		t.Errorf("servers :443: %+v", so)
	}
	if g := c.ServerOptions; g.StrictSNIHost || g.KeepAlive.Interval != -time.Second || g.Name != "" {
		t.Errorf("servers: %+v", g)
	}
	if !c.MetricsPerHost {
		t.Error("metrics per_host not read")
	}
}
