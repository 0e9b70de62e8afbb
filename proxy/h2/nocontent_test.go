package h2

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestNoContentLengthOn204: a 204's head goes out without the
// content-length a handler gave it (respond 204 says 0), as RFC 9110
// §8.6 requires of 1xx and 204 responses and as HTTP/1.1 already does.
func TestNoContentLengthOn204(t *testing.T) {
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		status := 204
		if req.Path == "/200" {
			status = 200
		}
		w.WriteHeader(status, []stream.Field{{Name: "content-length", Value: "0"}, {Name: "x-a", Value: "1"}}, true)
		return nil
	})
	conn, _ := startServer(t, h, Config{Scheme: "http"}, true, 7)
	cl := h2Client(conn)
	for path, want := range map[string][]string{"/204": nil, "/200": {"0"}} {
		res, err := cl.Get("http://example.test" + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Values("Content-Length"); len(got) != len(want) || res.Header.Get("X-A") != "1" {
			t.Errorf("%s: %d content-length %q (x-a %q), want %q", path, res.StatusCode, got, res.Header.Get("X-A"), want)
		}
	}
}
