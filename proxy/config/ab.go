package config

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// abInterval parses the pollproxy-only global option "ab_interval DURATION":
// how often the A/B sampler takes its per-poller samples. Below 100 ms a
// sample holds too few requests to say anything; above an hour the
// verdict would need days.
func (p *parser) abInterval(d *caddyfile.Dispenser) time.Duration {
	v := p.durationArg(d, "ab_interval")
	if v != 0 && (v < 100*time.Millisecond || v > time.Hour) {
		p.errf(d, "ab_interval: %v: want a duration from 100ms to 1h (default 10s)", v)
		return 0
	}
	return v
}
