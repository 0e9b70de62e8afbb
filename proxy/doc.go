// Package proxy is pollproxy's reverse proxy: it serves requests from the
// HTTP/2 and HTTP/1.1 front ends by forwarding them, translated to strict
// HTTP/1.1, over per-loop pools of kept-alive connections to the origins.
//
// The package is the per-loop data path: everything in it runs on the
// loop that owns the request, so it imports nothing that locks, waits or
// spawns (imports_test.go holds it to that). What runs on goroutines of
// its own (upstream state shared by every loop, active health checks,
// DNS re-resolution) is in proxy/upstream; routing by host and the
// client-address rules, built once per (re)load, are in proxy/route, and
// a site's routes run in proxy/site.
//
// One job per file, in the order a request meets them:
//
//   - handler.go: the Handler (one per loop) and its Config; it serves a
//     request the site's route table sent to the proxy.
//   - translate.go: the request head for the origin and the response
//     fields for the client, built in one place on proxy/field's rules.
//   - balance.go: the group of a loop's pools for one upstream set, and the
//     policy that picks one.
//   - pool.go: one loop's connections to one upstream, the queue of
//     requests waiting for one.
//   - h1client.go: one HTTP/1.1 connection to an origin, registered with
//     the loop for its life; it writes the request and runs the
//     response-parse loop, telling its exchange what each event was.
//   - backendphase.go: that connection's phase (connecting, handshaking,
//     idle, busy, tunnel, closed) and every transition between them.
//   - backendwire.go: that connection's wire, in clear or through TLS,
//     chosen once when it is made; the only code that asks which.
//   - fcgiconn.go: a backend connection to a FastCGI application: the
//     records it reads cut apart in place, the CGI head put behind a
//     status line for the response parser, FCGI_END_REQUEST as the end.
//   - fcgirequest.go: the FastCGI transport's request: the CGI
//     environment as Caddy builds it, FCGI_PARAMS and FCGI_STDIN, a body
//     of unknown length buffered (4 KiB) to learn CONTENT_LENGTH.
//   - fcgiretry.go: what a FastCGI request sent on a reused connection,
//     kept (64 KiB at most) to send it again when php-fpm had closed the
//     connection under it.
//   - exchange.go: one proxied request, between the client's stream and a
//     backend connection, with backpressure both ways. Its phase (new,
//     queued, sent, streaming, tunnel, done) says where it is and what its
//     one timer guards, and every way it finishes goes through end(outcome):
//     the status or reset the client gets, the observe.Reason the access
//     log and the failure metric record, and whether the connection is
//     reused.
//   - h2origin.go: one HTTP/2 connection to an origin (h2c:// upstreams),
//     carrying many exchanges at once, one stream each, with proxy/h2's
//     ClientConn as its protocol; a pool of them opens another once the
//     origin's SETTINGS_MAX_CONCURRENT_STREAMS is reached.
//   - h2origintls.go: such a connection over TLS, offering h2 by ALPN; an
//     origin that picks http/1.1 turns its pool to HTTP/1.1.
//   - upstreamtls.go: TLS on an HTTP/1.1 connection to an https:// origin:
//     the handshake run on the transport's pool while the loop moves its
//     ciphertext, then the records written and read on the loop.
//   - tlssocket.go: the socket side of a TLS session to an origin, shared
//     by both kinds of connection: the handshake handed to the workers,
//     its ciphertext moved, records read once it is over.
//   - h2exchange.go: an exchange over such a stream: the request head as
//     HTTP/2 fields, the stream's events (head, body, trailers, resets)
//     mapped onto the exchange's, and the body a slow client has not
//     taken held within the stream's window.
//   - sniff.go: a response without a Content-Type holding its head until
//     its first body bytes, to sniff one (proxy/sniff) as Caddy's answer
//     gets one from Go's HTTP server.
//   - tunnel.go: an exchange the origin switched to another protocol (a
//     WebSocket): a byte tunnel both ways on the loop.
//   - h2tunnel.go: such a tunnel to an h2c origin: an RFC 8441 extended
//     CONNECT on a shared origin connection, the bytes as DATA frames.
//   - retire.go: a handler a reload replaced, finishing what it started
//     and closing what went to a removed upstream, and a handler closed
//     with its server; both close their pools' idle connections.
//   - abandon.go: a panic on the origin side contained: the exchange, the
//     backend connection or the pool it is blamed on abandoned
//     (netpoll.Owner).
//
// Calls go one way: an exchange asks a pool for a connection and drives
// it; a connection tells its exchange what happened on the socket; a pool
// never calls an exchange back from inside a connection's close. A freed
// slot is served to the waiting requests at the end of the loop's
// iteration (pool.Flush).
package proxy
