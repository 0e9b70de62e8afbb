package tls

import (
	"bytes"
	stdtls "crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// This file holds the test stand-ins for an event loop: a goroutine that owns
// a server Session over a real socket, and an in-memory pair of Sessions
// (client and server) shuttled by the test goroutine.

var (
	certOnce sync.Once
	certVal  stdtls.Certificate
	certErr  error
)

func testCert(t testing.TB) stdtls.Certificate {
	t.Helper()
	certOnce.Do(func() { certVal, certErr = SelfSigned([]string{"pollproxy.test"}) })
	if certErr != nil {
		t.Fatal(certErr)
	}
	return certVal
}

func serverConfig(t testing.TB) *stdtls.Config {
	return ServerConfig([]stdtls.Certificate{testCert(t)})
}

func clientConfig(t testing.TB, version uint16, alpn string) *stdtls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(testCert(t).Leaf)
	cfg := &stdtls.Config{
		RootCAs:    roots,
		ServerName: "localhost",
		MinVersion: version,
		MaxVersion: version,
	}
	if alpn != "" {
		cfg.NextProtos = []string{alpn}
	}
	return cfg
}

// newClientSession is a client-side Session, for driving both ends of a
// connection without sockets.
func newClientSession(cfg *stdtls.Config) *Session { return NewClientSession(cfg, nil, nil) }

// loopOpts configures serveLoop.
type loopOpts struct {
	feedOneByte  bool // Feed (and Read after) every byte separately
	writeOneByte bool // write Output to the socket one byte per syscall
	// lend hands socket bytes over with Lend and Keep once the handshake
	// is done, as the server loop does, instead of Feed.
	lend bool
	// onData is called with plaintext read by the loop; nil echoes it.
	onData func(s *Session, p []byte)
	// onEOF is called when the client's close_notify is read; nil
	// answers with our own close_notify.
	onEOF func(s *Session)
}

// loopResult is what serveLoop saw.
type loopResult struct {
	hsErr  error
	state  stdtls.ConnectionState
	rtt    time.Duration // HandshakeRTT once the handshake was done
	eof    bool          // read the client's close_notify
	err    error         // a read error other than EOF
	read   int64         // plaintext bytes read
	closed bool          // socket closed by the peer
}

