package config

// Caddy's names that pollproxy does not implement. A Caddyfile that uses
// one fails validation with "<name> is not supported by pollproxy" and
// its line, so a Caddy user learns what is missing rather than reading a
// message that suggests a typo.

import "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

// notOurs reports an option pollproxy does not know: "not supported by
// pollproxy" for one of Caddy's (in caddy), "unknown" with what is
// expected otherwise; then skips the rest of its line and its block.
func (p *parser) notOurs(d *caddyfile.Dispenser, prefix, name string, caddy map[string]bool, want string) {
	if caddy[name] {
		p.errf(d, "%s%s is not supported by pollproxy", prefix, name)
	} else {
		p.errf(d, "%sunknown option %q (want %s)", prefix, name, want)
	}
	d.RemainingArgs()
	skipBlock(d)
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var unsupportedGlobal = set("http_port_https", "acme_dns", "events", "filesystem", "grace_period_http",
	"dns", "ech", "tracing", "ocsp")

var unsupportedServers = set("max_header_bytes", "expected_underscore_headers", "expected_dot_headers")

var unsupportedDirectives = set("abort_with", "acme_server", "bind",
	"fs", "import",
	"log_append", "log_name", "log_level", "metrics", "push",
	"tracing", "timeouts")

var unsupportedMatchers = set("tls", "path_regexp_all")

var unsupportedProxy = set("buffer_requests", "buffer_responses",
	"request_buffers", "response_buffers", "max_buffer_size",
	"unhealthy_request_count", "verbose_logs", "stream_buffer_size",
	"weighted_round_robin", "health_path", "health_follow_redirects", "health_method",
	"health_request_body", "health_query")

var unsupportedTransport = set("read_buffer", "write_buffer", "max_response_header",
	"dial_fallback_delay", "expect_continue_timeout", "resolvers",
	"tls_except_ports", "keepalive_interval", "compression",
	"local_address", "forward_proxy_url", "network_proxy", "max_idle_conns")

var unsupportedTLS = set("dns", "propagation_delay", "propagation_timeout", "resolvers", "dns_ttl",
	"dns_challenge_override_domain")
