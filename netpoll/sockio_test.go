//go:build unix

package netpoll

import (
	"bytes"
	"crypto/rand"
	"errors"
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

// TestSocketEcho sends 8 MiB through an echo handler, taking it back more
// slowly than it is sent, so that both directions fill up and the handler
// pauses its reads: every byte comes back, in order, on every backend.
func TestSocketEcho(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
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
	})
}

// TestSocketCloseSendsWhatWasWritten closes a connection right after
// writing 100 KiB to a peer that has not read yet (what a socket buffer,
// or io_uring's send buffers, take in one write): the peer still gets
// every byte, then the end of the stream, as close(2) promises.
func TestSocketCloseSendsWhatWasWritten(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
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
	})
}

// TestSocketResetOnClose: a reset drops what the peer has not taken and
// the peer sees the reset.
func TestSocketResetOnClose(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		runLoop(t, l)
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
	})
}
