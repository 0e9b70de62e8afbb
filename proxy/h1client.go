package proxy

// The h1 client: a backend connection and its use of the HTTP/1.1 codec
// (proxy/h1's request serialiser and response parser). It reads and writes
// the socket, drives the response parser over what it read, and reports
// each part of the response to its exchange; what a response means for
// the client is the exchange's business.

import (
	"errors"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/route"
	pptls "github.com/pollproxy/pollproxy/tls"
)

// backendBufSize is a backend connection's read buffer. A response body
// that the client is not taking stays in it (the backend is then not
// read), so it is also the most a stalled stream holds.
const backendBufSize = 32 << 10

// errConnectTimeout is the connect failure an exchange maps to 504 (the
// other failures are socket errors, mapped to 502).
var errConnectTimeout = errors.New("connect to upstream timed out")

// backendConn is one HTTP/1.1 connection to an upstream, registered with
// the loop once for its whole life, busy with at most one exchange.
type backendConn struct {
	pool     *pool
	desc     *netpoll.Desc
	phase    bcPhase // its lifecycle; changed only by the transitions in backendphase.go
	ex       *exchange
	timer    netpoll.Timer // connect timeout, then idle timeout: one per connection, by value (InitTimer)
	requests int
	parser   h1.ResponseParser
	client   netip.AddrPort // the client its PROXY header announced (PoolConfig.ProxyProtocol)

	out       []byte // request bytes; out[outOff:] not yet written
	outOff    int
	outBody   int    // body bytes in out, reported Consumed once written
	in        []byte // backendBufSize, allocated on first read
	inStart   int
	inEnd     int
	idleSince time.Time
	kaTimeout time.Duration // the origin's Keep-Alive: timeout=N on the last response

	// The flags below are not phases: each can be true or false in
	// more than one phase, independently of the others.

	// writeWait: the socket refused bytes, waiting for writable. The
	// write side blocks in the handshake, busy and in a tunnel alike.
	writeWait bool
	// flushQueued: out waits for the end of the loop's iteration (see
	// send): the loop holds the connection in its flush list once.
	flushQueued bool
	// parseOwed: the exchange stalled mid-parse and must be fed again;
	// the read side's business while busy, whether or not writes wait.
	parseOwed bool
	// eof: the origin's stream ended (its EOF, or for TLS its
	// close_notify or the socket's EOF after the last record). A busy
	// connection reads on to end the response; a tunnel's other
	// direction goes on.
	eof bool
	// hup: the kernel reported the origin's close (FIN) while busy. The
	// reads that follow may stop at the end of the response without
	// reaching EOF, and an edge-triggered poller raises no new edge for a
	// close it already reported: the connection must not go idle.
	hup bool
	// shut is the tunnel's write side: the client's half-close passed on
	// to the origin once what it sent is written (tunnel.go).
	shut shutStep

	// sess is the TLS session of a connection to an HTTPS upstream (nil
	// for plain HTTP), chosen once, here in newBackendConn: out holds
	// plaintext, which the session encrypts as the socket takes it
	// (upstreamtls.go). Only the wire's methods (backendwire.go) ask
	// which it is.
	sess *pptls.Session
	raw  []byte // TLS: bytes sent in clear before the ClientHello (a PROXY header)
	// sockEOF (TLS): the socket reached EOF; records the session holds
	// are still read before eof is reported. Set in the handshake or
	// later, apart from eof.
	sockEOF bool

	// fcgi is the state of a connection to a FastCGI application (nil
	// for HTTP), chosen once in newBackendConn: its requests are records
	// and its responses are cut out of records (fcgiconn.go).
	fcgi *fcgiState
}

// newBackendConn registers a connecting socket fd with p's loop; the
// connect completes (or fails) on its first event, or times out after
// the handler's ConnectTimeout. With the PROXY protocol its header
// announces client.
func newBackendConn(p *pool, fd int, client netip.AddrPort) (*backendConn, error) {
	bc := &backendConn{pool: p, phase: bcConnecting}
	d, err := p.loop.Register(fd, bc, netpoll.Write)
	if err != nil {
		return nil, err
	}
	bc.desc = d
	if p.tls != nil {
		bc.sess = pptls.NewClientSession(p.tls, nil, nil)
	}
	if p.h.cfg.FastCGI != nil {
		bc.fcgi = &fcgiState{}
	}
	if v := p.cfg.ProxyProtocol; v != 0 {
		bc.announce(v, client)
	}
	p.loop.InitTimer(&bc.timer, bc.timedOut) // the method value is made once, here
	bc.timer.Reset(p.h.cfg.ConnectTimeout)
	return bc, nil
}

