package tls

import (
	"bytes"
	stdtls "crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/eventually"
	"github.com/pollproxy/pollproxy/offload"
)

var versions = []struct {
	name string
	v    uint16
}{{"TLS1.2", stdtls.VersionTLS12}, {"TLS1.3", stdtls.VersionTLS13}}

// dialRaw connects a socket to ln, closed when the test ends, with a 10 s
// deadline.
func dialRaw(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	return raw
}

// dial connects a real crypto/tls client to ln.
func dial(t *testing.T, ln net.Listener, cfg *stdtls.Config) *stdtls.Conn {
	t.Helper()
	c := stdtls.Client(dialRaw(t, ln), cfg)
	if err := c.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	return c
}

func TestHandshakeVersionsALPN(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		for _, proto := range []string{"h2", "http/1.1"} {
			for _, oneByte := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/oneByte=%v", ver.name, proto, oneByte)
				t.Run(name, func(t *testing.T) {
					ln := listen(t)
					res := accept(t, ln, pool, serverConfig(t), loopOpts{feedOneByte: oneByte, writeOneByte: oneByte})
					c := dial(t, ln, clientConfig(t, ver.v, proto))
					cs := c.ConnectionState()
					if cs.NegotiatedProtocol != proto || cs.Version != ver.v {
						t.Fatalf("client sees ALPN %q version %x", cs.NegotiatedProtocol, cs.Version)
					}
					msg := []byte("hello, pollproxy")
					if _, err := c.Write(msg); err != nil {
						t.Fatal(err)
					}
					got := make([]byte, len(msg))
					if _, err := io.ReadFull(c, got); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, msg) {
						t.Fatalf("echo %q, want %q", got, msg)
					}
					// Our close_notify: the server reads io.EOF and
					// answers with its own, which we read as io.EOF.
					if err := c.CloseWrite(); err != nil {
						t.Fatal(err)
					}
					if n, err := c.Read(got); err != io.EOF {
						t.Fatalf("client Read after close_notify = %d, %v; want io.EOF", n, err)
					}
					r := wait(t, res)
					if r.hsErr != nil || r.err != nil || !r.eof {
						t.Fatalf("server: %+v", r)
					}
					if r.state.NegotiatedProtocol != proto || r.state.Version != ver.v || r.state.ServerName != "localhost" {
						t.Fatalf("server sees ALPN %q version %x SNI %q", r.state.NegotiatedProtocol, r.state.Version, r.state.ServerName)
					}
					if r.read != int64(len(msg)) {
						t.Fatalf("server read %d bytes, want %d", r.read, len(msg))
					}
				})
			}
		}
	}
}

// TestDataWithFinished checks that application data the client sends right
// behind its Finished, before the server loop hears of the handshake's end,
// is read: crypto/tls may already hold it in its own buffer.
func TestDataWithFinished(t *testing.T) {
	pool := newPool(t, 1, 1, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			ln := listen(t)
			res := accept(t, ln, pool, serverConfig(t), loopOpts{})
			c := stdtls.Client(dialRaw(t, ln), clientConfig(t, ver.v, "h2"))
			// Write runs the handshake and sends data at once.
			if _, err := c.Write([]byte("early")); err != nil {
				t.Fatal(err)
			}
			c.CloseWrite()
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "early" {
				t.Fatalf("echo %q, %v", got, err)
			}
			if r := wait(t, res); !r.eof || r.err != nil {
				t.Fatalf("server: %+v", r)
			}
		})
	}
}

