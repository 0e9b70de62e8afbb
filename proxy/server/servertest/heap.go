package servertest

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// heapSampleEvery is how often a HeapWatch samples: often enough to catch a
// peak that lasts a few milliseconds, rarely enough that the stop-the-world
// of ReadMemStats costs the test nothing measurable.
const heapSampleEvery = 5 * time.Millisecond

// HeapWatch records the peak of the runtime's HeapInuse above a baseline
// taken when it starts, to bound what a test's traffic makes the process
// hold. The heap and the GC setting are the process's: do not run a watch
// alongside parallel tests, whose memory it would count.
type HeapWatch struct {
	base      uint64
	gcPercent int
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once

	mu   sync.Mutex
	peak uint64
}

// WatchHeap collects garbage, takes the baseline and samples HeapInuse
// every few milliseconds until Stop. Meanwhile the collector runs at
// GOGC=10, so a sample is close to the live heap rather than to garbage
// waiting for the next cycle. If the test ends first (a t.Fatal), cleanup
// stops the watch and restores GOGC.
func WatchHeap(t testing.TB) *HeapWatch {
	w := &HeapWatch{gcPercent: debug.SetGCPercent(10), stop: make(chan struct{}), done: make(chan struct{})}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.base, w.peak = ms.HeapInuse, ms.HeapInuse
	go func() {
		defer close(w.done)
		tick := time.NewTicker(heapSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.sample()
			}
		}
	}()
	t.Cleanup(func() { w.Stop() })
	return w
}

func (w *HeapWatch) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.mu.Lock()
	w.peak = max(w.peak, ms.HeapInuse)
	w.mu.Unlock()
}

// Base is HeapInuse at the start, after a collection.
func (w *HeapWatch) Base() uint64 { return w.base }

// Growth samples once more and returns the peak so far above the
// baseline; the watch goes on.
func (w *HeapWatch) Growth() uint64 {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak - min(w.base, w.peak)
}

// Stop ends sampling, restores GOGC and returns the peak growth, a final
// sample included. Later calls return the same peak without sampling.
func (w *HeapWatch) Stop() uint64 {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.sample()
		debug.SetGCPercent(w.gcPercent)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak - min(w.base, w.peak)
}
