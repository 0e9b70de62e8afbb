//go:build darwin || netbsd || openbsd

package netpoll

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socket makes a non-blocking, close-on-exec TCP socket. These systems lack
// the SOCK_ flags (or accept4), so the flags are set right after creation
// under the fork lock, as the standard library does.
func socket(family, proto int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(family, unix.SOCK_STREAM, proto)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// accept takes one pending connection, non-blocking and close-on-exec.
func accept(fd int) (int, unix.Sockaddr, error) {
	syscall.ForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, nil, err
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return -1, nil, err
	}
	return nfd, sa, nil
}
