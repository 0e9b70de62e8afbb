// Package observe holds what the reverse proxy reports about its work — a
// finished request (RequestLog, handed to an Observer) and an upstream's
// counters (UpstreamStats) — as plain data, so that the access log and the
// metrics can read it without importing the proxy itself.
//
// One job per file:
//
//   - observe.go: RequestLog, the Observer interface, UpstreamStats.
//   - reason.go: Reason, why an exchange ended other than as the origin
//     meant it, with its label and its words.
//   - grpc.go: gRPC's status codes by name, and the grpc-status a
//     RequestLog notes from a response's trailers.
package observe
