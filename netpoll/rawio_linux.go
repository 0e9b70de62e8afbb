//go:build linux

package netpoll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// RawRead reads from a non-blocking socket. It cannot block, so it skips
// telling the Go scheduler that a system call may (the entersyscall and
// exitsyscall pair of unix.Read), which a loop pays several times per
// request. It is recvfrom without an address rather than read: read goes
// through the kernel's generic file path (vfs_read, the file-position
// lookup of fdget_pos) before it reaches the socket, which recvfrom enters
// directly (the cost is in docs/performance.md). Errors are unix.Errno
// values, as from unix.Read.
func RawRead(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(ptr), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RawWrite writes to a non-blocking socket; see RawRead. It is sendto
// without an address, with MSG_NOSIGNAL: a peer that closed gets EPIPE, not
// a SIGPIPE for the runtime to field.
func RawWrite(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(ptr), uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
