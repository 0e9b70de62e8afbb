package netpoll

import "golang.org/x/sys/unix"

// The socket interface. A handler reads and writes its descriptor through
// its Desc, never with system calls of its own, so that one handler serves
// both kinds of backend:
//
//   - a readiness backend (epoll, kqueue, poll, io_uring's readiness mode)
//     reports that a socket is ready and these methods make the system call
//     (recvfrom, sendto, accept4);
//   - a completion backend (io_uring's completion mode) keeps a receive
//     armed on every socket the handler reads, submits the handler's
//     writes itself, and these methods copy from and to the buffers it
//     lent the kernel, making no system call at all.
//
// Either way an event tells the handler the same thing (Read may have
// bytes, Write may take more), a short read means nothing more is waiting,
// and EAGAIN means "wait for the next event".

// accepting is an interest bit of the loop's own, set by Loop.Listen: the
// descriptor is a listening socket (a completion backend accepts on it
// rather than receiving). Readiness backends look at Read and Write only.
const accepting Interest = 1 << 6

// sockIO is a completion backend's side of the socket interface, on the
// loop's goroutine.
type sockIO interface {
	read(d *Desc, p []byte) (int, error)
	peek(d *Desc, p []byte) (int, error)
	write(d *Desc, p []byte) (int, error)
	accept(d *Desc) (int, unix.Sockaddr, error)
	shutdown(d *Desc) error
	// close forgets d and closes its descriptor once what was written
	// is sent (at once when d is to be reset, dropping it).
	close(d *Desc) error
	// detach forgets d and leaves its descriptor open.
	detach(d *Desc) error
	// stop begins a hand-over to another backend without blocking: the
	// poller submits nothing new and cancels every request, and the
	// loop goes on serving what it holds. A later Wait calls done, once,
	// with nil when the kernel has ended every request, or with why it
	// gave up; done runs inside Wait, so it only queues work (Post). It
	// fails when a hand-over is already under way.
	stop(done func(error)) error
	// handOver moves what the sockets hold (bytes received and not read,
	// written and not sent, accepted connections) into descs, for the
	// next backend, after stop's done(nil).
	handOver(descs []*Desc)
	// resume undoes stop, for a hand-over that did not finish: the
	// poller arms its sockets' requests again.
	resume()
}

// moved is what a descriptor brought from a completion backend it was
// switched away from: its handler reads and writes it before the socket.
type moved struct {
	in  []byte // received, not yet read
	out []byte // written, not yet sent
	fds []int  // accepted connections (a listener's)
}

// Read reads what the socket received into p. It returns (0, nil) at the
// end of the stream and unix.EAGAIN when nothing is waiting; n < len(p)
// means the socket had no more.
func (d *Desc) Read(p []byte) (int, error) {
	if m := d.moved; m != nil && len(m.in) > 0 {
		n := copy(p, m.in)
		m.in = m.in[n:]
		d.tidyMoved()
		if n == len(p) {
			return n, nil
		}
		// The socket may have more: a short read has to mean it had none.
		k, err := d.readSocket(p[n:])
		if k > 0 {
			n += k
		}
		if err == unix.EAGAIN || k == 0 && err == nil {
			// The end of the stream is reported on the next read, alone.
			err = nil
		}
		return n, err
	}
	return d.readSocket(p)
}

func (d *Desc) readSocket(p []byte) (int, error) {
	if io := d.loop.io; io != nil {
		return io.read(d, p)
	}
	return RawRead(d.fd, p)
}

// Peek looks at what the socket received without taking it: (0, nil) at
// the end of the stream, unix.EAGAIN when nothing is waiting.
func (d *Desc) Peek(p []byte) (int, error) {
	if m := d.moved; m != nil && len(m.in) > 0 {
		return copy(p, m.in), nil
	}
	if io := d.loop.io; io != nil {
		return io.peek(d, p)
	}
	n, _, err := unix.Recvfrom(d.fd, p, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if err != nil {
		return 0, err // recvfrom's -1 is no count, as Read's is not
	}
	return n, nil
}

// Write writes p to the socket, or as much as it takes: n < len(p) comes
// with unix.EAGAIN, and an event with EventWrite says when to go on.
func (d *Desc) Write(p []byte) (int, error) {
	if m := d.moved; m != nil && len(m.out) > 0 {
		if err := d.writeMoved(); err != nil {
			return 0, err
		}
	}
	return d.writeSocket(p)
}

func (d *Desc) writeSocket(p []byte) (int, error) {
	if io := d.loop.io; io != nil {
		return io.write(d, p)
	}
	return RawWrite(d.fd, p)
}

// writeMoved sends the bytes a previous backend had not sent, ahead of
// anything written since. It returns unix.EAGAIN while some are left.
func (d *Desc) writeMoved() error {
	m := d.moved
	for len(m.out) > 0 {
		n, err := d.writeSocket(m.out)
		if n > 0 {
			m.out = m.out[n:]
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
	}
	d.tidyMoved()
	// On poll the kernel watched writability for these bytes only.
	d.syncKernel()
	return nil
}

// tidyMoved forgets an emptied moved, keeping the socket path's check to
// one nil pointer.
func (d *Desc) tidyMoved() {
	if m := d.moved; m != nil && len(m.in) == 0 && len(m.out) == 0 && len(m.fds) == 0 {
		d.moved = nil
	}
}

// Accept takes one connection waiting on a listening socket; it is
// non-blocking and close-on-exec.
func (d *Desc) Accept() (int, unix.Sockaddr, error) {
	if m := d.moved; m != nil && len(m.fds) > 0 {
		fd := m.fds[0]
		m.fds = m.fds[1:]
		d.tidyMoved()
		sa, err := unix.Getpeername(fd)
		if err != nil {
			unix.Close(fd)
			return -1, nil, unix.ECONNABORTED
		}
		return fd, sa, nil
	}
	if io := d.loop.io; io != nil {
		return io.accept(d)
	}
	return accept(d.fd)
}

// Shutdown ends the sending direction (shutdown(2) SHUT_WR) after what
// was written so far: the peer reads to the end, then the end of stream.
func (d *Desc) Shutdown() error {
	if io := d.loop.io; io != nil && !d.closed {
		return io.shutdown(d)
	}
	return unix.Shutdown(d.fd, unix.SHUT_WR)
}

// ResetOnClose makes the next Close reset the connection (SO_LINGER 0):
// bytes written and not yet taken by the peer are dropped, not left to
// the kernel to keep sending, and the peer sees a reset.
func (d *Desc) ResetOnClose() {
	d.reset = true
	unix.SetsockoptLinger(d.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// syncKernel gives a level-triggered poller the interest the descriptor
// needs now: the handler's, plus writability while moved bytes wait.
func (d *Desc) syncKernel() {
	l := d.loop
	if d.closed || l.caps&(CapEdgeTriggered|CapCompletionIO) != 0 {
		return
	}
	want := d.kernelWant()
	if want == d.kernel {
		return
	}
	if l.poller.Modify(d.fd, want, d.tok) == nil {
		d.kernel = want
		l.mods.Add(1)
	}
}

// kernelWant is what a level-triggered poller must watch for d.
func (d *Desc) kernelWant() Interest {
	if d.moved != nil && len(d.moved.out) > 0 {
		return d.want | Write
	}
	return d.want
}
