package app

import (
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stuckOrigin accepts connections and reads nothing until told to, so a
// request body fills the socket buffers and pollproxy's write blocks. The
// channel yields each accepted connection.
func stuckOrigin(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String(), conns
}

// endless is a request body that never runs out before the test stops
// reading it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if len(p) > e.n {
		p = p[:e.n]
	}
	clear(p)
	e.n -= len(p)
	return len(p), nil
}

// TestTransportWriteTimeout: transport http { write_timeout } bounds a
// write of the request to an origin that stopped reading: the client gets
// a 504 and the origin's connection is closed.
func TestTransportWriteTimeout(t *testing.T) {
	origin, conns := stuckOrigin(t)
	site := fmt.Sprintf(`	reverse_proxy %s {
		transport http {
			write_timeout 300ms
		}
	}`, origin)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				req, _ := http.NewRequest("POST", fmt.Sprintf("https://localhost:%d/upload", port), &endless{n: 256 << 20})
				req.ContentLength = 256 << 20
				start := time.Now()
				resp, err := c.Do(req)
				var conn net.Conn
				select {
				case conn = <-conns:
				case <-time.After(5 * time.Second):
					t.Fatal("the origin got no connection")
				}
				defer conn.Close()
				if err != nil {
					t.Fatalf("POST: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 504 || !strings.Contains(string(body), "writing the request") {
					t.Errorf("POST: %d %q after %v, want 504 for the blocked write", resp.StatusCode, body, time.Since(start))
				}
				// The origin's connection was reset: what it had not taken
				// is dropped, and reading ends well before the whole body.
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := io.Copy(io.Discard, conn)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("origin connection still open after %d bytes", n)
				}
				if n >= 256<<20 {
					t.Errorf("origin got the whole body (%d bytes)", n)
				}
			})
		}
	})
}

// bigOrigin answers every request with size bytes.
func bigOrigin(t *testing.T, size int) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.Copy(w, &endless{n: size})
	}))
}

// TestServersWriteTimeout: servers { timeouts { write } } closes a client
// connection whose socket took no byte for that long: a client that asks
// for a large response and stops reading finds the connection reset long
// before the response could have been read whole.
func TestServersWriteTimeout(t *testing.T) {
	const size = 256 << 20
	origin := bigOrigin(t, size)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		// Each backend has its own instance, and most of the time is the
		// client's real-time pause below.
		t.Parallel()
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tservers {\n\t\ttimeouts {\n\t\t\twrite 300ms\n\t\t}\n\t}\n}\n\nlocalhost:%d {\n\ttls %s %s\n\treverse_proxy %s\n}\n",
			backend, filepath.Join(dir, "storage"), port, certFile, keyFile, origin)), 0o644)
		start(t, file, Options{})
		for _, proto := range []string{"http/1.1", "h2"} {
			t.Run(proto, func(t *testing.T) {
				raw, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					t.Fatal(err)
				}
				raw.(*net.TCPConn).SetReadBuffer(4 << 10)
				c := stdtls.Client(raw, &stdtls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{proto}})
				defer c.Close()
				if err := c.Handshake(); err != nil {
					t.Fatal(err)
				}
				if proto == "h2" {
					// A preface, settings with a large window, and a GET.
					fr := http2.NewFramer(c, c)
					c.Write([]byte(http2.ClientPreface))
					fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
					fr.WriteWindowUpdate(0, 1<<31-1-65535)
					var hb bytes.Buffer
					enc := hpack.NewEncoder(&hb)
					for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/big"}} {
						enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
					}
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
				} else {
					fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
				}
				// Not reading: the proxy's writes block, and after the write
				// timeout it resets the connection. Real time: the timer
				// starts when the kernel's buffers have filled, which
				// nothing reports, so a test clock could not be moved
				// after it; five times the timeout covers that.
				time.Sleep(1500 * time.Millisecond)
				c.SetReadDeadline(time.Now().Add(20 * time.Second))
				n, err := io.Copy(io.Discard, c)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("connection still open after %d bytes", n)
				}
				if n >= size {
					t.Errorf("read the whole response (%d bytes): nothing timed out", n)
				}
			})
		}
	})
}
