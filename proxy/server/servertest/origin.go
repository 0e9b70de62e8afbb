package servertest

import (
	"net"
	"net/http"
	"testing"
)

// Origin serves h as a plain HTTP/1.1 application on a loopback port until
// the test ends, and returns its address: the app behind the proxy under
// test.
func Origin(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
