package servertest

import (
	"fmt"
	"net"
	"net/http"
	"testing"
)

// Origin serves h as a plain HTTP/1.1 application on a loopback port until
// the test ends, and returns its address: the app behind the proxy under
// test. Each edit adjusts the server before it serves (a ConnState hook,
// an ErrorLog, an idle timeout).
func Origin(t testing.TB, h http.Handler, edit ...func(*http.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	for _, e := range edit {
		e(srv)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// Says is a handler that answers every request with body: the simplest
// origin, which tells a test which one answered.
func Says(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })
}
