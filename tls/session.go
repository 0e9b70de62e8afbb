package tls

import (
	"context"
	stdtls "crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/offload"
)

// MaxBufferedInput bounds the ciphertext fed to a Session but not yet
// consumed by crypto/tls. It leaves room for a client certificate chain
// during the handshake (crypto/tls accepts certificate messages up to 256
// KiB).
const MaxBufferedInput = 288 << 10

// wouldBlock is the error of a non-blocking read with nothing to read.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tls: operation would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// handshakeTimeout is the error of a handshake that ran past its deadline.
type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "tls: handshake timed out" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return false }

var (
	// ErrWouldBlock is returned by Session.Read when no complete record
	// is buffered, and by Session.Read and Session.Write while the
	// handshake is still running. It implements net.Error with Timeout and
	// Temporary both true; it is also what the in-memory transport returns
	// to crypto/tls, which keeps partial records across it.
	ErrWouldBlock error = wouldBlock{}

	// ErrHandshakeTimeout is the handshake error of a session whose
	// handshake did not finish within the pool's timeout, counted from
	// HandshakePool.Start. It implements net.Error with Timeout true.
	ErrHandshakeTimeout error = handshakeTimeout{}

	// errInputLimit is returned by Session.Feed when accepting the bytes
	// would buffer more than MaxBufferedInput bytes of ciphertext.
	errInputLimit = errors.New("tls: too much buffered input")
)

// Session is one TLS connection driven by an event loop. Create it with
// NewServerSession, start its handshake with HandshakePool.Start, and drive
// it from the loop with Feed, Output/Consume, HandshakeDone, Read and Write.
//
// After every call that may produce ciphertext — Read (even one that returns
// ErrWouldBlock: a KeyUpdate is answered, an alert may be sent), Write,
// CloseNotify, and each notify during the handshake — the loop should
// flush Output to the socket.
type Session struct {
	conn *stdtls.Conn

	// loop is set once, by the handshake worker, when it hands the
	// session to the loop. See the package documentation.
	loop atomic.Bool

	// mu and cond guard the fields below during the handshake phase
	// only. In the loop phase the loop goroutine owns them.
	mu   sync.Mutex
	cond sync.Cond

	in  buffer // ciphertext from the socket, not yet read by crypto/tls
	out buffer // ciphertext for the socket
	// lent (loop phase) is ciphertext the loop lent with Lend, read by
	// crypto/tls after in and straight from the loop's buffer; Keep
	// copies what is left of it into in.
	lent []byte
	rec  framer // record framing of the bytes given to crypto/tls

	// starved (loop phase) is set when crypto/tls is known to hold
	// nothing it could return without more ciphertext from in: Read
	// then answers ErrWouldBlock without entering crypto/tls while in is
	// empty. See Read.
	starved bool

	closed      bool  // Close was called
	interrupted bool  // crypto/tls closed the transport (context done)
	started     bool  // handed to a pool
	peerEOF     bool  // the peer ended its stream during the handshake (FeedEOF)
	hsErr       error // handshake result, valid in the loop phase

	notify func()
	// The times are monotonic offsets from clockBase, 8 bytes where a
	// time.Time takes 24, which keeps a Session in the 320-byte
	// allocation class every connection pays for. deadline ends the
	// handshake; flightAt is when the handshake last wrote to the
	// client with no answer since (0: none); rtt is the shortest wait
	// for an answer seen (see HandshakeRTT). Guarded by mu until the
	// hand-off.
	deadline, flightAt, rtt time.Duration
	ctx                     context.Context // handshake context while the worker runs
	cancel                  context.CancelFunc

	local, remote net.Addr
}

// clockBase is the origin of a Session's monotonic times.
var clockBase = time.Now()

// monotonic is the time now as an offset from clockBase, never 0.
func monotonic() time.Duration { return time.Since(clockBase) + 1 }

// NewServerSession returns a server-side session using cfg, which must not
// be modified afterwards. local and remote are the socket's addresses, as
// crypto/tls reports them to certificate callbacks
// (ClientHelloInfo.Conn.RemoteAddr) during the handshake; either may be
// nil. The session lets go of them when the handshake is over.
func NewServerSession(cfg *stdtls.Config, local, remote net.Addr) *Session {
	s := newSession(local, remote)
	s.conn = stdtls.Server((*wire)(s), cfg)
	return s
}

