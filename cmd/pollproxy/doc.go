// Command pollproxy is a TLS-terminating HTTP/2 and HTTP/1.1 reverse proxy
// on its own event loops, over the poller backend the operator picks.
//
// The command only parses flags, prints and waits for signals; an
// instance is proxy/app's. One file per subcommand, and what they share:
//
//   - main.go: the subcommand table, the usage and main.
//   - run.go: run, the sites of a Caddyfile served; watch.go: its --watch,
//     which reloads when what the Caddyfile and its imports say changed.
//   - serve.go: what every serving command shares: the loop flags, the
//     wait for signals (shutdown, SIGHUP's reload, systemd's
//     notifications), a development command's configuration and
//     certificate.
//   - reverseproxy.go: reverse-proxy, Caddy's development command;
//     from.go: its --from site address; demo.go: demo, a sample app with
//     pollproxy in front of it; static.go: static, a fixed body over
//     HTTPS.
//   - adapt.go: adapt, what pollproxy understood from a Caddyfile, as
//     JSON; validate.go: validate; fmt.go: fmt, Caddy's formatter.
//   - hashpassword.go: hash-password, for basic_auth, as Caddy's.
//   - trust.go: trust, the local CA's root printed or installed.
//   - ab.go: ab, the A/B verdict of a running instance, or two instances
//     compared, read from their admin listeners.
//   - version.go: version and pollers, the build's backends.
package main
