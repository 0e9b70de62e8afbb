// Package hardening holds pollproxy's adversarial test suites; it has no
// non-test code. Every test runs a real pollproxy server (netpoll loops,
// TLS, the h2 and h1 front ends and the reverse proxy) in-process over
// loopback sockets, with small limits and timeouts so that each defence
// triggers within a second or two. Every test runs once per poller
// backend available (polltest.ForEachBackend over netpoll.Available()):
// epoll and poll on Linux, kqueue and poll on the BSDs and macOS.
//
// The suites:
//
//   - attack_test.go: hostile HTTP/2 and HTTP/1.1 clients (Rapid Reset,
//     CONTINUATION and HPACK floods, frame floods, zero-window readers,
//     stream limits, slowloris, idle and oversized requests). Each checks
//     the code the offender is cut with, that a well-behaved client on
//     another connection keeps getting 200s, and that the heap stays
//     bounded.
//   - smuggling_test.go: requests an origin could parse differently from
//     pollproxy, sent with a raw Framer and hpack encoder or written by
//     hand over HTTP/1.1 to a recording origin whose received bytes are
//     parsed afterwards, and origin responses a client could frame
//     differently.
//   - origin_test.go: origins that refuse, reset, stall, drip or answer
//     garbage, and the absence of descriptor and heap leaks afterwards.
//   - fdlimit_test.go: pollproxy run as a subprocess under a low
//     RLIMIT_NOFILE: accept backs off, served connections keep working,
//     service resumes.
//
// docs/hardening.md maps every attack to its limit, its answer and its test.
package hardening