// NewClientSession returns a client-side session using cfg, which must not
// be modified afterwards: the same split as a server session, for
// connections to origins. cfg.ServerName names the server the certificate
// is verified for (and is the SNI name); a cfg.ClientSessionCache shared by
// the sessions to one origin lets new connections resume. local and remote
// are the socket's addresses; either may be nil.
func NewClientSession(cfg *stdtls.Config, local, remote net.Addr) *Session {
	s := newSession(local, remote)
	s.conn = stdtls.Client((*wire)(s), cfg)
	return s
}

func newSession(local, remote net.Addr) *Session {
	s := &Session{local: local, remote: remote}
	s.cond.L = &s.mu
	return s
}

// Feed hands over ciphertext read from the socket. The bytes are copied, so p
// may be reused as soon as Feed returns. It fails when more than
// MaxBufferedInput bytes would be buffered, with net.ErrClosed after Close,
// and with the handshake error once a handshake has failed; the loop should
// then close the connection.
func (s *Session) Feed(p []byte) error {
	if s.loop.Load() {
		if s.closed {
			return net.ErrClosed
		}
		if s.hsErr != nil {
			return s.hsErr
		}
		if s.in.len()+len(p) > MaxBufferedInput {
			return errInputLimit
		}
		s.in.write(p)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return net.ErrClosed
	}
	if s.in.len()+len(p) > MaxBufferedInput {
		return errInputLimit
	}
	if s.flightAt != 0 {
		if d := monotonic() - s.flightAt; d > 0 && (s.rtt == 0 || d < s.rtt) {
			s.rtt = d
		}
		s.flightAt = 0
	}
	s.in.write(p)
	s.cond.Signal()
	return nil
}

