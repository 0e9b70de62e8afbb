//go:build linux

package netpoll

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// waker wakes a blocked Wait from another goroutine. On Linux it is one
// eventfd, readable while a wake-up is pending.
type waker struct {
	fd      int
	pending atomic.Bool // a wake-up is in flight: later calls cost nothing
	count   atomic.Uint64
}

func newWaker() (*waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &waker{fd: fd}, nil
}

func (w *waker) readFD() int { return w.fd }

func (w *waker) wake() error {
	if !w.pending.CompareAndSwap(false, true) {
		return nil
	}
	one := [8]byte{1}
	_, err := unix.Write(w.fd, one[:])
	if err == unix.EAGAIN {
		return nil // the counter is saturated: a wake-up is pending anyway
	}
	return err
}

// drain consumes the wake-up. pending is cleared after the read so a wake
// racing with it writes again rather than being lost.
func (w *waker) drain() {
	var buf [8]byte
	unix.Read(w.fd, buf[:])
	w.pending.Store(false)
	w.count.Add(1)
}

func (w *waker) wakeups() uint64 { return w.count.Load() }

func (w *waker) close() error { return unix.Close(w.fd) }
