package ab

import (
	"bytes"
	"os"
	"strconv"
)

// residentBytes is the process's resident set now, from /proc/self/statm
// (its second field, in pages). getrusage's ru_maxrss is the peak, which
// never comes down and so cannot compare two instances over time.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
