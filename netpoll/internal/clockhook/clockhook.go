// Package clockhook is how netpoll/looptest gives a loop a clock of its
// own without netpoll exporting that seam: being internal to netpoll, only
// netpoll and its test helpers can reach it, and netpoll fills it in when
// it is initialized. Production code never calls it.
package clockhook

import "time"

// Install makes now the time source of loop (a *netpoll.Loop) and returns
// once the loop has taken it.
var Install func(loop any, now func() time.Time)

// Expire has loop run the timers due at its clock's current reading and
// returns once they have run and the output they queued has been flushed.
var Expire func(loop any)
