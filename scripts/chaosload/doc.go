// Command chaosload is the Go half of scripts/chaos, the chaos soak: the
// origins, and the load with its accounting.
//
//	chaosload origin -name o1 -listen 127.0.0.1:PORT
//
// is one origin process (GETs of any size, uploads answered with their
// checksum, a WebSocket echo, server-sent events; see origin), which names
// itself in every response.
//
//	chaosload load -addr 127.0.0.1:PORT -ca cert.pem -admin 127.0.0.1:PORT
//	    -pid PID -origins o1=ADDR,o2=ADDR -events FILE -access FILE -for 25s
//
// runs every kind of client against pollproxy for -for (h2 and HTTP/1.1
// GETs of mixed sizes, uploads, WebSockets over HTTP/1.1 and RFC 8441,
// SSE, idle and slow clients) while the script kills origins, reloads and
// switches pollers, logging each fault to -events. It samples pollproxy's
// RSS, descriptors and pollproxy_* gauges, waits (at most -settle) for
// them to come to rest, then accounts for every request and message: ok;
// failed while its own origin was down (-events) — its origin is the one
// that answered it, else the upstream pollproxy's access log (-access)
// gives for it; failed otherwise; corrupt; hung (older than -limit, its
// origin up). It exits 1 on any failure outside a kill window, any
// corruption, any hung request, sockets above their start or a gauge
// not at rest; 2 when it could not run.
//
// One job per file:
//
//   - main.go: the two subcommands and their flags.
//   - origin.go: an origin process and the paths that name a request's id.
//   - load.go: the clients, each kind of traffic in its own goroutines,
//     every request and message recorded; ws8441.go: a WebSocket over an
//     RFC 8441 extended CONNECT, framed by hand.
//   - pattern.go: the body a request's id stands for, written and checked
//     without a copy.
//   - metrics.go: the admin listener's /metrics scraped.
//   - account.go: every request's outcome, against the windows an origin
//     was down.
package main
