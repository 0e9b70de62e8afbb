// Package config reads pollproxy's Caddyfile into a typed configuration.
//
// The file is tokenised and grouped by the Caddyfile package of Caddy
// (github.com/caddyserver/caddy/v2/caddyconfig/caddyfile), so imports,
// snippets and {$ENV} placeholders behave as they do in Caddy. What the
// names mean what they mean in Caddy: a global options block, then one
// site block per address set, with reverse_proxy, the routing directives
// and matchers, header, and tls.
//
// config.go holds the types a configuration is made of (Config, Site,
// Proxy, TLS, Listener) and what callers ask of them; parse.go the parser
// every directive file builds on (Load, Parse, the dispenser helpers that
// read arguments and blocks and record errors); errors.go the errors it
// returns; describe.go what pollproxy adapt prints (Config.Describe).
// Each directive family has its file: global.go (global options
// and servers), ab.go (ab_interval, ab_rotate), storage.go, site.go (site addresses
// and the route table), matchers.go, reverseproxy.go with health.go
// (active health checks), fastcgi.go (transport fastcgi and php_fastcgi,
// expanded as Caddy expands it), dynamic.go (dynamic upstreams) and stream.go
// (stream_timeout, stream_close_delay, h2_extended_connect), tls.go
// (the tls directive: TLS, ClientAuth, Issuer) with tlsglobal.go (the TLS
// global options: local_certs, pki, on_demand_tls ...) and https.go
// (which sites are HTTPS, redirects), vars.go (the vars and map
// directives and the vars and vars_regexp matchers), namedroute.go
// (named routes and invoke), templates.go (templates), basicauth.go
// (basic_auth), encode.go (encode), fileserver.go (root, file_server),
// forwardauth.go (forward_auth), handleerrors.go (handle_errors and
// error), handleresponse.go (handle_response and the response matchers
// of reverse_proxy), upstreamtls.go (TLS to the upstreams:
// UpstreamTLS), pkipool.go (the pki_root and pki_intermediate trust
// pools of client_auth and tls_trust_pool, and when Caddy refuses them), log.go (the log directive and the global log option),
// listenerwrappers.go (servers' listener_wrappers), adminaddr.go (the
// admin listener's address), order.go (Caddy's directive order and the
// order option), and unsupported.go (Caddy's names pollproxy lacks). Every error names the
// file and line it comes from and what was expected, as in
//
//	Caddyfile:12: reverse_proxy: lb_policy: unknown policy "fastest" (want round_robin, ...)
//
// and a Caddy directive or option pollproxy does not implement says so:
//
//	Caddyfile:7: acme_server is not supported by pollproxy
package config
