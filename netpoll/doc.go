// Package netpoll is pollproxy's event loop: a small Poller interface with one
// implementation per kernel readiness API (epoll, kqueue, poll, and
// io_uring's multishot poll on Linux), the Loop that drives a poller with
// timers and a cross-goroutine task queue, and the socket helpers the loop
// needs (listen with SO_REUSEPORT, accept4, non-blocking connect).
//
// A descriptor is registered once for its whole life. On edge-triggered
// backends (epoll with EPOLLET, kqueue with EV_CLEAR, io_uring's multishot
// poll) it is registered for both directions and never touched again until
// it is closed: readiness changes cost no system call. The poll backend is
// level-triggered, so the loop there keeps the kernel's interest equal to
// what the handler wants (write interest only while output is pending);
// changing it edits a pollfd entry in user space and still costs no system
// call.
//
// What a backend can do is a value it declares, Caps (edge-triggered,
// completion I/O, counting its own system calls), which the loop reads
// when it opens or switches to a poller; io_uring's completion mode does
// the sockets' I/O on the ring, and handlers read and write through their
// Desc either way (the socket interface, sockio.go).
//
// One job per file:
//   - poller.go: the Poller interface, Caps, the backend registry and Open;
//   - poller_epoll_linux.go, poller_kqueue_bsd.go, poller_poll_unix.go: the
//     epoll, kqueue and poll backends;
//   - poller_iouring_linux.go: what io_uring's two modes share (the ring,
//     its wake-up, the registrations, the enter, the report of a reap) and
//     the opening that picks the mode; uring_readiness_linux.go: readiness
//     mode (multishot poll); uring_completion_linux.go: completion mode,
//     with a socket's receives (uring_recv_linux.go), sends and their state
//     (uring_send_linux.go), accepts (uring_accept_linux.go), close
//     (uring_close_linux.go), the hand-over on a switch
//     (uring_handover_linux.go) and the buffers lent to the kernel
//     (uring_buffers_linux.go); uring_linux.go: the ring and its ABI;
//     uring_probe_linux.go: whether the kernel allows it;
//   - wake.go: the wake-up every backend carries; wake_eventfd_linux.go,
//     wake_pipe_other.go: the waker (an eventfd, or a pipe);
//   - loop.go: the Loop and its descriptors (Desc); timer.go: its timers;
//     yield.go: its passes through the Go scheduler; group.go: a Group of
//     loops and the spare P it keeps; switch.go: a live switch of a loop's
//     backend; listener.go: accepting on a loop;
//   - sockio.go: the socket interface (Desc's Read, Peek, Write, Accept,
//     Shutdown); rawio_linux.go, rawio_other.go: the system calls behind it
//     on readiness backends;
//   - socket.go, socket_flags_linux_bsd.go, socket_flags_other.go: listen
//     with SO_REUSEPORT, accept4, non-blocking connect; keepalive.go with
//     keepalive_tunable.go, keepalive_darwin.go, keepalive_openbsd.go:
//     TCP keep-alive on a listening socket, which accepted ones inherit;
//   - cpu.go, cpu_thread.go, cpu_none.go: a loop thread's CPU time;
//     manualclock.go: how a test's clock (looptest) reaches a loop;
//     contain.go: a panic in a loop's work contained and its Owner
//     abandoned, the loop serving on;
//     abcost_on.go, abcost_off.go: the cost the A/B end-to-end test injects.
package netpoll
