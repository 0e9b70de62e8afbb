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

// ABRotateOff is Config.ABRotate for "ab_rotate off": the fixed split.
const ABRotateOff time.Duration = -1

// abRotate parses the pollproxy-only global option "ab_rotate
// DURATION|off": how long each loop serves one poller before the A/B
// crossover moves it to the other; off keeps every loop on its poller (the
// fixed split). The sampler rounds it to whole sampling intervals, at
// least two (one of them the washout after the switch).
func (p *parser) abRotate(d *caddyfile.Dispenser) time.Duration {
	v, ok := p.oneArg(d, "ab_rotate", "a duration such as 30s, or off")
	if !ok {
		return 0
	}
	if v == "off" {
		return ABRotateOff
	}
	dur, err := time.ParseDuration(v)
	if err != nil || dur < 200*time.Millisecond || dur > 24*time.Hour {
		p.errf(d, "ab_rotate: %q: want a duration from 200ms to 24h (default three ab_interval), or off", v)
		return 0
	}
	return dur
}
