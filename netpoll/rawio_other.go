//go:build unix && !linux

package netpoll

import "golang.org/x/sys/unix"

// RawRead reads from a non-blocking descriptor. Outside Linux system calls go
// through the C library, so this is unix.Read.
func RawRead(fd int, p []byte) (int, error) { return unix.Read(fd, p) }

// RawWrite writes to a non-blocking descriptor; see RawRead.
func RawWrite(fd int, p []byte) (int, error) { return unix.Write(fd, p) }
