package fileserver

import (
	"runtime"
	"sync"

	"github.com/pollproxy/pollproxy/offload"
)

// sharedWorkers and sharedQueue size the process's pool: a cold read
// waits for the disk, not for a core, so there are more workers than
// cores (nginx's thread pool has 32); the queue bounds what a burst of
// new requests may pile up behind a slow disk before it is told 503.
const (
	sharedWorkers = 32
	sharedQueue   = 256
)

// Shared is the process's pool for files, started on first use and never
// closed: every file_server and file matcher of every site and
// configuration shares it, so the threads waiting on the disk are bounded
// however many sites there are. New work (a request's open and stat) is
// refused when the pool is full, so a loop answers 503 at once instead of
// waiting; the next read of a response already under way goes in through
// Continue, never refused and run before new work, so a started response
// always finishes. There is at most one such read per response.
func Shared() *offload.Pool { return shared() }

var shared = sync.OnceValue(func() *offload.Pool {
	return offload.New(max(sharedWorkers, runtime.NumCPU()), sharedQueue)
})
