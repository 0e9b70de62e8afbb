package app

import (
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/server"
)

// applyServers maps the listener's servers options that the front ends have
// settings for: listener_wrappers' proxy_protocol goes to the server,
// max_header_size bounds an HTTP/1.1 head and an h2 header list (the h1
// line limit is kept at most that). read_header and idle are
// set by newServer; write has no front-end counterpart yet, and
// trusted_proxies, client_ip_headers and read_body go to the proxy.
func applyServers(sc *server.Config, so *config.ServerOptions) {
	sc.ProxyProtocol = so.ProxyProtocol
	if n := so.MaxHeaderSize; n > 0 {
		sc.H1.Limits.MaxHeadSize = n
		if n < h1.DefaultMaxLineSize {
			sc.H1.Limits.MaxLineSize = n
		}
		sc.H2.MaxHeaderListSize = uint32(n)
	}
}

// serverName is the log attribute naming the listener at addr, when its
// servers block gives it a name (servers ADDR { name NAME }).
func serverName(cfg *config.Config, addr string) []any {
	if n := cfg.ServerOptionsFor(addr).Name; n != "" {
		return []any{"server", n}
	}
	return nil
}
