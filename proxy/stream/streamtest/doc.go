// Package streamtest holds what the front ends' tests share to stand in
// for the event loop: a manual clock (clock.go: Clock, advanced by the
// test) and an in-memory transport (transport.go: Transport).
package streamtest