func TestLargeTransfer(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		for _, tc := range []struct {
			size    int
			oneByte bool
			lend    bool
		}{{1 << 20, false, false}, {64 << 10, true, false}, {4 << 20, false, true}, {64 << 10, true, true}} {
			t.Run(fmt.Sprintf("%s/%d/oneByte=%v/lend=%v", ver.name, tc.size, tc.oneByte, tc.lend), func(t *testing.T) {
				ln := listen(t)
				res := accept(t, ln, pool, serverConfig(t), loopOpts{feedOneByte: tc.oneByte, lend: tc.lend})
				c := dial(t, ln, clientConfig(t, ver.v, "h2"))
				payload := make([]byte, tc.size)
				for i := range payload {
					payload[i] = byte(i*7 + i>>8)
				}
				werr := make(chan error, 1)
				go func() {
					// One big Write: crypto/tls splits it into
					// records of every size up to the maximum.
					_, err := c.Write(payload)
					if err == nil {
						err = c.CloseWrite()
					}
					werr <- err
				}()
				got, err := io.ReadAll(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := <-werr; err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, payload) {
					t.Fatalf("echo differs: got %d bytes, want %d", len(got), len(payload))
				}
				if r := wait(t, res); !r.eof || r.err != nil || r.read != int64(tc.size) {
					t.Fatalf("server: %+v", r)
				}
			})
		}
	}
}

func TestServerCloseNotify(t *testing.T) {
	pool := newPool(t, 1, 1, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			ln := listen(t)
			writeErr := make(chan error, 1)
			res := accept(t, ln, pool, serverConfig(t), loopOpts{onData: func(s *Session, p []byte) {
				s.Write([]byte("bye"))
				if err := s.CloseNotify(); err != nil {
					t.Errorf("CloseNotify: %v", err)
				}
				_, err := s.Write([]byte("more"))
				writeErr <- err
			}})
			c := dial(t, ln, clientConfig(t, ver.v, "http/1.1"))
			c.Write([]byte("x"))
			got, err := io.ReadAll(c) // ends at the server's close_notify
			if err != nil || string(got) != "bye" {
				t.Fatalf("client read %q, %v; want \"bye\", nil (EOF)", got, err)
			}
			if err := <-writeErr; err == nil {
				t.Fatal("Write after CloseNotify succeeded")
			}
			// Reads still work after our close_notify: the client's
			// close_notify ends the loop with io.EOF.
			c.CloseWrite()
			if r := wait(t, res); !r.eof || r.err != nil {
				t.Fatalf("server: %+v", r)
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	pool := newPool(t, 1, 1, 150*time.Millisecond)
	ln := listen(t)
	start := time.Now()
	res := accept(t, ln, pool, serverConfig(t), loopOpts{})
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	r := wait(t, res)
	if !errors.Is(r.hsErr, ErrHandshakeTimeout) {
		t.Fatalf("handshake error %v, want ErrHandshakeTimeout", r.hsErr)
	}
	var ne net.Error
	if !errors.As(r.hsErr, &ne) || !ne.Timeout() {
		t.Fatalf("%v is not a net.Error timeout", r.hsErr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %v", d)
	}

	// A client that stalls half way through its ClientHello times out too.
	res = accept(t, ln, pool, serverConfig(t), loopOpts{})
	raw2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw2.Close()
	raw2.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x80, 0x01})
	if r := wait(t, res); !errors.Is(r.hsErr, ErrHandshakeTimeout) {
		t.Fatalf("handshake error %v, want ErrHandshakeTimeout", r.hsErr)
	}
}

func TestGarbageHandshake(t *testing.T) {
	pool := newPool(t, 1, 1, 5*time.Second)
	cases := map[string][]byte{
		"http":       []byte("GET / HTTP/1.1\r\nHost: pollproxy.test\r\n\r\n"),
		"bad-hello":  append([]byte{0x16, 0x03, 0x01, 0x00, 0x08}, "garbage!"...),
		"sslv2":      {0x80, 0x2e, 0x01, 0x00, 0x02, 0x00, 0x15, 0x00, 0x00},
		"random-big": randomBytes(4096),
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			ln := listen(t)
			res := accept(t, ln, pool, serverConfig(t), loopOpts{})
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			raw.Write(input)
			r := wait(t, res)
			if r.hsErr == nil {
				t.Fatalf("garbage handshake succeeded: %+v", r)
			}
			if errors.Is(r.hsErr, ErrHandshakeTimeout) {
				t.Fatalf("garbage handshake hung until the timeout")
			}
			t.Logf("handshake error: %v", r.hsErr)
		})
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0x16 // look like a handshake record first
	return b
}

