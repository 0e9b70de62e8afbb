// Package looptest gives tests a clock for netpoll loops that moves only
// when the test says so: every timer on the loops (a request's timeouts, a
// pool's idle closes, a tunnel's idle limit) then fires at a step of the
// test instead of after a sleep, however loaded the machine is.
//
// clock.go holds it all: Clock, NewClock, Now and Advance.
package looptest
