//go:build unix

package netpoll

import (
	"context"
	"net"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestZoneResolvedOnce: ResolveTCP turns an interface name in an IPv6 zone
// into the interface's index, which connecting uses without a lookup.
func TestZoneResolvedOnce(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		t.Skip("no interfaces:", err)
	}
	ifi := ifs[0]
	addrs, err := ResolveTCP(context.Background(), "[fe80::1%"+ifi.Name+"]:8080")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := addrs[0].Addr().Zone(), strconv.Itoa(ifi.Index); got != want {
		t.Fatalf("zone %q, want %q", got, want)
	}
	sa, _ := sockaddr(addrs[0])
	if id := sa.(*unix.SockaddrInet6).ZoneId; id != uint32(ifi.Index) {
		t.Fatalf("ZoneId %d, want %d", id, ifi.Index)
	}
	if _, err := ResolveTCP(context.Background(), "[fe80::1%no-such-if0]:8080"); err == nil {
		t.Fatal("an unknown zone resolved")
	}
}
