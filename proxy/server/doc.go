// Package server accepts TLS connections on every loop of a netpoll.Group
// and serves them with pollproxy's HTTP/2 or HTTP/1.1 front end, chosen by
// ALPN. It joins the pieces: sockets registered once, handshakes on the
// worker pool, the TLS record layer on the loop, and a stream.Handler per
// loop.
//
// One job per file:
//
//   - server.go: Config and the Server: listeners, loops, the handshake
//     pool, and the accept hand-off that keeps every loop's share of
//     connections within one of the least loaded's.
//   - conn.go: one client connection: its socket, TLS session and the
//     front end ALPN picked, as the front end's stream.Transport.
//   - cleartext.go: a plain-HTTP connection's front end, started on its
//     first bytes (h2c by its preface, HTTP/1.1 otherwise).
//   - httpredirect.go: Caddy's http_redirect listener wrapper, a 308 to
//     https for plain HTTP sent to a TLS listener.
//   - proxyheader.go: Caddy's proxy_protocol listener wrapper: the PROXY
//     header's policy and its source as the connection's remote address.
//   - serve.go: a request handed to the loop's current handler;
//     serve_panichook.go: the same with the pollproxy_panichook tag, which
//     panics on a request field for the tests of panic containment.
//   - abandon.go: a connection abandoned after a panic in its work: its
//     handlers told, its front end's last frame sent, its socket closed.
package server
