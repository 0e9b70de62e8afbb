//go:build unix

package netpoll

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// sockConn is a test handler on the socket interface: it echoes what it
// reads, or runs onAccept's plan, with a bounded output queue that stops
// its reads while full (the backpressure every proxy handler has).
type sockConn struct {
	d        *Desc
	out      []byte
	peerDone bool
}

const echoQueue = 256 << 10

func (c *sockConn) HandleEvent(ev Event) {
	if ev&EventWrite != 0 || len(c.out) > 0 {
		c.flush()
	}
	var buf [32 << 10]byte
	for len(c.out) < echoQueue && !c.peerDone {
		n, err := c.d.Read(buf[:])
		if n > 0 {
			c.out = append(c.out, buf[:n]...)
			c.flush()
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err == nil {
			c.peerDone = true
			break
		}
		c.d.Close()
		return
	}
	want := Read
	if len(c.out) >= echoQueue || c.peerDone {
		want = 0
	}
	if len(c.out) > 0 {
		want |= Write
	}
	c.d.SetInterest(want)
	if c.peerDone && len(c.out) == 0 {
		c.d.Shutdown()
	}
	if want&Read != 0 && len(c.out) < echoQueue {
		c.d.Kick(EventRead) // resumed reads: nothing else would wake them
	}
}

func (c *sockConn) flush() {
	for len(c.out) > 0 {
		n, err := c.d.Write(c.out)
		c.out = c.out[n:]
		if err != nil {
			return
		}
	}
	c.out = nil
}

// listenEcho serves echo connections on l and returns the address.
func listenEcho(t *testing.T, l *Loop, plan func(c *sockConn)) netip.AddrPort {
	t.Helper()
	fd, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), false, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	addr, _ := LocalAddr(fd)
	onLoop(l, func() {
		_, err = l.Listen(fd, func(nfd int, _ netip.AddrPort) {
			c := &sockConn{}
			d, err := l.Register(nfd, c, Read)
			if err != nil {
				unix.Close(nfd)
				return
			}
			c.d = d
			if plan != nil {
				plan(c)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// dialEcho connects to a fresh echo listener on the running loop l.
func dialEcho(t *testing.T, l *Loop, within time.Duration) net.Conn {
	t.Helper()
	addr := listenEcho(t, l, nil)
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(within))
	return c
}

// TestSocketContract runs the socket interface's contract, one case at a
// time on a fresh loop, on every backend: what a handler may count on
// however the backend does its sockets' I/O.
func TestSocketContract(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, l *Loop, backend string)
	}{
		{"echo with backpressure both ways", contractEcho},
		{"half-close after queued writes", contractHalfClose},
		{"a refused write then EventWrite", contractRefusedWrite},
		{"peek", contractPeek},
		{"close with unsent bytes", contractCloseSendsWhatWasWritten},
		{"reset", contractResetOnClose},
		{"switch during a send", contractSwitchDuringSend},
		{"accept during a switch", contractAcceptDuringSwitch},
	}
	polltest.ForEachBackend(t, Available(), func(t *testing.T, backend string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				l := newTestLoop(t, backend)
				runLoop(t, l)
				c.run(t, l, backend)
			})
		}
	})
}

// connFunc is a handler whose behaviour a contract case sets when the
// connection is accepted.
type connFunc struct{ on func(Event) }

func (c *connFunc) HandleEvent(ev Event) { c.on(ev) }

