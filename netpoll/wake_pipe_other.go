//go:build unix && !linux

package netpoll

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// waker wakes a blocked Wait from another goroutine. Outside Linux it is a
// non-blocking pipe whose read end the poller watches.
type waker struct {
	r, w    int
	pending atomic.Bool // a wake-up is in flight: later calls cost nothing
	count   atomic.Uint64
}

func newWaker() (*waker, error) {
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		return nil, err
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, err
		}
	}
	return &waker{r: fds[0], w: fds[1]}, nil
}

func (w *waker) readFD() int { return w.r }

func (w *waker) wake() error {
	if !w.pending.CompareAndSwap(false, true) {
		return nil
	}
	_, err := unix.Write(w.w, []byte{1})
	if err == unix.EAGAIN {
		return nil // the pipe is full: a wake-up is pending anyway
	}
	return err
}

// drain consumes the wake-up. pending is cleared after the read so a wake
// racing with it writes again rather than being lost.
func (w *waker) drain() {
	var buf [64]byte
	for {
		if n, err := unix.Read(w.r, buf[:]); n <= 0 || err != nil {
			break
		}
	}
	w.pending.Store(false)
	w.count.Add(1)
}

func (w *waker) wakeups() uint64 { return w.count.Load() }

func (w *waker) close() error {
	unix.Close(w.w)
	return unix.Close(w.r)
}
