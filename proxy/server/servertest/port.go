package servertest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago, for a configuration that must name its port before the
// process under test binds it.
//
// It picks below the kernel's ephemeral range where it can: a port from
// that range, free when asked, can be taken by any outgoing connection
// before the process under test binds it (the test packages run side by
// side and dial thousands of connections), which failed a run with
// "address already in use". Below the range only another FreePort could
// take it, and the pick is random.
func FreePort(t testing.TB) int {
	t.Helper()
	if low := ephemeralLow(); low > 10000 {
		for range 50 {
			port := 10000 + rand.IntN(low-10000)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				ln.Close()
				return port
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// ephemeralLow is the first port of the kernel's ephemeral range on
// Linux, 0 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
