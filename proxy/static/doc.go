// Package static is a handler that answers every request with one fixed
// response, on the loop. It lets the front ends be tested and benchmarked
// on their own, without an origin behind them, and it is how pollproxy
// sends the few answers it makes itself (421 for a host it does not serve).
//
// static.go holds it all: the Handler, made by New (a body and its
// type) or NewResponse (any status, head and body).
package static
