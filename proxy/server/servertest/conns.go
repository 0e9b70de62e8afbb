package servertest

import (
	"net"
	"testing"
)

// ServeConns listens on a loopback port and runs serve on every accepted
// connection in its own goroutine, closing the connection when serve
// returns: a raw origin for tests that write HTTP/1.1 by hand, or
// misbehave on purpose. The listener closes with the test. It returns the
// listener's address.
func ServeConns(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