// TestPairOneByte drives a client and a server Session in memory, moving
// ciphertext one byte per Feed both ways, during and after the handshake,
// with a Read after every byte.
func TestPairOneByte(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			p := newPair(t, pool, clientConfig(t, ver.v, "h2"), serverConfig(t), true)
			if err := p.handshake(); err != nil {
				t.Fatal(err)
			}
			if p.s.ALPN() != "h2" || p.s.Version() != ver.v || p.s.ServerName() != "localhost" {
				t.Fatalf("server ALPN %q version %x SNI %q", p.s.ALPN(), p.s.Version(), p.s.ServerName())
			}
			var want bytes.Buffer
			for i := range 50 {
				msg := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*37)
				want.Write(msg)
				if _, err := p.c.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := p.s.Write(msg); err != nil {
					t.Fatal(err)
				}
				if err := p.pump(); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(p.gotS.Bytes(), want.Bytes()) || !bytes.Equal(p.gotC.Bytes(), want.Bytes()) {
				t.Fatalf("data differs: server got %d, client got %d, want %d", p.gotS.Len(), p.gotC.Len(), want.Len())
			}
			// close_notify both ways.
			if err := p.c.CloseNotify(); err != nil {
				t.Fatal(err)
			}
			if err := p.pump(); err != io.EOF {
				t.Fatalf("server read after client close_notify: %v, want io.EOF", err)
			}
			if _, err := p.s.Read(p.buf); err != io.EOF {
				t.Fatalf("second Read: %v, want io.EOF again", err)
			}
		})
	}
}

// TestSessionResumption checks that session tickets work: TLS 1.3 tickets
// arrive after the handshake and are read by the client on its loop.
func TestSessionResumption(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	scfg := serverConfig(t)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			ccfg := clientConfig(t, ver.v, "h2")
			ccfg.ClientSessionCache = stdtls.NewLRUClientSessionCache(4)
			for i := range 2 {
				p := newPair(t, pool, ccfg, scfg, i == 0)
				if err := p.handshake(); err != nil {
					t.Fatal(err)
				}
				// The client's Read handles the NewSessionTicket.
				p.s.Write([]byte("ping"))
				if err := p.pump(); err != nil {
					t.Fatal(err)
				}
				if got := p.gotC.String(); got != "ping" {
					t.Fatalf("client got %q", got)
				}
				if resumed := p.s.ConnectionState().DidResume; resumed != (i == 1) {
					t.Fatalf("connection %d: DidResume = %v", i, resumed)
				}
			}
		})
	}
}

// TestGarbageAfterHandshake feeds a corrupted record to an established
// session: Read fails (it does not hang or return ErrWouldBlock) and an
// alert is queued.
func TestGarbageAfterHandshake(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		t.Run(ver.name, func(t *testing.T) {
			p := newPair(t, pool, clientConfig(t, ver.v, "h2"), serverConfig(t), false)
			if err := p.handshake(); err != nil {
				t.Fatal(err)
			}
			p.c.Write([]byte("a perfectly good record"))
			rec := append([]byte(nil), p.c.Output()...)
			p.c.Consume(len(rec))
			rec[len(rec)-3] ^= 0x55
			p.s.Feed(rec)
			n, err := p.s.Read(p.buf)
			if n != 0 || err == nil || errors.Is(err, ErrWouldBlock) {
				t.Fatalf("Read of a corrupted record = %d, %v", n, err)
			}
			if p.s.Buffered() == 0 {
				t.Fatal("no alert queued")
			}
			t.Logf("Read error: %v", err)
			if _, err2 := p.s.Read(p.buf); err2 == nil || errors.Is(err2, ErrWouldBlock) {
				t.Fatalf("second Read: %v", err2)
			}
		})
	}
}