// FeedEOF reports that the peer ended its stream (the socket read EOF)
// during the handshake: crypto/tls reads what is buffered, then EOF, so
// the handshake fails with the peer's own reason when it sent an alert
// before closing (a client certificate refused, a protocol it lacks). It
// does nothing once the handshake is over; the loop handles EOF itself
// then.
func (s *Session) FeedEOF() {
	if s.loop.Load() {
		return
	}
	s.mu.Lock()
	s.peerEOF = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Lend hands over ciphertext read from the socket without copying it: p
// stays the loop's, and Read decrypts records straight from it, so the bytes
// of whole records are copied once (into crypto/tls) rather than twice. The
// loop must call Keep before it touches p again; Keep copies the bytes
// Read did not get to (a partial record, or all of them when the front end
// stopped reading) into the session's own buffer. Loop phase only, once
// HandshakeDone reports done; before that, and for bytes that are not
// read at once, use Feed. The errors are Feed's.
func (s *Session) Lend(p []byte) error {
	if !s.loop.Load() {
		return ErrWouldBlock
	}
	if s.lent != nil {
		panic("tls: Lend before Keep")
	}
	switch {
	case s.closed:
		return net.ErrClosed
	case s.hsErr != nil:
		return s.hsErr
	case s.in.len()+len(p) > MaxBufferedInput:
		return errInputLimit
	}
	s.lent = p
	return nil
}

// Keep ends a Lend: the lent bytes Read did not consume are copied into the
// session, and the loop may reuse its buffer. After Close it only forgets
// them. Loop goroutine only.
func (s *Session) Keep() {
	if len(s.lent) > 0 && !s.closed {
		s.in.write(s.lent)
	}
	s.lent = nil
}

// Output returns the ciphertext waiting for the socket. The slice stays
// valid, and must not be modified, until the next call of Consume, Read,
// Write, CloseNotify or Close. During the handshake the worker may add more
// bytes behind it at any time; call Output again to see them.
func (s *Session) Output() []byte {
	if s.loop.Load() {
		return s.out.bytes()
	}
	s.mu.Lock()
	b := s.out.bytes()
	s.mu.Unlock()
	return b
}

// Buffered reports how many bytes of ciphertext are waiting for the socket.
func (s *Session) Buffered() int {
	if s.loop.Load() {
		return s.out.len()
	}
	s.mu.Lock()
	n := s.out.len()
	s.mu.Unlock()
	return n
}

// Pending reports how many bytes of ciphertext from the peer the session
// holds that crypto/tls has not read yet (part of a record, or records
// behind the one being read). A client that expects nothing more from its
// peer, such as a kept-alive connection going idle, can tell from it that
// unsolicited bytes arrived. Loop goroutine only.
func (s *Session) Pending() int {
	if !s.loop.Load() {
		return 0
	}
	return s.in.len() + len(s.lent)
}

// Consume reports that the first n bytes of Output were written to the
// socket. It panics if n is negative or more than Buffered.
func (s *Session) Consume(n int) {
	if s.loop.Load() {
		s.out.consume(n)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.consume(n)
}

// HandshakeDone reports whether the handshake is over, and its error if it
// failed. Once it reports done, the session belongs to the loop goroutine.
// A failed handshake may leave an alert in Output worth flushing before the
// connection is closed.
func (s *Session) HandshakeDone() (done bool, err error) {
	if !s.loop.Load() {
		return false, nil
	}
	return true, s.hsErr
}

// HandshakeRTT reports the round trip the handshake measured: the
// shortest time from the server's last handshake write to the next bytes
// from the client (a full TLS 1.3 handshake has one such wait: the
// server's flight, then the client's Finished), or 0 when none was
// measured (a handshake that needed no answer after a write of ours, or
// one that failed). It is the whole path's round trip as the client's
// TCP peer sees it, which the kernel's own estimate is not when a relay
// or a load balancer sits in between, and it comes with every
// connection before its first request. It includes the client's time to
// check our certificate, so it can exceed the path's; it is shorter only
// for a client that sends before it is answered. Loop goroutine only,
// once HandshakeDone reports done.
func (s *Session) HandshakeRTT() time.Duration {
	if !s.loop.Load() {
		return 0
	}
	return s.rtt
}

// ConnectionState returns crypto/tls's view of the connection, as of the end
// of the handshake. It is the zero value before then or if the handshake
// failed. Loop goroutine only, once HandshakeDone reports done: it asks
// crypto/tls each time rather than keep a copy (192 bytes) in every
// session for the life of the connection.
func (s *Session) ConnectionState() stdtls.ConnectionState {
	if !s.loop.Load() || s.hsErr != nil {
		return stdtls.ConnectionState{}
	}
	return s.conn.ConnectionState()
}

// ALPN returns the negotiated application protocol ("h2", "http/1.1"), or ""
// when none was negotiated or the handshake is not over.
func (s *Session) ALPN() string { return s.ConnectionState().NegotiatedProtocol }

// ServerName returns the SNI name the client asked for, or "".
func (s *Session) ServerName() string { return s.ConnectionState().ServerName }

// Version returns the negotiated TLS version (stdtls.VersionTLS12,
// stdtls.VersionTLS13), or 0 before the handshake is over.
func (s *Session) Version() uint16 { return s.ConnectionState().Version }

// Read decrypts buffered ciphertext into p. It returns (n, nil) with n > 0
// when plaintext was available, (0, ErrWouldBlock) when no complete record
// is buffered or the handshake is still running, (0, io.EOF) once the peer's
// close_notify has been read, and another error when the connection failed
// (a handshake error, a bad record; crypto/tls may then have queued an
// alert in Output).
//
// Read never returns n > 0 with an error: an error found behind the data is
// reported by the next call. crypto/tls may hold several decrypted or
// still-encrypted records of its own after a Read, so a loop must call Read
// until it returns ErrWouldBlock, also right after the handshake completes
// (application data may have arrived along with the client's Finished).
func (s *Session) Read(p []byte) (int, error) {
	if !s.loop.Load() {
		return 0, ErrWouldBlock
	}
	if s.closed {
		return 0, net.ErrClosed
	}
	if s.hsErr != nil {
		return 0, s.hsErr
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.starved && s.in.len() == 0 && len(s.lent) == 0 {
		// Skips a crypto/tls call that could only fail with
		// ErrWouldBlock, and its allocation (see starved).
		return 0, ErrWouldBlock
	}
	n, err := s.conn.Read(p)
	if n > 0 {
		// crypto/tls returns plaintext from one record per call, so a
		// short read means that record is drained; the transport never
		// hands crypto/tls bytes past a record's end, so it then holds
		// no ciphertext either, and post-handshake messages are
		// handled before data is returned. Without new input it can
		// only report ErrWouldBlock.
		s.starved = n < len(p)
		// crypto/tls returns an error along with data only from its
		// look-ahead for a close_notify queued behind the data, which
		// needs ciphertext past the record and so does not happen
		// here; were it to, the error is sticky in crypto/tls and the
		// next Read reports it.
		return n, nil
	}
	s.starved = errors.Is(err, ErrWouldBlock)
	return 0, err
}

// Write encrypts p into Output. It never blocks: the loop flushes Output and
// applies its own backpressure on Buffered. Before the handshake is over it
// returns (0, ErrWouldBlock).
func (s *Session) Write(p []byte) (int, error) {
	if !s.loop.Load() {
		return 0, ErrWouldBlock
	}
	if s.closed {
		return 0, net.ErrClosed
	}
	if s.hsErr != nil {
		return 0, s.hsErr
	}
	return s.conn.Write(p)
}

// ReleaseIdle lets go of the session's empty ciphertext buffers, and of
// crypto/tls's own input buffers when they hold nothing (see releaseInput),
// so an idle connection does not pin the capacity its last exchange grew
// them to; the next Feed, Write or record allocates afresh. It does nothing
// before the handshake is over or while bytes are buffered, and returns the
// capacity it let go of. Loop goroutine only.
func (s *Session) ReleaseIdle() int {
	if !s.loop.Load() {
		return 0
	}
	n := 0
	if s.hsErr == nil && !s.closed && len(s.lent) == 0 {
		n += releaseInput(s.conn)
	}
	if s.in.len() == 0 {
		n += cap(s.in.b)
		s.in.release()
	}
	if s.out.len() == 0 {
		n += cap(s.out.b)
		s.out.release()
	}
	return n
}

// CloseNotify queues a close_notify alert in Output; afterwards Write fails
// while Read still works, so the peer's remaining data and its own
// close_notify can be read. It returns ErrWouldBlock before the handshake is
// over.
func (s *Session) CloseNotify() error {
	if !s.loop.Load() {
		return ErrWouldBlock
	}
	if s.closed {
		return net.ErrClosed
	}
	if s.hsErr != nil {
		return s.hsErr
	}
	return s.conn.CloseWrite()
}

// Close abandons the session and releases its buffers; it sends nothing (use
// CloseNotify and flush first for a clean close). A handshake in progress is
// interrupted: the worker's pending read returns at once and notify is still
// called, with HandshakeDone reporting net.ErrClosed. A session still waiting
// in the pool's queue is skipped. Close may be called more than once.
func (s *Session) Close() {
	if s.loop.Load() {
		s.closed = true
		s.in.release()
		s.out.release()
		s.lent = nil
		return
	}
	s.mu.Lock()
	s.closed = true
	s.in.release()
	s.out.release()
	cancel := s.cancel
	s.cond.Broadcast()
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// runHandshake runs the handshake on the calling (worker) goroutine, hands
// the session to the loop and calls notify. base is the pool's context.
func (s *Session) runHandshake(base context.Context) {
	ctx, cancel := context.WithDeadline(base, clockBase.Add(s.deadline))
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.ctx, s.cancel = ctx, cancel
	}
	s.mu.Unlock()

	var err error
	switch {
	case closed:
		err = net.ErrClosed
	case ctx.Err() != nil:
		err = ctx.Err()
	default:
		// crypto/tls closes the transport itself when ctx is done; waking
		// the worker here too does not depend on that detail.
		stop := context.AfterFunc(ctx, func() { (*wire)(s).Close() })
		err = s.conn.HandshakeContext(ctx)
		stop()
		if err == nil {
			// The ClientHello (or the server's flight) is still in
			// crypto/tls's input buffers, 3.5 KiB that no record
			// after the handshake needs.
			releaseInput(s.conn)
		}
	}
	// Why ctx ended, read before cancel ends it anyway: a handshake the
	// closed transport woke may report the closed connection rather than
	// the context's error.
	ended := ctx.Err()
	cancel()

	s.mu.Lock()
	switch {
	case err == nil:
	case s.closed:
		err = net.ErrClosed
	case errors.Is(err, context.DeadlineExceeded) || ended == context.DeadlineExceeded:
		err = ErrHandshakeTimeout
	case errors.Is(err, context.Canceled) || ended == context.Canceled:
		err = offload.ErrClosed
	}
	s.hsErr = err
	s.ctx, s.cancel = nil, nil
	// The addresses were for certificate callbacks (ClientHelloInfo.Conn);
	// the loop knows its own, and each is an allocation an idle
	// connection would keep.
	s.local, s.remote = nil, nil
	notify := s.notify
	s.notify = nil
	// The hand-off: after this store the worker touches nothing of s.
	s.loop.Store(true)
	s.mu.Unlock()
	notify()
}
