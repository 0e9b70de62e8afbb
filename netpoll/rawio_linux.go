//go:build linux

package netpoll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// RawRead reads from a non-blocking descriptor. It cannot block, so it skips
// telling the Go scheduler that a system call may (the entersyscall and
// exitsyscall pair of unix.Read), which a loop pays several times per
// request. Errors are unix.Errno values, as from unix.Read.
func RawRead(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RawWrite writes to a non-blocking descriptor; see RawRead.
func RawWrite(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
