package tls

import (
	stdtls "crypto/tls"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"
)

// slowWriter is a client's socket whose every write waits first: a client
// on a long path, as the server sees it (its answers come late).
type slowWriter struct {
	net.Conn
	delay time.Duration
}

func (w slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	return w.Conn.Write(p)
}

// TestHandshakeRTT checks the round trip a handshake measures: at least
// the time a client takes to answer the server's flight, and, for a client
// that answers at once, less than that, in both TLS versions.
func TestHandshakeRTT(t *testing.T) {
	const late = 80 * time.Millisecond
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			measure := func(delay time.Duration) time.Duration {
				ln := listen(t)
				res := accept(t, ln, pool, serverConfig(t), loopOpts{})
				c := stdtls.Client(slowWriter{dialRaw(t, ln), delay}, clientConfig(t, ver.v, "h2"))
				if err := c.Handshake(); err != nil {
					t.Fatalf("client handshake: %v", err)
				}
				// An echo: the server loop is past the handshake.
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
					t.Fatal(err)
				}
				c.Close()
				r := wait(t, res)
				if r.hsErr != nil {
					t.Fatalf("server handshake: %v", r.hsErr)
				}
				return r.rtt
			}
			slow, quick := measure(late), measure(0)
			if slow < late {
				t.Errorf("a client answering after %v: HandshakeRTT %v", late, slow)
			}
			if quick <= 0 || quick >= slow {
				t.Errorf("a client answering at once: HandshakeRTT %v (the late one's %v)", quick, slow)
			}
		})
	}
}

// TestSessionSize: a Session stays in the 320-byte allocation class, which
// every connection pays for while it is idle (scripts/idle).
func TestSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 320 {
		t.Fatalf("Session is %d bytes, past the 320-byte allocation class", n)
	}
}