func TestPoolFull(t *testing.T) {
	pool := newPool(t, 1, 1, 5*time.Second)
	cfg := serverConfig(t)
	notified := make(chan *Session, 3)
	start := func() (*Session, error) {
		s := NewServerSession(cfg, nil, nil)
		return s, pool.Start(s, func() {
			if done, _ := s.HandshakeDone(); done {
				notified <- s
			}
		})
	}
	s1, err := start()
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the worker to take s1, leaving the queue empty.
	eventually.Holds(t, 5*time.Second, "the worker taking the first session", func() bool { return pool.work.Queued() == 0 })
	s2, err := start()
	if err != nil {
		t.Fatalf("queued Start: %v", err)
	}
	s3, err := start()
	if !errors.Is(err, offload.ErrFull) {
		t.Fatalf("third Start = %v, want offload.ErrFull", err)
	}
	s3.Close()

	// Closing the queued session first, then the running one: both
	// finish with net.ErrClosed, the queued one without a handshake.
	s2.Close()
	s1.Close()
	for range 2 {
		select {
		case s := <-notified:
			if done, err := s.HandshakeDone(); !done || !errors.Is(err, net.ErrClosed) {
				t.Fatalf("closed session: done %v err %v", done, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("closed sessions were not notified")
		}
	}
	if err := pool.Start(s1, nil); err == nil {
		t.Fatal("restarting a finished session succeeded")
	}
}

// TestCloseUnblocksWorker checks that Close frees a worker stuck in a
// handshake with a silent client, and that nothing leaks.
func TestCloseUnblocksWorker(t *testing.T) {
	before := runtime.NumGoroutine()
	pool := NewHandshakePool(1, 1, time.Minute)
	cfg := serverConfig(t)

	stuck := NewServerSession(cfg, nil, nil)
	done := make(chan struct{})
	if err := pool.Start(stuck, func() {
		if d, _ := stuck.HandshakeDone(); d {
			close(done)
		}
	}); err != nil {
		t.Fatal(err)
	}
	stuck.Feed([]byte{0x16, 0x03, 0x01}) // a third of a record header
	time.Sleep(20 * time.Millisecond)    // let the worker block in Read
	stuck.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock the worker")
	}
	if _, err := stuck.HandshakeDone(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("handshake error %v, want net.ErrClosed", err)
	}

	// The single worker is free again (the client runs on a pool of its own).
	cpool := NewHandshakePool(1, 1, time.Minute)
	p := newPairPools(t, pool, cpool, clientConfig(t, stdtls.VersionTLS13, "h2"), cfg, false)
	if err := p.handshake(); err != nil {
		t.Fatal(err)
	}
	cpool.Close()

	// Pool.Close interrupts a running handshake and refuses new ones.
	silent := NewServerSession(cfg, nil, nil)
	silentDone := make(chan struct{})
	if err := pool.Start(silent, func() {
		if d, _ := silent.HandshakeDone(); d {
			close(silentDone)
		}
	}); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	<-silentDone
	if _, err := silent.HandshakeDone(); !errors.Is(err, offload.ErrClosed) {
		t.Fatalf("handshake error %v, want offload.ErrClosed", err)
	}
	if err := pool.Start(NewServerSession(cfg, nil, nil), nil); !errors.Is(err, offload.ErrClosed) {
		t.Fatalf("Start after Close = %v", err)
	}

	var now int
	if !eventually.Within(5*time.Second, func() bool { now = runtime.NumGoroutine(); return now <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, now, buf[:runtime.Stack(buf, true)])
	}
}

func TestFeedLimitAndClose(t *testing.T) {
	s := NewServerSession(serverConfig(t), nil, nil)
	if err := s.Feed(make([]byte, MaxBufferedInput)); err != nil {
		t.Fatal(err)
	}
	if err := s.Feed([]byte{1}); !errors.Is(err, errInputLimit) {
		t.Fatalf("Feed over the limit = %v", err)
	}
	if n, err := s.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("Read before the handshake = %d, %v", n, err)
	}
	if n, err := s.Write([]byte("x")); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("Write before the handshake = %d, %v", n, err)
	}
	s.Close()
	s.Close()
	if err := s.Feed([]byte{1}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Feed after Close = %v", err)
	}
	if err := NewHandshakePool(1, 0, 0).Start(s, nil); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Start of a closed session = %v", err)
	}
}

