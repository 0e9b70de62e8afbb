// Package app is a pollproxy instance: a configuration made to serve.
//
// An Instance owns the event loops (a netpoll.Group), one server.Server
// per listen address with a per-loop handler for it (a host router over
// the sites on that port, each a reverse proxy with the loop's own pools,
// metrics and access log observers), the certificates of the sites, the
// admin listener (metrics), the plain HTTP listener for ACME challenges
// and redirects, and the access log.
//
// Its lifecycle:
//
//   - Start prepares a configuration (upstreams resolved off the loops,
//     certificates managed, access log opened), starts the loops and
//     opens every listener. It fails without leaving anything running.
//   - Reload re-reads the Caddyfile. Any error keeps the running
//     configuration. Otherwise every kept listener gets new per-loop
//     handlers (new requests, also on open connections, use them; requests
//     in flight finish on the handler they started with), new listen
//     addresses get listeners, removed ones stop accepting and drain within
//     grace_period, and the access log is reopened. Long streams
//     (tunnels, SSE, downloads) keep running when their site and upstream
//     survive, and close after stream_close_delay otherwise (proxy's
//     retire.go). A changed poller line
//     moves the loops to their new backends live (poller.go), as POST
//     /poller on the admin listener does.
//   - Shutdown sends GOAWAY, drains every listener within grace_period,
//     closes what is still open at the deadline and releases everything.
//     Close releases everything at once.
//
// The configuration comes from a Caddyfile (Load) or is built by a caller,
// as the reverse-proxy and demo commands do. The instance logs at start,
// reload and shutdown, never on a loop.
//
// One job per file:
//
//   - app.go: Load, the Instance and its Options, and Start, Reload,
//     Shutdown and Close.
//   - plan.go: a configuration prepared before it serves (the plan): its
//     upstreams, certificates and errors, committed at once.
//   - listeners.go: a listener's server and the per-loop handler it runs:
//     the host router over its sites, each site's routes, proxies and
//     observers, the client-address rule.
//   - servers.go: the servers options the front ends have settings for;
//     strictsni.go: strict_sni_host, the 421 for a host that is not the
//     ClientHello's name.
//   - tlspolicy.go: the certificate manager's configuration and each
//     site's certificate and connection policies; storage.go: the shared
//     certificate storage (storage redis).
//   - dynamic.go: a reverse_proxy's dynamic a or srv upstreams;
//     upstreams.go: re-resolution and active health checks following the
//     running plan's upstreams; upstreamtls.go: the handshake pool and
//     failure log the HTTPS upstreams share; pkipool.go: the local CAs'
//     certificates a pki_root or pki_intermediate trust pool holds.
//   - fastcgi.go: FastCGI stderr carried from the loops to its one logging
//     goroutine.
//   - streams.go: long streams across a reload: the proxy handlers a plan
//     built, retired when the next one commits.
//   - accesslogs.go: the access log writers, opened, reopened on reload
//     and retired.
//   - poller.go: the live switch of the loops' backends; ab.go: the A/B
//     sampler of the running loops and its crossover.
//   - adminguard.go: the Host, Origin and Content-Type checks every admin
//     request passes, as Caddy's admin endpoint does.
package app
