package tls

import (
	stdtls "crypto/tls"
	"errors"
	"testing"
	"time"
)

// BenchmarkSessionRoundTrip measures the loop-side cost of one 1 KiB
// request and one 1 KiB response through a server Session, with a client
// Session at the other end: both sides' Write, Feed, Output/Consume and Read
// are counted.
func BenchmarkSessionRoundTrip(b *testing.B) {
	pool := newPool(b, 2, 4, 5*time.Second)
	for _, ver := range versions {
		b.Run(ver.name, func(b *testing.B) {
			p := newPair(b, pool, clientConfig(b, ver.v, "h2"), serverConfig(b), false)
			if err := p.handshake(); err != nil {
				b.Fatal(err)
			}
			msg := make([]byte, 1024)
			buf := make([]byte, 16<<10)
			move := func(from, to *Session) {
				out := from.Output()
				if err := to.Feed(out); err != nil {
					b.Fatal(err)
				}
				from.Consume(len(out))
			}
			read := func(s *Session) int {
				total := 0
				for {
					n, err := s.Read(buf[total:])
					total += n
					if n == 0 {
						if !errors.Is(err, ErrWouldBlock) {
							b.Fatal(err)
						}
						return total
					}
				}
			}
			b.SetBytes(2 * int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				p.c.Write(msg)
				move(p.c, p.s)
				n := read(p.s)
				p.s.Write(buf[:n])
				move(p.s, p.c)
				if read(p.c) != len(msg) {
					b.Fatal("short echo")
				}
			}
		})
	}
}

// BenchmarkHandshake measures a full handshake through the pool, client and
// server CPU together, ECDSA P-256 certificate.
func BenchmarkHandshake(b *testing.B) {
	pool := newPool(b, 2, 4, 5*time.Second)
	for _, ver := range versions {
		b.Run(ver.name, func(b *testing.B) {
			ccfg, scfg := clientConfig(b, ver.v, "h2"), serverConfig(b)
			b.ReportAllocs()
			for b.Loop() {
				p := newPair(b, pool, ccfg, scfg, false)
				if err := p.handshake(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBufferMixedFills is a session's output buffer under h2 with
// many requests in flight: each batch of answers is big (here 64 KiB) or
// small (4 KiB), mixed. A buffer that is dropped at the first small fill
// grows again at the next big one.
func BenchmarkBufferMixedFills(b *testing.B) {
	var q buffer
	big, small := make([]byte, 64<<10), make([]byte, 4<<10)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range [][]byte{big, small, small, big, small} {
			q.write(p)
			q.consume(len(p))
		}
	}
}

// BenchmarkSessionUpload measures the server side of an upload: ciphertext
// of full-size records arrives in 64 KiB socket reads and is decrypted
// into a 32 KiB buffer, as the server loop does. "feed" copies each read
// into the session (Feed); "lend" decrypts straight from the read buffer
// (Lend, Keep). The client's encryption is done once, outside the timing.
func BenchmarkSessionUpload(b *testing.B) {
	pool := newPool(b, 2, 4, 5*time.Second)
	// Ciphertext with a running record sequence cannot be replayed, so
	// the benchmark encrypts a long stream once and decrypts as much of
	// it as b.N asks, in rounds.
	const chunk = 64 << 10
	msg := make([]byte, 4<<20)
	plain := make([]byte, 32<<10)
	var p *pair
	read := func() int {
		total := 0
		for {
			n, err := p.s.Read(plain)
			total += n
			if n == 0 {
				if !errors.Is(err, ErrWouldBlock) {
					b.Fatal(err)
				}
				return total
			}
		}
	}
	for _, mode := range []string{"feed", "lend"} {
		b.Run(mode, func(b *testing.B) {
			p = newPair(b, pool, clientConfig(b, stdtls.VersionTLS13, "h2"), serverConfig(b), false)
			if err := p.handshake(); err != nil {
				b.Fatal(err)
			}
			rb := make([]byte, chunk)
			var wire []byte
			b.SetBytes(chunk)
			b.ReportAllocs()
			for b.Loop() {
				if len(wire) == 0 {
					b.StopTimer()
					if _, err := p.c.Write(msg); err != nil {
						b.Fatal(err)
					}
					wire = append(wire[:0], p.c.Output()...)
					p.c.Consume(len(wire))
					b.StartTimer()
				}
				n := copy(rb, wire) // stands in for the socket read
				wire = wire[n:]
				if mode == "feed" {
					if err := p.s.Feed(rb[:n]); err != nil {
						b.Fatal(err)
					}
					read()
				} else {
					if err := p.s.Lend(rb[:n]); err != nil {
						b.Fatal(err)
					}
					read()
					p.s.Keep()
				}
			}
		})
	}
}
