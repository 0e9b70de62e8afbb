package tls

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// wire is the in-memory transport crypto/tls runs over: a Session seen as a
// net.Conn carrying ciphertext.
type wire Session

// Read gives crypto/tls buffered ciphertext. During the handshake (worker
// goroutine) it waits for Feed, Close or the handshake deadline; in the loop
// phase it returns ErrWouldBlock when nothing is buffered.
func (w *wire) Read(p []byte) (int, error) {
	s := (*Session)(w)
	if s.loop.Load() {
		switch {
		case s.in.len() > 0:
			return w.deliver(p), nil
		case len(s.lent) > 0:
			// Straight from the loop's buffer (Lend): in is empty,
			// so these bytes come next in the stream.
			in := s.lent[:min(len(p), len(s.lent))]
			n := s.rec.advance(in)
			copy(p, in[:n])
			s.lent = s.lent[n:]
			return n, nil
		}
		return 0, ErrWouldBlock
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.in.len() == 0 {
		if s.closed {
			return 0, net.ErrClosed
		}
		if s.peerEOF {
			return 0, io.EOF
		}
		if s.interrupted || (s.ctx != nil && s.ctx.Err() != nil) {
			if s.ctx != nil && errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
				return 0, ErrHandshakeTimeout
			}
			return 0, net.ErrClosed
		}
		s.cond.Wait()
	}
	return w.deliver(p), nil
}

// deliver copies buffered ciphertext into p, never past the end of the
// current TLS record, so crypto/tls never holds bytes of a record it has not
// started to read. (It would read ahead as far as p allows.)
func (w *wire) deliver(p []byte) int {
	s := (*Session)(w)
	in := s.in.bytes()
	if len(in) > len(p) {
		in = in[:len(p)]
	}
	n := s.rec.advance(in)
	copy(p, in[:n])
	s.in.consume(n)
	return n
}

// Write appends ciphertext to the output buffer. During the handshake it
// also calls notify so the loop flushes it.
func (w *wire) Write(p []byte) (int, error) {
	s := (*Session)(w)
	if s.loop.Load() {
		if s.closed {
			return 0, net.ErrClosed
		}
		s.out.write(p)
		return len(p), nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, net.ErrClosed
	}
	s.out.write(p)
	s.flightAt = monotonic()
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify()
	}
	return len(p), nil
}

// Close is called by crypto/tls when the handshake context is done: it wakes
// a waiting Read. It does nothing once the loop owns the session.
func (w *wire) Close() error {
	s := (*Session)(w)
	s.mu.Lock()
	if !s.loop.Load() {
		s.interrupted = true
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	return nil
}

func (w *wire) LocalAddr() net.Addr {
	if w.local == nil {
		return memAddr{}
	}
	return w.local
}

func (w *wire) RemoteAddr() net.Addr {
	if w.remote == nil {
		return memAddr{}
	}
	return w.remote
}

// Deadlines are the session's business (the handshake deadline) and the
// loop's; crypto/tls only sets them around close_notify.
func (w *wire) SetDeadline(time.Time) error      { return nil }
func (w *wire) SetReadDeadline(time.Time) error  { return nil }
func (w *wire) SetWriteDeadline(time.Time) error { return nil }

// memAddr stands in for an unknown socket address.
type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "memory" }

// recordHeaderLen is the length of a TLS record header.
const recordHeaderLen = 5

// framer follows TLS record boundaries in a stream of ciphertext.
// Its fields are small so that a Session stays in the allocator's 320-byte
// size class.
type framer struct {
	hdr  [recordHeaderLen]byte
	hdrN uint8  // header bytes seen of the current record
	left uint16 // body bytes still to come once the header is complete
}

// advance consumes a prefix of p that ends no later than the current
// record's end and returns its length (0 only if p is empty).
func (f *framer) advance(p []byte) int {
	n := 0
	for n < len(p) {
		if f.hdrN < recordHeaderLen {
			k := copy(f.hdr[f.hdrN:], p[n:])
			f.hdrN += uint8(k)
			n += k
			if f.hdrN < recordHeaderLen {
				return n
			}
			f.left = uint16(f.hdr[3])<<8 | uint16(f.hdr[4])
		}
		k := min(int(f.left), len(p)-n)
		f.left -= uint16(k)
		n += k
		if f.left == 0 {
			f.hdrN = 0 // record complete: stop at its end
			return n
		}
	}
	return n
}
