// Package sdnotify tells a service manager (systemd) how the process is
// doing, through the datagram socket named by $NOTIFY_SOCKET: ready once
// the listeners are up, reloading (with the monotonic time systemd needs
// to order reloads) and ready again around a reload, stopping at shutdown.
// Without $NOTIFY_SOCKET (not started by systemd with Type=notify) every
// call does nothing. The protocol is sd_notify(3)'s.
//
// A call dials, sends one datagram and closes, so nothing is held between
// calls; it waits at most sendTimeout for room in the manager's queue and
// belongs on the process's control goroutine, never on an event loop.
//
// sdnotify.go holds it all: Ready, Reloading, Stopping, MonotonicUsec and
// SocketEnv.
package sdnotify
