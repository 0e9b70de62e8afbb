// Package proxy is pollproxy's reverse proxy: it serves requests from the
// HTTP/2 and HTTP/1.1 front ends by forwarding them, translated to strict
// HTTP/1.1, over per-loop pools of kept-alive connections to the origins.
//
// One job per file, in the order a request meets them:
//
//   - router.go: the Router picks a site's handler by host.
//   - handler.go: the Handler (one per loop) and its Config.
//   - translate.go: the request head for the origin and the response
//     fields for the client, built in one place on proxy/field's rules.
//   - balance.go: the group of a loop's pools for one upstream set, and the
//     policy that picks one.
//   - pool.go: one loop's connections to one upstream, the queue of
//     requests waiting for one.
//   - h1client.go: one HTTP/1.1 connection to an origin, registered with
//     the loop for its life.
//   - exchange.go: one proxied request, between the client's stream and a
//     backend connection, with backpressure both ways.
//   - upstream.go: the Upstream shared by every loop, its passive health
//     and counters.
//
// Calls go one way: an exchange asks a pool for a connection and drives
// it; a connection tells its exchange what happened on the socket; a pool
// never calls an exchange back from inside a connection's close. A freed
// slot is served to the waiting requests at the end of the loop's
// iteration (pool.Flush).
package proxy
