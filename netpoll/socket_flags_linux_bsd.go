//go:build linux || freebsd || dragonfly

package netpoll

import "golang.org/x/sys/unix"

// socket makes a TCP socket that is non-blocking and close-on-exec from
// birth, with no window in which a fork could inherit it.
func socket(family, proto int) (int, error) {
	return unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
}

// accept takes one pending connection, non-blocking and close-on-exec.
func accept(fd int) (int, unix.Sockaddr, error) {
	return unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
}