func TestErrWouldBlockIsTemporary(t *testing.T) {
	var ne net.Error
	//lint:ignore SA1019 crypto/tls relies on Temporary (readRecordOrCCS)
	if !errors.As(ErrWouldBlock, &ne) || !ne.Timeout() || !ne.Temporary() {
		t.Fatal("ErrWouldBlock must be a temporary net.Error")
	}
	if !strings.Contains(ErrHandshakeTimeout.Error(), "timed out") {
		t.Fatal(ErrHandshakeTimeout)
	}
}

// TestPairRandomChunks moves ciphertext in random chunk sizes and reads
// plaintext into random buffer sizes (often smaller than a record), so
// records split anywhere and Read returns partial records' data; every byte
// must arrive, none may stay stuck inside crypto/tls once all ciphertext has
// been fed.
func TestPairRandomChunks(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed=%d", ver.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				p := newPair(t, pool, clientConfig(t, ver.v, "h2"), serverConfig(t), false)
				if err := p.handshake(); err != nil {
					t.Fatal(err)
				}
				var sent [2]bytes.Buffer
				var got [2]bytes.Buffer
				ends := [2]*Session{p.c, p.s}
				buf := make([]byte, 1<<15)
				drain := func(i int) {
					for {
						n, err := ends[i].Read(buf[:1+rng.IntN(20000)])
						got[i].Write(buf[:n])
						if n == 0 {
							if !errors.Is(err, ErrWouldBlock) {
								t.Fatalf("Read: %v", err)
							}
							return
						}
					}
				}
				for range 60 {
					i := rng.IntN(2) // sender
					msg := make([]byte, 1+rng.IntN(40000))
					for k := range msg {
						msg[k] = byte(rng.Uint32())
					}
					if _, err := ends[i].Write(msg); err != nil {
						t.Fatal(err)
					}
					sent[i].Write(msg)
					// Move a random part of the ciphertext now,
					// the rest later.
					out := ends[i].Output()
					k := rng.IntN(len(out) + 1)
					for k > 0 {
						c := min(k, 1+rng.IntN(5000))
						ends[1-i].Feed(out[:c])
						ends[i].Consume(c)
						out, k = ends[i].Output(), k-c
						drain(1 - i)
					}
				}
				for i := range 2 {
					for out := ends[i].Output(); len(out) > 0; out = ends[i].Output() {
						c := min(len(out), 1+rng.IntN(5000))
						ends[1-i].Feed(out[:c])
						ends[i].Consume(c)
						drain(1 - i)
					}
					drain(1 - i)
				}
				if !bytes.Equal(got[1].Bytes(), sent[0].Bytes()) || !bytes.Equal(got[0].Bytes(), sent[1].Bytes()) {
					t.Fatalf("server got %d of %d bytes, client got %d of %d",
						got[1].Len(), sent[0].Len(), got[0].Len(), sent[1].Len())
				}
			})
		}
	}
}

