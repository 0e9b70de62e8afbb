//go:build !linux

package ab

// residentBytes is 0 where there is no cheap reading of the current
// resident set (getrusage gives only the peak): a comparison of two
// instances then leaves memory out and says so.
func residentBytes() int64 { return 0 }
