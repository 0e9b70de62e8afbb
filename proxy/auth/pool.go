package auth

import (
	"runtime"
	"sync"

	"github.com/pollproxy/pollproxy/offload"
)

// sharedQueuePerWorker bounds the shared pool's queue: at Caddy's default
// cost a comparison takes about a second on one core, so a full queue is
// already a wait of several seconds.
const sharedQueuePerWorker = 8

// Shared is the process's pool for basic_auth's comparisons, started on
// first use and kept for the process's life: the checks of every site and
// every configuration (old ones finish during a reload) share it, so the
// cores given to passwords are bounded however many sites ask. Half the
// CPUs hash passwords at most, so a flood of them leaves the loops the
// other half. A loop never waits for room in it: a full pool answers
// offload.ErrFull, and the loop the request 503, so a flood of passwords
// costs the clients that send them a refusal, and the loops nothing but
// that answer.
func Shared() *offload.Pool { return shared() }

var shared = sync.OnceValue(func() *offload.Pool {
	w := max(1, runtime.NumCPU()/2)
	return offload.New(w, w*sharedQueuePerWorker)
})