// serveConns listens on l and registers every connection it accepts for
// want, with a small send buffer (so that writes meet a full socket after
// little); start, on the loop, returns the connection's event handler.
func serveConns(t *testing.T, l *Loop, want Interest, start func(d *Desc) func(Event)) netip.AddrPort {
	t.Helper()
	fd, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), false, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	addr, _ := LocalAddr(fd)
	onLoop(l, func() {
		_, err = l.Listen(fd, func(nfd int, _ netip.AddrPort) {
			unix.SetsockoptInt(nfd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
			c := &connFunc{on: func(Event) {}}
			d, err := l.Register(nfd, c, want)
			if err != nil {
				unix.Close(nfd)
				return
			}
			c.on = start(d)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// dialSmall connects to addr with a small receive buffer, so that a
// handler's writes meet a full socket after little.
func dialSmall(t *testing.T, addr netip.AddrPort) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
		})
	}}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// pusher writes data through d as the contract says: what Write refuses
// waits for EventWrite. It reports its first refusal on refused and
// calls done, on the loop, once everything was handed to d.
type pusher struct {
	d       *Desc
	data    []byte
	refused chan struct{} // closed at the first refusal
	blocked bool          // refused, and no EventWrite since
	wrote   bool          // an EventWrite came after a refusal
	done    func(p *pusher)
}

func (p *pusher) HandleEvent(ev Event) {
	if ev&EventWrite != 0 && p.blocked {
		p.blocked, p.wrote = false, true
	}
	p.push()
}

func (p *pusher) push() {
	for len(p.data) > 0 {
		n, err := p.d.Write(p.data)
		p.data = p.data[n:]
		if err == unix.EAGAIN {
			p.blocked = true
			select {
			case <-p.refused:
			default:
				close(p.refused)
			}
			p.d.SetInterest(Write)
			return
		}
		if err != nil {
			p.d.Close() // the peer went: what it read says what went wrong
			return
		}
	}
	p.d.SetInterest(0)
	if p.done != nil {
		p.done(p)
		p.done = nil
	}
}

// startPush makes an accepted connection, registered for Write, a pusher
// of data (from its first EventWrite), which calls done once everything
// went to its Desc.
func startPush(data []byte, refused chan struct{}, done func(p *pusher)) func(d *Desc) func(Event) {
	return func(d *Desc) func(Event) {
		p := &pusher{d: d, data: data, refused: refused, done: done}
		return p.HandleEvent
	}
}

// contractHalfClose: Shutdown right after writes the socket has not sent
// yet ends the stream after them, and the other direction stays open.
func contractHalfClose(t *testing.T, l *Loop, _ string) {
	want := make([]byte, 256<<10)
	rand.Read(want)
	wrote := make(chan int, 1)
	heard := make(chan string, 1)
	addr := serveConns(t, l, Read, func(d *Desc) func(Event) {
		n, err := d.Write(want)
		if err != nil && err != unix.EAGAIN {
			t.Errorf("write: %v", err)
		}
		if err := d.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		wrote <- n
		var got []byte
		return func(Event) {
			var buf [64]byte
			for {
				k, err := d.Read(buf[:])
				got = append(got, buf[:k]...)
				if k == 0 && err == nil {
					heard <- string(got)
					d.Close()
					return
				}
				if err != nil {
					return
				}
			}
		}
	})
	c := dialSmall(t, addr)
	n := <-wrote
	if n == 0 {
		t.Fatal("the first write took nothing")
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want[:n]) {
		t.Fatalf("read %d bytes before the end, want the %d written before Shutdown", len(got), n)
	}
	// Half-closed, not closed: the peer's direction still carries bytes.
	c.Write([]byte("still open"))
	c.(*net.TCPConn).CloseWrite()
	select {
	case s := <-heard:
		if s != "still open" {
			t.Fatalf("the handler read %q after its Shutdown", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler heard nothing after its Shutdown")
	}
}

// contractRefusedWrite: a Write the socket cannot take whole returns
// EAGAIN with what it took, and EventWrite follows once there is room.
func contractRefusedWrite(t *testing.T, l *Loop, _ string) {
	want := make([]byte, 2<<20)
	rand.Read(want)
	refused := make(chan struct{})
	resumed := make(chan bool, 1)
	addr := serveConns(t, l, Write, startPush(want, refused, func(p *pusher) {
		resumed <- p.wrote
		p.d.Close()
	}))
	c := dialSmall(t, addr)
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("2 MiB to a peer that reads nothing were never refused")
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
	if !<-resumed {
		t.Fatal("the writer finished without an EventWrite after its refusal")
	}
}

// contractPeek: Peek shows what arrived without taking it, says EAGAIN
// when nothing waits and (0, nil) at the end of the stream.
func contractPeek(t *testing.T, l *Loop, _ string) {
	type result struct {
		n   int
		err error
		b   string
	}
	results := make(chan result, 16)
	peek := func(d *Desc) {
		var buf [16]byte
		n, err := d.Peek(buf[:])
		results <- result{n, err, string(buf[:max(n, 0)])}
	}
	read := func(d *Desc) {
		var buf [16]byte
		n, err := d.Read(buf[:])
		results <- result{n, err, string(buf[:max(n, 0)])}
	}
	addr := serveConns(t, l, Read, func(d *Desc) func(Event) {
		peek(d) // nothing sent yet
		step := 0
		return func(Event) {
			var buf [16]byte
			if n, err := d.Peek(buf[:]); err == unix.EAGAIN || n == 0 && err == nil && step == 0 {
				return // not there yet
			}
			switch step {
			case 0: // "hello" arrived
				peek(d)
				peek(d)
				read(d)
				peek(d)
			case 1: // the end of the stream
				peek(d)
				read(d)
				d.Close()
			}
			step++
		}
	})
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next := func(what string, want result) {
		t.Helper()
		select {
		case r := <-results:
			if r.n != want.n || r.err != want.err || r.b != want.b {
				t.Fatalf("%s: (%d, %v) %q, want (%d, %v) %q", what, r.n, r.err, r.b, want.n, want.err, want.b)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the handler never got there", what)
		}
	}
	next("peek before anything arrived", result{0, unix.EAGAIN, ""})
	c.Write([]byte("hello"))
	next("peek", result{5, nil, "hello"})
	next("peek again", result{5, nil, "hello"})
	next("read after peeking", result{5, nil, "hello"})
	next("peek after the read", result{0, unix.EAGAIN, ""})
	c.(*net.TCPConn).CloseWrite()
	next("peek at the end", result{0, nil, ""})
	next("read at the end", result{0, nil, ""})
}

// contractSwitchDuringSend: a handler in the middle of a large send,
// refused by a full socket, while the loop moves through every other
// backend and back: the peer gets every byte, in order, then the end.
func contractSwitchDuringSend(t *testing.T, l *Loop, backend string) {
	want := make([]byte, 4<<20)
	rand.Read(want)
	refused := make(chan struct{})
	addr := serveConns(t, l, Write, startPush(want, refused, func(p *pusher) { p.d.Close() }))
	c := dialSmall(t, addr)
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("4 MiB to a peer that reads nothing were never refused")
	}
	for _, to := range append(Available(), backend) {
		if _, err := l.SwitchPoller(to); err != nil {
			t.Fatalf("switch to %s: %v", to, err)
		}
		// Some bytes move on each backend, so a switch meets the send
		// at a different point each time.
		buf := make([]byte, 64<<10)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, want[:len(buf)]) {
			t.Fatalf("on %s: bytes out of order", to)
		}
		want = want[len(buf):]
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after the switches, want the %d left", len(got), len(want))
	}
}

// contractAcceptDuringSwitch: connections that arrive while the loop is
// busy and then switches, before its listener took them, are accepted
// on the next backend (or handed over to it) and served there.
func contractAcceptDuringSwitch(t *testing.T, l *Loop, backend string) {
	addr := listenEcho(t, l, nil)
	for _, to := range append(Available(), backend) {
		const n = 8
		release := make(chan struct{})
		switched := make(chan error, 1)
		l.Post(func() {
			<-release // the loop is busy: the connections wait to be accepted
			l.switchPoller(to, func(_ SwitchEvent, err error) { switched <- err })
		})
		conns := make([]net.Conn, n)
		for i := range conns {
			c, err := net.Dial("tcp", addr.String())
			if err != nil {
				close(release)
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "ping %d", i)
			conns[i] = c
		}
		close(release)
		select {
		case err := <-switched:
			if err != nil {
				t.Fatalf("switch to %s: %v", to, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the switch to %s never finished", to)
		}
		for i, c := range conns {
			want := fmt.Sprintf("ping %d", i)
			buf := make([]byte, len(want))
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
				t.Fatalf("on %s, connection %d echoed %q, %v", to, i, buf, err)
			}
		}
	}
}

// contractEcho sends 8 MiB through an echo handler, taking it back more
// slowly than it is sent, so that both directions fill up and the handler
// pauses its reads: every byte comes back, in order, on every backend.
func contractEcho(t *testing.T, l *Loop, _ string) {
	{
		c := dialEcho(t, l, 20*time.Second)
		want := make([]byte, 8<<20)
		rand.Read(want)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Write(want)
			if err == nil {
				err = c.(*net.TCPConn).CloseWrite()
			}
			errc <- err
		}()
		var got bytes.Buffer
		buf := make([]byte, 8<<10)
		for {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("after %d bytes: %v", got.Len(), err)
			}
			if got.Len()%(1<<20) < n {
				time.Sleep(5 * time.Millisecond) // a slow reader, now and then
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("echoed %d bytes, not the %d sent", got.Len(), len(want))
		}
	}
}

// contractCloseSendsWhatWasWritten closes a connection right after
// writing 100 KiB to a peer that has not read yet (what a socket buffer,
// or io_uring's send buffers, take in one write): the peer still gets
// every byte, then the end of the stream, as close(2) promises.
func contractCloseSendsWhatWasWritten(t *testing.T, l *Loop, _ string) {
	{
		want := make([]byte, 100<<10)
		rand.Read(want)
		addr := listenEcho(t, l, func(c *sockConn) {
			for off := 0; off < len(want); {
				n, err := c.d.Write(want[off:])
				off += n
				if err != nil {
					// The socket is full: the rest goes as it drains,
					// through the handler's own queue.
					c.out = append([]byte(nil), want[off:]...)
					c.d.SetInterest(Write)
					c.peerDone = true
					return
				}
			}
			c.d.Close()
		})
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		time.Sleep(50 * time.Millisecond)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes, want the %d written before the close", len(got), len(want))
		}
		// Nothing of the close is left waiting on the loop: a bound on
		// the last sends' wait is let go once they went.
		onLoop(l, func() {})
		onLoop(l, func() {})
		if n := l.Stats().Timers; n != 0 {
			t.Fatalf("%d timers pending after the close finished", n)
		}
	}
}

// contractResetOnClose: a reset drops what the peer has not taken and
// the peer sees the reset.
func contractResetOnClose(t *testing.T, l *Loop, _ string) {
	{
		addr := listenEcho(t, l, func(c *sockConn) {
			c.d.Write(make([]byte, 64<<10))
			c.d.ResetOnClose()
			c.d.Close()
		})
		c, err := net.Dial("tcp", addr.String())
		if errors.Is(err, syscall.ECONNRESET) {
			return // the reset came before the connect's result was read
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(c)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read to the end: %v, want a reset", err)
		}
	}
}
