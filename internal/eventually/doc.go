// Package eventually gives tests one way to wait for a state another
// goroutine or process reaches on its own, with nothing to block on: look
// at a condition until it holds, pausing a little longer each time, and
// give up after a bound that only ends a broken run. It imports nothing
// of pollproxy, so the tests of any package (netpoll, tls, proxy/h2,
// below proxy/server/servertest) can use it without an import cycle.
//
// eventually.go holds Within and Holds.
package eventually