// serves reports whether the connection may carry a request from client:
// any, unless its PROXY header announced another.
func (bc *backendConn) serves(client netip.AddrPort) bool {
	return bc.pool.cfg.ProxyProtocol == 0 || bc.client == client
}

// request readies the response parser for a request with this method
// (one that asked to upgrade may be answered 101).
func (bc *backendConn) request(method string, upgrade bool) {
	bc.parser.Reset(method)
	if bc.fcgi != nil {
		bc.fcgi.reset()
	}
	if upgrade {
		bc.parser.ExpectUpgrade()
	}
}

// HandleEvent runs the connection's state machine on the loop.
func (bc *backendConn) HandleEvent(ev netpoll.Event) {
	switch bc.phase {
	case bcConnecting:
		err := netpoll.SocketError(bc.desc.FD())
		if err == nil && ev&(netpoll.EventErr|netpoll.EventHup) != 0 {
			err = unix.ECONNRESET
		}
		bc.timer.Stop()
		if err != nil {
			ex := bc.ex
			bc.close()
			ex.connectFailed(err)
			return
		}
		bc.connectDone()
	case bcHandshaking:
		bc.handshakeEvent(ev)
	case bcIdle:
		bc.idleEvent()
	case bcBusy, bcTunnel:
		if ev&netpoll.EventHup != 0 {
			bc.hup = true
		}
		if ev&netpoll.EventWrite != 0 {
			bc.flush()
		}
		if bc.live() && ev&(netpoll.EventRead|netpoll.EventHup|netpoll.EventErr) != 0 {
			bc.readResponse()
		}
	}
}

// sendBatch is the most request bytes send holds for the end of the
// iteration: a client read's worth.
const sendBatch = 64 << 10

// idleOutCap is the most request-buffer capacity an idle connection keeps
// for its next request head.
const idleOutCap = 4 << 10

// send queues request bytes; body bytes count towards the client's window
// until they are written. A head, or a body's last chunk, goes out at once
// (with whatever waits before it): the origin can start on it. Body bytes
// wait for the end of the loop's iteration (Flush), or until sendBatch
// bytes wait, so that what one read from the client brought is one write
// to the origin: a 64 KiB read carries four TLS records of body, each
// handed over on its own, and an h2 upload's DATA frames straddle records,
// which makes eight pieces: written as they came, each would be a system
// call (docs/performance.md counts them, under backendConn.send). The
// bound keeps the batches, and the credit the client gets back as they
// are written, to a read's size when one iteration reads a client's
// socket many times over.
func (bc *backendConn) send(p []byte, body int) {
	bc.reserve(len(p))
	bc.out = append(bc.out, p...)
	bc.queued(body)
}

// sendFilled queues a request head whose upstream placeholders (header_up)
// are filled for the upstream at addr on the way into the output.
func (bc *backendConn) sendFilled(head []byte, addr, defaultPort string) {
	bc.out = route.FillUpstream(bc.out, head, addr, defaultPort)
	bc.queued(0)
}

// reserve makes room in out for n more bytes. What waits for a slow
// origin's socket can reach the client's whole window (32 MiB grown), and
// append grows a buffer that large by a quarter at a time, copying all of
// it, the bytes already written included: an upload then allocates many
// times what it ever holds (docs/performance.md has one upload's figures,
// under backendConn.reserve). Here the written bytes are dropped first,
// in place when what waits is small next to the buffer, and a buffer that
// must grow doubles, so an upload copies and allocates about its peak
// once more.
func (bc *backendConn) reserve(n int) {
	if len(bc.out)+n <= cap(bc.out) {
		return
	}
	waiting := len(bc.out) - bc.outOff
	if waiting+n <= cap(bc.out)/2 {
		copy(bc.out, bc.out[bc.outOff:])
		bc.out, bc.outOff = bc.out[:waiting], 0
		return
	}
	out := make([]byte, waiting, max(2*cap(bc.out), waiting+n, 512))
	copy(out, bc.out[bc.outOff:])
	bc.out, bc.outOff = out, 0
}

