//go:build unix

package netpoll

// wake is the wake-up every backend carries: the waker it watches, which
// a loop's switch moves on to the next poller (see switch.go), and Wake.
// Embedded in each backend, it is the one place where a poller decides
// whether closing it closes its waker.
type wake struct {
	waker    *waker
	made     bool // newWake made the waker: a failed open closes it
	disowned bool // the waker moved on, or is closed: closeWaker leaves it
}

// newWake returns the wake-up of a poller opening around w, or around a
// new waker when w is nil (a loop switching backends brings its own).
func newWake(w *waker) (wake, error) {
	if w != nil {
		return wake{waker: w}, nil
	}
	w, err := newWaker()
	if err != nil {
		return wake{}, err
	}
	return wake{waker: w, made: true}, nil
}

// Wake makes a concurrent or the next Wait return promptly.
func (k *wake) Wake() error { return k.waker.wake() }

// wakeup is the waker the poller watches.
func (k *wake) wakeup() *waker { return k.waker }

// disownWaker makes closeWaker leave the waker open: it moved on.
func (k *wake) disownWaker() { k.disowned = true }

// closeWaker closes the waker when the poller closes, unless it moved on.
func (k *wake) closeWaker() {
	if !k.disowned {
		k.disowned = true
		k.waker.close()
	}
}

// abandon closes a waker newWake made, for an open that failed after it.
func (k *wake) abandon() {
	if k.made {
		k.waker.close()
	}
}