// serveLoop plays an event loop for one accepted socket: a reader goroutine
// stands in for readiness events, notify stands in for the loop's task
// queue wake-up, and only the loop goroutine touches the Session.
func serveLoop(t testing.TB, sock net.Conn, pool *HandshakePool, cfg *stdtls.Config, o loopOpts) <-chan loopResult {
	if o.onData == nil {
		o.onData = func(s *Session, p []byte) {
			if _, err := s.Write(p); err != nil {
				t.Errorf("loop: Write: %v", err)
			}
		}
	}
	if o.onEOF == nil {
		o.onEOF = func(s *Session) {
			if err := s.CloseNotify(); err != nil {
				t.Errorf("loop: CloseNotify: %v", err)
			}
		}
	}
	out := make(chan loopResult, 1)
	go func() {
		var res loopResult
		defer func() { out <- res }()
		defer sock.Close()

		s := NewServerSession(cfg, sock.LocalAddr(), sock.RemoteAddr())
		defer s.Close()
		wake := make(chan struct{}, 1)
		notify := func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		if err := pool.Start(s, notify); err != nil {
			res.hsErr = err
			return
		}

		quit := make(chan struct{})
		defer close(quit)
		rx := make(chan []byte)
		// The socket is read into two buffers taken in turn, each back
		// from the loop (and scribbled over) once the loop is done with
		// it: a session that kept a reference to bytes it was lent reads
		// garbage.
		free := make(chan []byte, 2)
		free <- make([]byte, 64<<10)
		free <- make([]byte, 64<<10)
		giveBack := func(b []byte) {
			b = b[:cap(b)]
			for i := range b {
				b[i] = 0xa5
			}
			free <- b
		}
		go func() {
			defer close(rx)
			for {
				var buf []byte
				select {
				case buf = <-free:
				case <-quit:
					return
				}
				n, err := sock.Read(buf)
				if n > 0 {
					select {
					case rx <- buf[:n]:
					case <-quit:
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()

		flush := func() {
			for {
				b := s.Output()
				if len(b) == 0 {
					return
				}
				if o.writeOneByte {
					b = b[:1]
				}
				n, err := sock.Write(b)
				s.Consume(n)
				if err != nil {
					return
				}
			}
		}
		buf := make([]byte, 16<<10)
		handshook := false
		hsFed := 0 // ciphertext fed during the handshake
		// step does what the loop does after input or a notify; it
		// reports whether the connection is finished.
		step := func() bool {
			if !handshook {
				done, err := s.HandshakeDone()
				if !done {
					return false
				}
				handshook = true
				res.state = s.ConnectionState()
				res.rtt = s.HandshakeRTT()
				if err != nil {
					res.hsErr = err
					return true
				}
			}
			for {
				n, err := s.Read(buf)
				if n > 0 {
					res.read += int64(n)
					o.onData(s, buf[:n])
					continue
				}
				switch {
				case errors.Is(err, ErrWouldBlock):
					return false
				case err == io.EOF:
					res.eof = true
					o.onEOF(s)
					return true
				default:
					res.err = err
					return true
				}
			}
		}
		for {
			select {
			case b, ok := <-rx:
				if !ok {
					res.closed = true
					return
				}
				chunk := len(b)
				if o.feedOneByte {
					chunk = 1
				}
				whole := b
				for len(b) > 0 {
					// As the server does, stop taking input at
					// MaxBufferedInput until the handshake is
					// done: a client sends data right behind its
					// Finished, before the worker hands over.
					for !handshook && hsFed+chunk > MaxBufferedInput {
						<-wake
						fin := step()
						flush()
						if fin {
							return
						}
					}
					if !handshook {
						hsFed += chunk
					}
					var fin bool
					if o.lend && handshook {
						if err := s.Lend(b[:chunk]); err != nil {
							res.err = err
							return
						}
						fin = step()
						s.Keep()
					} else {
						if err := s.Feed(b[:chunk]); err != nil {
							res.err = err
							return
						}
						fin = step()
					}
					b = b[chunk:]
					flush()
					if fin {
						return
					}
				}
				giveBack(whole)
			case <-wake:
				fin := step()
				flush()
				if fin {
					return
				}
			}
		}
	}()
	return out
}

// listen returns a loopback listener closed with the test.
func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// accept serves the next connection on ln with serveLoop.
func accept(t testing.TB, ln net.Listener, pool *HandshakePool, cfg *stdtls.Config, o loopOpts) <-chan loopResult {
	out := make(chan loopResult, 1)
	go func() {
		sock, err := ln.Accept()
		if err != nil {
			out <- loopResult{err: err}
			return
		}
		out <- <-serveLoop(t, sock, pool, cfg, o)
	}()
	return out
}

func wait(t testing.TB, ch <-chan loopResult) loopResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("server loop did not finish")
		return loopResult{}
	}
}

func newPool(t testing.TB, workers, queue int, timeout time.Duration) *HandshakePool {
	p := NewHandshakePool(workers, queue, timeout)
	t.Cleanup(p.Close)
	return p
}

// pair is a client and a server Session joined in memory; the test goroutine
// is the loop of both.
type pair struct {
	t    testing.TB
	c, s *Session
	wake chan struct{}
	// oneByte moves ciphertext one byte per Feed.
	oneByte bool
	// got collects plaintext read on each side.
	gotC, gotS bytes.Buffer
	buf        []byte
}

func newPair(t testing.TB, pool *HandshakePool, ccfg, scfg *stdtls.Config, oneByte bool) *pair {
	return newPairPools(t, pool, pool, ccfg, scfg, oneByte)
}

// newPairPools runs the server handshake on spool and the client's on cpool.
func newPairPools(t testing.TB, spool, cpool *HandshakePool, ccfg, scfg *stdtls.Config, oneByte bool) *pair {
	p := &pair{t: t, c: newClientSession(ccfg), s: NewServerSession(scfg, nil, nil),
		wake: make(chan struct{}, 1), oneByte: oneByte, buf: make([]byte, 16<<10)}
	notify := func() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	if err := spool.Start(p.s, notify); err != nil {
		t.Fatal(err)
	}
	if err := cpool.Start(p.c, notify); err != nil {
		t.Fatal(err)
	}
	return p
}

// handshake drives both handshakes to completion.
func (p *pair) handshake() error {
	deadline := time.After(10 * time.Second)
	for {
		p.pump()
		cd, cerr := p.c.HandshakeDone()
		sd, serr := p.s.HandshakeDone()
		if cd && sd {
			p.pump()
			if cerr != nil {
				return cerr
			}
			return serr
		}
		if (cd && cerr != nil) || (sd && serr != nil) {
			p.pump()
			return errors.Join(cerr, serr)
		}
		select {
		case <-p.wake:
		case <-deadline:
			p.t.Fatal("handshake did not finish")
		}
	}
}

// pump moves ciphertext both ways until neither side has any to send,
// reading plaintext after every Feed on sides whose handshake is done.
func (p *pair) pump() error {
	for {
		moved := false
		for _, d := range [2][2]*Session{{p.c, p.s}, {p.s, p.c}} {
			from, to := d[0], d[1]
			for {
				b := from.Output()
				if len(b) == 0 {
					break
				}
				moved = true
				if p.oneByte {
					b = b[:1]
				}
				if err := to.Feed(b); err != nil {
					return err
				}
				from.Consume(len(b))
				if err := p.read(to); err != nil {
					return err
				}
			}
		}
		if !moved {
			return nil
		}
	}
}

// read drains plaintext from s into its buffer.
func (p *pair) read(s *Session) error {
	if done, _ := s.HandshakeDone(); !done {
		return nil
	}
	into := &p.gotS
	if s == p.c {
		into = &p.gotC
	}
	for {
		n, err := s.Read(p.buf)
		if n > 0 {
			into.Write(p.buf[:n])
			continue
		}
		if errors.Is(err, ErrWouldBlock) {
			return nil
		}
		return err
	}
}
