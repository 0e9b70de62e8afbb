package clockhook

import "time"

// Install makes now the time source of loop (a *netpoll.Loop) and returns
// once the loop has taken it.
var Install func(loop any, now func() time.Time)

// Expire has loop run the timers due at its clock's current reading and
// returns once they have run and the output they queued has been flushed.
var Expire func(loop any)
