package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// SocketEnv is the environment variable through which systemd passes the
// notification socket's address to a Type=notify service.
const SocketEnv = "NOTIFY_SOCKET"

// sendTimeout bounds a send when the manager's receive queue is full, so
// that a stuck manager delays a reload or shutdown a little, never for good.
const sendTimeout = 2 * time.Second

// ErrUnsupportedSocket is returned for a $NOTIFY_SOCKET that is neither a
// file system path nor an abstract socket name (such as systemd's
// "vsock:" addresses for virtual machines).
var ErrUnsupportedSocket = errors.New("sdnotify: unsupported " + SocketEnv + " address")

// Ready says the service is up: its listeners accept connections, or a
// reload is over (whether it applied the new configuration or kept the
// running one). status, when not empty, becomes the unit's status line.
func Ready(status string) error {
	return send(withStatus("READY=1", status))
}

// Reloading says a reload has started; Ready must follow when it ends.
// The message carries CLOCK_MONOTONIC in microseconds (MONOTONIC_USEC),
// which Type=notify-reload requires to tell this reload from an earlier one.
func Reloading() error {
	usec, err := MonotonicUsec()
	if err != nil {
		return err
	}
	return send("RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatUint(usec, 10))
}

// MonotonicUsec reads CLOCK_MONOTONIC in microseconds, the clock and unit
// of MONOTONIC_USEC (Go's own monotonic readings are not exposed as such).
func MonotonicUsec() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("sdnotify: monotonic clock: %w", err)
	}
	return uint64(ts.Sec)*1_000_000 + uint64(ts.Nsec)/1_000, nil
}

// Stopping says the service is shutting down (draining its connections).
func Stopping() error {
	return send("STOPPING=1")
}

// withStatus adds a STATUS= line; a status is one line, so line breaks in
// it (an error listing several problems) become spaces.
func withStatus(state, status string) string {
	if status == "" {
		return state
	}
	return state + "\nSTATUS=" + strings.ReplaceAll(status, "\n", " ")
}

// send delivers state, newline-separated KEY=VALUE assignments, as one
// datagram to $NOTIFY_SOCKET; it does nothing when the variable is unset.
func send(state string) error {
	name := os.Getenv(SocketEnv)
	if name == "" {
		return nil
	}
	// A name starting with '@' is an abstract socket (Linux): the net
	// package turns the '@' into the leading NUL byte the kernel expects.
	if name[0] != '/' && name[0] != '@' {
		return fmt.Errorf("%w: %q", ErrUnsupportedSocket, name)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}