// TestLendRandomChunks lends the server ciphertext in random chunks from one
// scratch buffer, reads a random number of records from each (none, as a
// front end that paused reading, up to all), calls Keep and scribbles over
// the scratch buffer: every byte must arrive intact and in order, so the
// session neither lost the bytes it did not read nor kept a reference to
// the lent ones.
func TestLendRandomChunks(t *testing.T) {
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, ver := range versions {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed=%d", ver.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				p := newPair(t, pool, clientConfig(t, ver.v, "h2"), serverConfig(t), false)
				if err := p.handshake(); err != nil {
					t.Fatal(err)
				}
				var sent, got bytes.Buffer
				scratch := make([]byte, 64<<10)
				buf := make([]byte, 32<<10)
				// read reads at most max records' worth of plaintext;
				// it reports whether the session wanted more input.
				read := func(max int) bool {
					for range max {
						n, err := p.s.Read(buf)
						got.Write(buf[:n])
						if n == 0 {
							if !errors.Is(err, ErrWouldBlock) {
								t.Fatalf("Read: %v", err)
							}
							return true
						}
					}
					return false
				}
				for range 40 {
					msg := make([]byte, 1+rng.IntN(100000))
					for k := range msg {
						msg[k] = byte(rng.Uint32())
					}
					if _, err := p.c.Write(msg); err != nil {
						t.Fatal(err)
					}
					sent.Write(msg)
					for out := p.c.Output(); len(out) > 0; out = p.c.Output() {
						c := copy(scratch[:1+rng.IntN(len(scratch))], out)
						p.c.Consume(c)
						if err := p.s.Lend(scratch[:c]); err != nil {
							t.Fatal(err)
						}
						if rng.IntN(4) == 0 {
							read(rng.IntN(3)) // paused, or slow
						} else {
							read(1000)
						}
						p.s.Keep()
						for k := range scratch[:c] {
							scratch[k] = 0xa5
						}
					}
				}
				if err := p.s.Lend(nil); err != nil {
					t.Fatal(err)
				}
				for !read(1000) {
				}
				p.s.Keep()
				if !bytes.Equal(got.Bytes(), sent.Bytes()) {
					t.Fatalf("server got %d bytes of %d, or other bytes", got.Len(), sent.Len())
				}
				if p.s.in.len() != 0 {
					t.Fatalf("input left: %d bytes", p.s.in.len())
				}
			})
		}
	}
}

// TestLendLimitAndClose: Lend is refused before the handshake, over the
// input limit (counting what Keep left in the session) and after Close,
// where Keep only forgets the bytes.
func TestLendLimitAndClose(t *testing.T) {
	s := NewServerSession(serverConfig(t), nil, nil)
	if err := s.Lend([]byte{1}); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("Lend before the handshake = %v", err)
	}
	pool := newPool(t, 2, 4, 5*time.Second)
	p := newPair(t, pool, clientConfig(t, stdtls.VersionTLS13, "h2"), serverConfig(t), false)
	if err := p.handshake(); err != nil {
		t.Fatal(err)
	}
	// A paused front end: nothing is read, Keep holds it all.
	junk := make([]byte, MaxBufferedInput-10)
	if err := p.s.Lend(junk); err != nil {
		t.Fatal(err)
	}
	p.s.Keep()
	if err := p.s.Lend(make([]byte, 11)); !errors.Is(err, errInputLimit) {
		t.Fatalf("Lend over the limit = %v", err)
	}
	p.s.Keep()
	if p.s.in.len() != len(junk) {
		t.Fatalf("kept %d bytes, want %d", p.s.in.len(), len(junk))
	}
	if err := p.s.Lend(make([]byte, 10)); err != nil {
		t.Fatalf("Lend up to the limit = %v", err)
	}
	p.s.Close()
	p.s.Keep()
	if p.s.in.len() != 0 || p.s.lent != nil {
		t.Fatalf("after Close: %d bytes kept, lent %v", p.s.in.len(), p.s.lent != nil)
	}
	if err := p.s.Lend([]byte{1}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Lend after Close = %v", err)
	}
}
