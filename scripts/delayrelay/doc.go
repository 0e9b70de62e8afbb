// Command delayrelay stands for a long network path on loopback, where
// netem is not available: it listens on a loopback address, connects every
// accepted connection to a target and delays every chunk by -delay in each
// direction (25 ms each way: a 50 ms round trip). Delays overlap, so order
// and bandwidth are kept; at most -inflight bytes wait per direction. With
// -mbit it is also a link of that rate each way.
// scripts/upload puts it between the client and pollproxy.
//
// It runs until interrupted, or for -for when that is set.
//
// main.go holds all of it.
package main
