package config

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// StreamOptions are a reverse_proxy's settings for long streams
// (WebSockets and other tunnels), with Caddy's names and meaning.
type StreamOptions struct {
	// Timeout closes a tunnel that moved no byte either way for that long
	// (stream_timeout; off by default).
	Timeout time.Duration
	// CloseDelay is how long a tunnel whose site or upstream a reload
	// removed keeps running before it is closed (stream_close_delay;
	// zero: at the reload).
	CloseDelay time.Duration
}

// streamOption reads stream_timeout or stream_close_delay.
func (p *parser) streamOption(d *caddyfile.Dispenser, rp *Proxy) {
	label := "reverse_proxy: " + d.Val()
	switch d.Val() {
	case "stream_timeout":
		rp.Stream.Timeout = p.durationArg(d, label)
	case "stream_close_delay":
		rp.Stream.CloseDelay = p.durationArg(d, label)
	}
}

// extendedConnect reads the global option that switches RFC 8441 (WebSockets
// over HTTP/2) off: "h2_extended_connect off". Caddy has no such option; the
// name is pollproxy's own, so a Caddyfile written for Caddy never sets it by
// accident.
func (p *parser) extendedConnect(d *caddyfile.Dispenser) {
	if v, ok := p.oneArg(d, "h2_extended_connect", "on or off"); ok {
		switch v {
		case "on":
			p.cfg.NoExtendedConnect = false
		case "off":
			p.cfg.NoExtendedConnect = true
		default:
			p.errf(d, "h2_extended_connect: %q: want on or off", v)
		}
	}
}
