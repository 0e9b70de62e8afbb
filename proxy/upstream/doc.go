// Package upstream holds what pollproxy knows about its origins, shared by
// every loop: the Upstream (addresses, counters, passive health, the idle
// timeout learned from the origin), and the work that runs on goroutines
// of its own, off the loops: active health checks and DNS re-resolution.
// Loops read it through atomics and never wait for it; nothing here runs
// on a loop but the counters and the few methods the data path calls
// (Failed, Healthy, LearnIdleClose, DialAddr, HostPort, IdleCap,
// Health.UnhealthyResponse and IdleBelow).
//
// One job per file:
//
//   - upstream.go: the Upstream, its counters and the idle timeout it
//     learns from the origin's closes.
//   - passivehealth.go: Health, passive checks from the requests
//     themselves (Caddy's max_fails, fail_duration, unhealthy_*).
//   - activehealth.go: ActiveHealth and the HealthChecker asking each
//     origin on an interval (Caddy's health_*).
//   - status.go: the status and status-class syntax both checks share.
//   - resolve.go: the addresses of an upstream, and the Resolver looking
//     upstream names up again on an interval.
//   - dynamic.go: Caddy's dynamic A/AAAA upstreams, with their own refresh
//     and DNS servers.
//   - tls.go: a transport's TLS to its upstreams (https://), and the
//     FailureLog that writes a failed handshake's line off the loop.
package upstream
