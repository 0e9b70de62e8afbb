//go:build unix

package netpoll

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKeepAliveInherited: keep-alive set on a listening socket is what a
// connection accepted from it has, defaults filled in for what is zero,
// and a disabled one is off.
func TestKeepAliveInherited(t *testing.T) {
	for _, tc := range []struct {
		ka                    KeepAlive
		on                    int
		idle, interval, count int
	}{
		{KeepAlive{Enable: true, Idle: 7 * time.Second, Interval: 2500 * time.Millisecond, Count: 4}, 1, 7, 3, 4},
		{KeepAlive{Enable: true}, 1, 15, 15, 9},
		{KeepAlive{}, 0, 0, 0, 0},
	} {
		ln, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), false, 8)
		if err != nil {
			t.Fatal(err)
		}
		if err := SetKeepAlive(ln, tc.ka); err != nil {
			t.Fatal(err)
		}
		addr, _ := LocalAddr(ln)
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		fd := acceptWithin(t, ln, 10*time.Second)
		get := func(level, opt int) int {
			v, err := unix.GetsockoptInt(fd, level, opt)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if on := get(unix.SOL_SOCKET, unix.SO_KEEPALIVE); (on != 0) != (tc.on != 0) {
			t.Errorf("%+v: SO_KEEPALIVE %d on the accepted socket", tc.ka, on)
		}
		if tc.on != 0 && keepAliveTunable {
			if idle, intvl, cnt := get(unix.IPPROTO_TCP, tcpKeepIdle), get(unix.IPPROTO_TCP, tcpKeepIntvl), get(unix.IPPROTO_TCP, tcpKeepCnt); idle != tc.idle || intvl != tc.interval || cnt != tc.count {
				t.Errorf("%+v: idle %d interval %d count %d, want %d %d %d", tc.ka, idle, intvl, cnt, tc.idle, tc.interval, tc.count)
			}
		}
		c.Close()
		unix.Close(fd)
		unix.Close(ln)
	}
}

// acceptWithin accepts one connection on the non-blocking listener ln.
func acceptWithin(t *testing.T, ln int, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		fd, _, err := accept(ln)
		if err == nil {
			return fd
		}
		if err != unix.EAGAIN || time.Now().After(deadline) {
			t.Fatalf("accept: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
