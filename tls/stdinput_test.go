package tls

import (
	"bytes"
	stdtls "crypto/tls"
	"net"
	"runtime"
	"testing"
	"time"
	"weak"
)

// TestStdInputLayout fails when crypto/tls.Conn no longer has the input
// buffers releaseInput lets go of (a Go upgrade renamed or retyped them):
// the release is then off, and idle connections cost 3.5 KiB more.
func TestStdInputLayout(t *testing.T) {
	if !stdInput.ok {
		t.Fatalf("crypto/tls.Conn's rawInput, input and hand not found as bytes.Buffer, bytes.Reader, bytes.Buffer: %+v", stdInput)
	}
}

// inputCap is the capacity crypto/tls's input buffers of s hold.
func inputCap(s *Session) int {
	raw, _, hand := stdInputBuffers(s.conn)
	return raw.Cap() + hand.Cap()
}

// TestReleaseIdleInput checks that a session lets go of crypto/tls's input
// buffers once its handshake is over and again when the idle sweep asks,
// never while a record is half fed, and that both directions keep working
// afterwards, on both TLS versions.
func TestReleaseIdleInput(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			p := newPair(t, pool, clientConfig(t, ver.v, "h2"), serverConfig(t), false)
			if err := p.handshake(); err != nil {
				t.Fatal(err)
			}
			if n := inputCap(p.s); n != 0 {
				t.Fatalf("server holds %d bytes of crypto/tls input after the handshake, want 0", n)
			}

			msg := bytes.Repeat([]byte("request "), 400)
			if _, err := p.c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if err := p.pump(); err != nil {
				t.Fatal(err)
			}
			grown := inputCap(p.s)
			if grown < len(msg) {
				t.Fatalf("server's crypto/tls input holds %d bytes after a %d-byte record", grown, len(msg))
			}
			if n := p.s.ReleaseIdle(); n < grown {
				t.Fatalf("ReleaseIdle let go of %d bytes, want at least crypto/tls's %d", n, grown)
			}
			if n := inputCap(p.s); n != 0 {
				t.Fatalf("server holds %d bytes of crypto/tls input after ReleaseIdle, want 0", n)
			}

			// Half a record fed: the release must keep it.
			if _, err := p.c.Write(msg); err != nil {
				t.Fatal(err)
			}
			out := p.c.Output()
			half := len(out) / 2
			if err := p.s.Feed(out[:half]); err != nil {
				t.Fatal(err)
			}
			if err := p.read(p.s); err != nil {
				t.Fatal(err)
			}
			p.s.ReleaseIdle()
			if err := p.s.Feed(out[half:]); err != nil {
				t.Fatal(err)
			}
			p.c.Consume(len(out))
			if err := p.read(p.s); err != nil {
				t.Fatal(err)
			}

			// And back: the client releases too, then reads the answer
			// (over TLS 1.3 behind the session tickets it had not read).
			p.c.ReleaseIdle()
			if _, err := p.s.Write(msg); err != nil {
				t.Fatal(err)
			}
			if err := p.pump(); err != nil {
				t.Fatal(err)
			}
			want := append(bytes.Clone(msg), msg...)
			if !bytes.Equal(p.gotS.Bytes(), want) || !bytes.Equal(p.gotC.Bytes(), msg) {
				t.Fatalf("data differs: server got %d bytes, client %d; want %d and %d", p.gotS.Len(), p.gotC.Len(), len(want), len(msg))
			}
		})
	}
}

// TestHandshakeDropsAddresses: the socket addresses a server session is
// given serve the certificate callbacks, which see them, and are let go
// of when the handshake is over (each is an allocation an idle
// connection would keep).
func TestHandshakeDropsAddresses(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	scfg := serverConfig(t).Clone()
	var seen string
	scfg.GetConfigForClient = func(h *stdtls.ClientHelloInfo) (*stdtls.Config, error) {
		seen = h.Conn.RemoteAddr().String()
		return nil, nil
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 50000}
	gone := []weak.Pointer[net.TCPAddr]{weak.Make(local), weak.Make(remote)}
	p := &pair{t: t, c: newClientSession(clientConfig(t, stdtls.VersionTLS13, "h2")),
		s: NewServerSession(scfg, local, remote), wake: make(chan struct{}, 1), buf: make([]byte, 16<<10)}
	local, remote = nil, nil
	notify := func() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	if err := pool.Start(p.s, notify); err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(p.c, notify); err != nil {
		t.Fatal(err)
	}
	if err := p.handshake(); err != nil {
		t.Fatal(err)
	}
	if seen != "127.0.0.2:50000" {
		t.Fatalf("the certificate callback saw remote address %q, want 127.0.0.2:50000", seen)
	}
	runtime.GC()
	for i, w := range gone {
		if w.Value() != nil {
			t.Errorf("address %d still held after the handshake", i)
		}
	}
	runtime.KeepAlive(p.s)
}
