// Package clockhook is how netpoll/looptest gives a loop a clock of its
// own without netpoll exporting that seam: being internal to netpoll, only
// netpoll and its test helpers can reach it, and netpoll fills it in when
// it is initialized. Production code never calls it.
//
// clockhook.go holds it all: the Install and Expire hooks.
package clockhook
