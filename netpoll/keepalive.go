//go:build unix

package netpoll

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// KeepAlive is the TCP keep-alive of a socket, with the meanings of Go's
// net.KeepAliveConfig (which Caddy's keepalive_* options fill): Idle is
// the quiet time before the first probe, Interval the time between
// probes, Count the probes unanswered before the connection is dropped.
// Zero is Go's default (15s, 15s, 9); a negative value leaves the
// system's.
type KeepAlive struct {
	Enable         bool
	Idle, Interval time.Duration
	Count          int
}

// Go's defaults, which Caddy keeps.
const (
	defaultKeepAliveIdle     = 15 * time.Second
	defaultKeepAliveInterval = 15 * time.Second
	defaultKeepAliveCount    = 9
)

// SetKeepAlive sets ka on the socket fd. Set on a listening socket, it is
// what every connection accepted from it starts with: the kernel copies
// the options into the new socket, so accepting costs no system call more.
// Where the system has no per-socket idle, interval or count (OpenBSD),
// only SO_KEEPALIVE is set.
func SetKeepAlive(fd int, ka KeepAlive) error {
	if !ka.Enable {
		return sockopt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0, "SO_KEEPALIVE")
	}
	if err := sockopt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1, "SO_KEEPALIVE"); err != nil {
		return err
	}
	if !keepAliveTunable {
		return nil
	}
	if d := orDefault(ka.Idle, defaultKeepAliveIdle); d > 0 {
		if err := sockopt(fd, unix.IPPROTO_TCP, tcpKeepIdle, seconds(d), "TCP keep-alive idle"); err != nil {
			return err
		}
	}
	if d := orDefault(ka.Interval, defaultKeepAliveInterval); d > 0 {
		if err := sockopt(fd, unix.IPPROTO_TCP, tcpKeepIntvl, seconds(d), "TCP_KEEPINTVL"); err != nil {
			return err
		}
	}
	if n := orDefault(ka.Count, defaultKeepAliveCount); n > 0 {
		if err := sockopt(fd, unix.IPPROTO_TCP, tcpKeepCnt, n, "TCP_KEEPCNT"); err != nil {
			return err
		}
	}
	return nil
}

func sockopt(fd, level, opt, v int, name string) error {
	if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
		return fmt.Errorf("setsockopt %s: %w", name, err)
	}
	return nil
}

func orDefault[T time.Duration | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// seconds rounds d up to whole seconds, at least one, as Go does.
func seconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
