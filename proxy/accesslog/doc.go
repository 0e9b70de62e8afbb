// Package accesslog writes one entry per finished request, shaped as
// Caddy's access log ("handled request", in its json or console format)
// so that tools built for Caddy's logs read it, or in the Common Log
// Format.
//
// A Logger is one site's log directive; a Writer is one output (a
// standard stream or a file, rolled as Caddy rolls it), shared by every
// logger that names it. Observe runs on an event loop and must never
// block: it copies the request's facts into the writer's bounded channel
// and returns. The writer's goroutine drains the channel and formats and
// writes the entries, so a slow disk or a full pipe costs dropped entries
// (counted by Dropped), never a stalled loop.
//
// One job per file:
//
//   - accesslog.go: the Logger, its Options and Levels, what it decides on
//     the loop (level, hostnames), and the Common Log Format line.
//   - caddy.go: Caddy's json and console entries, field for field.
//   - filter.go: Caddy's filter format: the field Filters pollproxy
//     implements, the cookie filter's actions.
//   - sampling.go: Caddy's log sampling (zap's sampler).
//   - writer.go: the Writer of one Output (a stream or a file), its
//     bounded queue and goroutine, and the rolling of a file (Roll).
package accesslog
