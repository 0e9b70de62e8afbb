package servertest

import (
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago, for a configuration that must name its port before the
// process under test binds it.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