// sendChunk queues body bytes p as one chunk of a chunked body, framed in
// the output itself: copied once, as send copies them, where framing them
// first in a scratch buffer copied an h2 upload with no content-length
// twice.
func (bc *backendConn) sendChunk(p []byte) {
	bc.reserve(len(p) + chunkFraming)
	bc.out = h1.AppendChunk(bc.out, p)
	bc.queued(len(p))
}

// chunkFraming is the most a chunk's framing adds to its bytes: a size
// line of up to 16 hex digits and two CRLFs.
const chunkFraming = 16 + 4

// queued decides on writing out what send or sendChunk appended, of which
// body bytes of body.
func (bc *backendConn) queued(body int) {
	bc.outBody += body
	if !bc.live() || bc.writeWait {
		return
	}
	if body == 0 || len(bc.out)-bc.outOff >= sendBatch {
		bc.flush()
		return
	}
	bc.flushLater()
}

// Flush writes what send queued in this iteration (netpoll.Flusher).
func (bc *backendConn) Flush() {
	bc.flushQueued = false
	if bc.live() && !bc.writeWait && bc.outWaiting() {
		bc.flush()
	}
}

// flushLater queues a Flush at the end of the iteration.
func (bc *backendConn) flushLater() {
	if !bc.flushQueued {
		bc.flushQueued = true
		bc.pool.loop.FlushLater(bc)
	}
}

func (bc *backendConn) flush() {
	if !bc.write() {
		return
	}
	bc.out, bc.outOff = bc.out[:0], 0
	if bc.writeWait {
		bc.writeWait = false
		if bc.live() {
			bc.timer.Stop() // the write_timeout, if one was armed
		}
		bc.setInterest()
	}
	if bc.outBody > 0 && bc.ex != nil {
		n := bc.outBody
		bc.outBody = 0
		bc.ex.bodyWritten(n)
	}
	if bc.phase == bcTunnel {
		bc.tunnelDrained()
	}
}

// writeStopped handles a write that failed with err, after writing some
// bytes when wrote.
func (bc *backendConn) writeStopped(err error, wrote bool) {
	if err == unix.EAGAIN {
		// write_timeout: how long a write may stay blocked, counted
		// from the last progress. A tunnel has its own idle timer.
		if wt := bc.pool.h.cfg.WriteTimeout; wt > 0 && bc.phase != bcTunnel && (wrote || !bc.writeWait) {
			bc.timer.Reset(wt)
		}
		bc.writeWait = true
		bc.setInterest()
		return
	}
	bc.broken(err)
}

func (bc *backendConn) setInterest() {
	want := netpoll.Read
	if bc.writeWait {
		want |= netpoll.Write
	}
	if bc.ex != nil && bc.ex.stalled() || bc.phase == bcTunnel && bc.eof {
		want &^= netpoll.Read
	}
	bc.desc.SetInterest(want)
}

// readResponse reads what the origin sent and parses it, which stops
// while the exchange's client cannot take more.
func (bc *backendConn) readResponse() {
	if bc.phase == bcTunnel {
		bc.readTunnel()
		return
	}
	if bc.in == nil {
		bc.in = bc.pool.h.getBuf()
	}
	for bc.phase == bcBusy && bc.ex != nil {
		// A stalled exchange resumes parsing even with no bytes left: its
		// last body bytes may have been the stalled ones, and the parser
		// reports the end of the response only when fed again.
		if bc.inStart < bc.inEnd || bc.parseOwed {
			bc.parseOwed = false
			if !bc.parse() {
				return // stalled or finished
			}
			if bc.phase == bcTunnel {
				bc.readTunnel() // the rest is the tunnel's
				return
			}
			continue
		}
		if f := bc.fcgi; f != nil && f.dec.Ended {
			if !f.inBody { // the response ended inside its CGI head
				if !bc.fcgiHead(0) {
					return
				}
				continue
			}
			bc.fcgiEnded()
			return
		}
		if bc.eof {
			bc.originEOF()
			return
		}
		bc.inStart, bc.inEnd = 0, 0
		in := bc.in
		if bc.fcgi != nil {
			in = bc.in[:bc.fcgiReadSize()]
		}
		n, err := bc.read(in)
		switch {
		case n > 0:
			bc.inEnd = n
			if bc.fcgi != nil && !bc.fcgiDecode(n) {
				return
			}
			bc.ex.gotBytes()
		case n == 0 && err == nil:
			bc.eof = true
		case err == unix.EAGAIN:
			bc.ex.originQuiet()
			return
		case err == unix.EINTR:
		default:
			bc.broken(err)
			return
		}
	}
}

// parse runs the response parser over the buffered bytes and hands each
// part of the response to the exchange. It returns true when it needs
// more input, false when the exchange stalled (its client's window is
// full), ended or failed.
func (bc *backendConn) parse() bool {
	ex, p := bc.ex, &bc.parser
	for {
		n, ev, err := p.Feed(bc.in[bc.inStart:bc.inEnd])
		bc.inStart += n
		if err != nil {
			ex.badResponse()
			return false
		}
		switch ev {
		case h1.EventNone:
			return true
		case h1.EventInfo:
			ex.informational(p)
		case h1.EventHead:
			ex.responseHead(p)
			if bc.ex != ex {
				return false // ended
			}
		case h1.EventBody:
			if !ex.responseBody(p.Body()) {
				if bc.ex == ex { // stalled: fed again once the client takes more
					bc.parseOwed = true
					bc.setInterest()
				}
				return false
			}
		case h1.EventDone:
			if bc.fcgi != nil {
				if !bc.fcgiParsed() {
					return true // on to FCGI_END_REQUEST
				}
				bc.fcgiEnded()
				return false
			}
			ex.responseDone(p.KeepAlive(), p.Trailers())
			return false
		}
	}
}

// originEOF: the origin closed the connection. That ends a response
// whose length is the connection's; any other is broken.
func (bc *backendConn) originEOF() {
	ev, err := bc.parser.EOF()
	if ev == h1.EventDone {
		bc.ex.responseDone(false, nil)
		return
	}
	bc.broken(err)
}

// resume continues a stalled response once the client took more.
func (bc *backendConn) resume() {
	bc.setInterest()
	bc.desc.Kick(netpoll.EventRead)
}

// broken ends the exchange on a socket error.
func (bc *backendConn) broken(err error) {
	ex := bc.ex
	bc.close()
	if ex != nil {
		ex.backendFailed(err)
	}
}

// done finishes the exchange's use of a connection whose response said it
// may be reused: back to the pool, unless what is left on it says
// otherwise (bytes nobody asked for, request bytes unwritten, the
// origin's close).
func (bc *backendConn) done() {
	bc.requests++
	bc.kaTimeout = bc.parser.KeepAliveTimeout()
	if bc.inStart < bc.inEnd || bc.outOff < len(bc.out) || bc.eof || bc.hup || !bc.quiet() {
		bc.close()
		return
	}
	bc.ex = nil
	bc.inStart, bc.inEnd = 0, 0
	bc.pool.release(bc)
}

// timedOut is the connection's one timer: the connect took too long, a
// request write stayed blocked too long (write_timeout), or the
// connection stayed idle too long. The timer is stopped whenever the
// connection turns busy.
func (bc *backendConn) timedOut() {
	switch bc.phase {
	case bcConnecting:
		ex := bc.ex
		bc.close()
		if ex != nil {
			ex.connectFailed(errConnectTimeout)
		}
	case bcIdle:
		bc.close()
	case bcBusy:
		// A request write stayed blocked for write_timeout: the origin
		// stopped reading. The timer is never armed for a tunnel.
		if ex := bc.ex; ex != nil {
			bc.abort()
			ex.writeTimedOut()
		}
	}
}

// abort closes the connection with a reset: the request bytes the origin
// stopped taking are discarded, not left for the kernel to keep sending
// after the close.
func (bc *backendConn) abort() {
	if bc.phase != bcClosed {
		bc.desc.ResetOnClose()
	}
	bc.close()
}
