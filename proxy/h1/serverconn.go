package h1

import (
	"cmp"
	"errors"
	"net/netip"
	"strconv"
	"time"
	"unsafe"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// ServerConfig tunes a ServerConn. The zero value of each field selects its
// default.
type ServerConfig struct {
	// Limits bounds request heads and chunk framing.
	Limits Limits
	// Scheme is reported as Request.Scheme (default "https": the transport
	// beneath a front end is normally a TLS session).
	Scheme string
	// TLS is reported as Request.TLS: the connection's TLS, nil for none.
	TLS *stream.TLSState
	// HeaderTimeout bounds the time from a connection's start, or the first
	// byte of a request, to the end of its head (default 10 s). A client
	// that is slower gets 408 and a closed connection (slowloris defence).
	HeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (default 60 s); an idle connection is closed silently.
	IdleTimeout time.Duration
	// BodyWindow is how many request body bytes may be handed to the
	// handler before it reports them Consumed (default 64 KiB): the h1
	// analogue of an h2 stream window. Reading stops beyond it.
	BodyWindow int
	// MaxBufferedInput bounds client bytes held while they cannot be
	// processed — pipelined requests behind a response in progress, body
	// bytes beyond the window (default 64 KiB). Reading pauses at this
	// level; well beyond it the connection is closed.
	MaxBufferedInput int
	// WriteHighWater is the transport backlog above which Write accepts
	// nothing more until OnWritable (default 256 KiB).
	WriteHighWater int
	// MaxRequestBody bounds request bodies (0: unlimited); larger ones get
	// 413.
	MaxRequestBody int64
	// MaxDiscard bounds how much of a request body that the handler no
	// longer wants (it completed the response first) is read and thrown
	// away to keep the connection alive (default 256 KiB); beyond it the
	// connection is closed instead.
	MaxDiscard int64
}

func (c ServerConfig) withDefaults() ServerConfig {
	c.Limits = c.Limits.withDefaults()
	c.Scheme = cmp.Or(c.Scheme, "https")
	c.HeaderTimeout = cmp.Or(max(c.HeaderTimeout, 0), 10*time.Second)
	c.IdleTimeout = cmp.Or(max(c.IdleTimeout, 0), 60*time.Second)
	c.BodyWindow = cmp.Or(max(c.BodyWindow, 0), 64<<10)
	c.MaxBufferedInput = cmp.Or(max(c.MaxBufferedInput, 0), 64<<10)
	c.WriteHighWater = cmp.Or(max(c.WriteHighWater, 0), 256<<10)
	c.MaxDiscard = cmp.Or(max(c.MaxDiscard, 0), 256<<10)
	return c
}

// Errors of the connection's own, besides the ResponseWriter's.
var (
	// ErrConnClosed: Feed after the connection was closed.
	ErrConnClosed = errors.New("h1: connection closed")
	// ErrInputOverflow: the transport kept feeding after PauseRead.
	ErrInputOverflow = errors.New("h1: client input beyond buffer limit")
)

// connection states
const (
	scIdle   uint8 = iota // waiting for (or reading) a request head
	scActive              // an exchange is in progress
	scClosed
)

// timer kinds
const (
	tkNone uint8 = iota
	tkHeader
	tkIdle
)

// ServerConn is pollproxy's HTTP/1.1 front end on one client connection: a
// stream.ServerConn that parses requests from what the transport feeds,
// calls the handler, and serialises its responses.
//
// Behaviour worth knowing:
//
//   - One request at a time. A pipelined request waits in a bounded buffer
//     until the previous response is complete and its body read; the
//     transport is paused when that buffer is full.
//   - The request body streams through Events.OnBody without copying, at
//     most ServerConfig.BodyWindow bytes ahead of Consumed; beyond that
//     the transport is paused.
//   - Expect: 100-continue is answered by pollproxy itself, as soon as
//     Serve returns without having written a final head — a handler that
//     rejects at once (401, 413) spares the client its upload; one that
//     accepts gets the body without a round trip to the origin. "expect"
//     is removed from Request.Header, so origins are not asked again.
//   - Upgrade: a GET without a body whose Connection lists "upgrade" and
//     whose Upgrade names one protocol (not h2c) reaches the handler with
//     Request.Upgrade set. A handler that answers 101 turns the
//     connection into a tunnel (stream's package doc): the front end
//     writes the 101 with its own Connection and Upgrade fields, then
//     carries raw bytes both ways, the client's end of stream as
//     OnBodyEnd (PeerEOF) and the handler's Close as a half-close. The
//     connection closes once both directions have ended. Any other
//     status is an ordinary response; the Upgrade field itself is
//     hop-by-hop and never in Request.Header.
//   - Request.Header keeps content-length (canonical, single) so a proxy
//     can forward it; hop-by-hop fields, Host and Expect are removed.
//   - Responses carry the handler's content-length when it gave one, are
//     chunked otherwise (close-delimited for HTTP/1.0), and have no body
//     for HEAD, 204 and 304. 1xx heads are written through, except to
//     HTTP/1.0 clients.
//   - The Request, its Header and the ResponseWriter are reused for the
//     connection's next request once the exchange is over (response
//     complete and body read): a handler must not keep them past Close,
//     Reset or OnAbort.
//   - The next request is never started from inside a handler's call into
//     the ResponseWriter (stream's re-entrancy rule). When such a call ends
//     an exchange, or reopens the body window, while input waits in the
//     connection's buffer, the connection asks the transport to resume
//     reading; the transport only re-arms, and the loop then calls Feed
//     (with no new bytes if none arrived), which takes the input up.
type ServerConn struct {
	t      stream.Transport
	conn   stream.Abandoner // t, when it can be abandoned after a panic: each Request.Conn
	h      stream.Handler
	cfg    ServerConfig
	p      RequestParser
	rw     responseWriter
	remote netip.AddrPort

	// in holds client bytes that wait to be processed: pipelined requests
	// behind the exchange in progress, body bytes beyond the window. While
	// run processes them they are taken out, so it is empty then.
	in       []byte
	wbuf     []byte // scratch for heads and small chunks
	state    uint8
	paused   bool // what the transport was last told (PauseRead)
	shutdown bool
	served   int

	timer     stream.Timer
	timerKind uint8
	onTimer   func()

	// the exchange in progress
	ev         stream.Events
	release    stream.Releaser // the finished exchange's, told at Flush
	inServe    bool
	reqDone    bool // request body fully read, or none
	deliver    bool // body events still go to the handler
	discarding bool
	discardMax int64
	unconsumed int
	bodyRead   int64
	expect     bool
	sent100    bool
	keepAlive  bool
	http10     bool
	isHead     bool
	resp       uint8
	framing    uint8
	remaining  int64
	wantWrite  bool
	upgrade    string // the protocol the request asked for, if any
	tunnel     bool   // a 101 went out: raw bytes both ways
	peerEOF    bool   // the client's byte stream ended (tunnel only)
}

var _ stream.ServerConn = (*ServerConn)(nil)

// NewServerConn starts the HTTP/1.1 front end on t. It arms the header
// timeout at once, so a client that connects and sends nothing is closed.
func NewServerConn(t stream.Transport, h stream.Handler, cfg ServerConfig) *ServerConn {
	c := &ServerConn{t: t, h: h, cfg: cfg.withDefaults(), remote: t.RemoteAddr()}
	c.conn, _ = t.(stream.Abandoner)
	c.p.Limits = c.cfg.Limits
	c.p.Reset()
	c.rw.c = c
	c.onTimer = c.timerFired
	c.armTimer()
	return c
}

// ReleaseIdle lets go of the buffers the last exchange grew (pending input,
// the head scratch, the parser's head buffer, its field spans and tokens)
// and of the last request (its head's string and field list), while the
// connection waits for its next request with nothing buffered; the next
// request allocates them afresh, and would have overwritten the request
// anyway. The transport calls it from the loop on a connection that has
// been quiet for a while. It returns the capacity it let go of.
func (c *ServerConn) ReleaseIdle() int {
	if c.state != scIdle || len(c.in) > 0 || c.p.hr.started || len(c.p.hr.buf) > 0 {
		return 0
	}
	n := cap(c.in) + cap(c.wbuf) + cap(c.p.hr.buf) +
		cap(c.p.hr.spans)*int(unsafe.Sizeof(span{})) + cap(c.p.req.Header)*int(unsafe.Sizeof(stream.Field{}))
	c.in, c.wbuf, c.p.hr.buf = nil, nil, nil
	c.p.hr.spans, c.p.tokens = nil, nil
	c.p.req = stream.Request{}
	return n
}

// Feed implements stream.ServerConn. The transport calls it from the loop
// only, never from inside a call the connection made, so it needs no
// guard against re-entry. An empty p takes up input held back in c.in
// (see wake).
func (c *ServerConn) Feed(p []byte) error {
	if c.state == scClosed {
		return ErrConnClosed
	}
	return c.run(p)
}

// Flush implements stream.ServerConn. The HTTP/1.1 front end has no output
// to produce at the end of an iteration: heads and body bytes are small
// enough to serialise as the handler writes them, and go to Transport.Write
// at once (the transport still writes the socket only once per
// iteration). It asks for Flush only to release a finished exchange's
// handler (settle).
func (c *ServerConn) Flush() { c.releaseDone() }

// OnDrained implements stream.ServerConn: the transport's backlog fell, so
// a handler that was refused bytes may write again. The connection calls
// it from the loop, so OnWritable is delivered directly; a handler that
// completes the response from there is handled like any other.
func (c *ServerConn) OnDrained() {
	if c.state != scActive || c.resp != rsBody || !c.wantWrite || c.ev == nil {
		return
	}
	c.wantWrite = false
	c.ev.OnWritable()
}

// Shutdown implements stream.ServerConn: an idle connection closes now, a
// busy one after its response, which carries "connection: close" when its
// head is still to be written.
func (c *ServerConn) Shutdown() {
	if c.state == scClosed {
		return
	}
	c.shutdown = true
	c.keepAlive = false
	if c.state == scIdle {
		c.closeNow()
	}
}

// Abort implements stream.ServerConn.
func (c *ServerConn) Abort(err error) {
	if c.state == scClosed {
		return
	}
	live := c.state == scActive && c.ev != nil && (c.resp != rsDone || c.deliver)
	c.state = scClosed
	c.stopTimer()
	if live {
		c.ev.OnAbort(err)
	}
}

// Serving returns the request in progress, or nil: what the log of a
// panic on this connection names. It only reads.
func (c *ServerConn) Serving() *stream.Request {
	if c.state != scActive {
		return nil
	}
	return c.p.Request()
}

// run processes p (after anything held in c.in) until no progress is
// possible, then keeps the remainder in c.in.
//
// The held bytes are taken out of c.in while step works on them: a
// ResponseWriter call that a handler makes from a callback of step's
// (Serve, OnBody, OnBodyEnd) then finds nothing held back and asks the
// transport for nothing (see wake), and step's own loop takes up whatever
// the call made possible. One pass of step is enough: it returns only when
// it cannot go on without more input or the handler.
func (c *ServerConn) run(p []byte) error {
	buf, data := c.in, p
	c.in = nil
	if len(buf) > 0 {
		buf = append(buf, p...)
		data = buf
	}
	rest, err := c.step(data)
	if err != nil || c.state == scClosed {
		return err
	}
	c.in = append(buf[:0], rest...) // memmove when rest aliases buf
	if len(c.in) == 0 && cap(c.in) > 2*c.cfg.MaxBufferedInput {
		c.in = nil
	}
	if len(c.in) > 4*c.cfg.MaxBufferedInput+c.cfg.Limits.MaxHeadSize {
		c.abortAll(ErrInputOverflow)
		return ErrInputOverflow
	}
	c.updatePause()
	c.armTimer()
	return nil
}

// step advances the connection over data and returns what it could not
// consume yet.
func (c *ServerConn) step(data []byte) ([]byte, error) {
	for {
		switch c.state {
		case scClosed:
			return nil, nil
		case scIdle:
			if c.shutdown {
				c.closeNow()
				return nil, nil
			}
			if len(data) == 0 {
				return data, nil
			}
			n, ev, err := c.p.Feed(data)
			data = data[n:]
			if err != nil {
				return nil, c.failRequest(err)
			}
			if ev != EventHead {
				return data, nil
			}
			if err := c.begin(); err != nil {
				return nil, err
			}
		case scActive:
			if c.tunnel {
				return c.stepTunnel(data), nil
			}
			if c.reqDone || len(data) == 0 && !c.bodyCanEnd() {
				return data, nil
			}
			room := len(data)
			if c.deliver {
				room = max(0, c.cfg.BodyWindow-c.unconsumed)
			}
			n, ev, err := c.p.feed(data, room)
			data = data[n:]
			if err != nil {
				return nil, c.failBody(err)
			}
			switch ev {
			case EventBody:
				b := c.p.Body()
				c.bodyRead += int64(len(b))
				if c.cfg.MaxRequestBody > 0 && c.bodyRead > c.cfg.MaxRequestBody {
					return nil, c.failBody(&Error{413, "request body too large"})
				}
				if c.deliver {
					c.unconsumed += len(b)
					c.ev.OnBody(b)
				} else if c.discardMax -= int64(len(b)); c.discardMax < 0 {
					c.closeNow()
					return nil, nil
				}
			case EventDone:
				c.reqDone = true
				if c.deliver {
					c.deliver = false
					c.ev.OnBodyEnd(c.p.Trailers())
				}
				c.settle()
			default:
				return data, nil // all consumed, or held back by the window
			}
		}
	}
}

// bodyCanEnd reports a body whose end needs no more bytes (a complete
// Content-Length), so that EventDone is collected without new input.
func (c *ServerConn) bodyCanEnd() bool {
	return c.p.br.mode == bodyLength && c.p.br.remaining == 0
}

// begin starts the exchange for the head just parsed.
func (c *ServerConn) begin() error {
	req := c.p.Request()
	req.Scheme, req.TLS = c.cfg.Scheme, c.cfg.TLS
	req.RemoteAddr = c.remote
	req.Conn = c.conn
	if c.cfg.MaxRequestBody > 0 && req.ContentLength > c.cfg.MaxRequestBody {
		return c.failRequest(&Error{413, "request body too large"})
	}
	c.served++
	c.state = scActive
	// The head is in: neither the header timeout nor an idle timeout left
	// from before this request applies to the exchange.
	c.stopTimer()
	c.ev = nil
	c.reqDone = !req.HasBody
	c.deliver, c.discarding = false, false
	c.unconsumed, c.bodyRead = 0, 0
	c.expect, c.sent100 = c.p.ExpectContinue(), false
	c.keepAlive = c.p.KeepAlive() && !c.shutdown
	c.http10 = req.Proto == "HTTP/1.0"
	c.isHead = req.Method == "HEAD"
	c.resp, c.framing, c.remaining, c.wantWrite = rsNone, fwNone, 0, false
	c.upgrade, c.tunnel = req.Upgrade, false

	c.releaseDone() // a pipelined request may start before Flush
	c.inServe = true
	ev := c.h.Serve(req, &c.rw)
	c.inServe = false
	if c.state != scActive {
		return nil // the handler reset the connection
	}
	c.ev = ev
	c.deliver = ev != nil && !c.reqDone
	if c.expect && !c.sent100 && c.resp == rsNone {
		c.sent100 = true
		c.t.Write(continueHead)
	}
	c.settle()
	return nil
}

var continueHead = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// settle moves the exchange on once the response is complete: discarding
// an unwanted rest of the body, closing, or making room for the next
// request. It never calls the handler.
func (c *ServerConn) settle() {
	if c.state != scActive || c.inServe || c.resp != rsDone {
		return
	}
	if !c.reqDone {
		if c.discarding {
			return
		}
		// The handler is done; the rest of the body is read and dropped if
		// it is small enough, which keeps the connection reusable.
		c.deliver = false
		c.discarding = true
		c.discardMax = c.cfg.MaxDiscard
		left := c.p.br.remaining
		if !c.keepAlive || c.expect && !c.sent100 ||
			c.p.br.mode == bodyLength && left > c.discardMax {
			c.closeNow()
		}
		return
	}
	if !c.keepAlive {
		c.closeNow()
		return
	}
	c.state = scIdle
	if r, ok := c.ev.(stream.Releaser); ok {
		// The exchange is over both ways and no event follows, so the
		// handler may reuse what it kept for it. Told from Flush, an entry
		// point, because settle may run inside a ResponseWriter call.
		c.release = r
		c.t.FlushLater()
	}
	c.ev = nil
	c.p.Reset()
}

// releaseDone tells the handler of the last exchange that it is over
// (stream.Releaser).
func (c *ServerConn) releaseDone() {
	if r := c.release; r != nil {
		c.release = nil
		r.OnRelease()
	}
}

// wake follows a ResponseWriter call that may let input move on: the end
// of the response (Close, WriteHeader with endStream) or a reopened body
// window (Consumed). Such a call never processes input itself (stream's
// re-entrancy rule). Input held back in c.in is taken up from the loop:
// PauseRead(false) only re-arms, and the transport then calls Feed, with
// no new bytes if none arrived, in this iteration or the next; that Feed
// also brings reading and the timer up to date. With nothing held back,
// only reading (a reopened window) and the timer (the idle timeout after
// an exchange) need it now.
//
// A body whose end needs no more bytes (bodyCanEnd) never waits here:
// step collects its end before it returns, window or not.
//
// While run processes input, c.in is empty, so a call from inside one of
// step's handler callbacks asks for no Feed: step carries on by itself.
// (Reading and the timer are brought up to date then too, which costs
// nothing but compares, except that a response completed from OnBody or
// OnBodyEnd arms the idle timer at once; a pipelined request behind it in
// the same Feed stops it again.)
func (c *ServerConn) wake() {
	if c.state == scClosed {
		return
	}
	if len(c.in) > 0 {
		c.paused = false
		c.t.PauseRead(false)
		return
	}
	c.updatePause()
	c.armTimer()
}

// updatePause applies backpressure: reading stops while the handler holds
// a full window of body, or while unprocessed input fills its buffer.
func (c *ServerConn) updatePause() {
	want := c.state == scActive && c.deliver && c.unconsumed >= c.cfg.BodyWindow ||
		len(c.in) >= c.cfg.MaxBufferedInput
	if c.state == scClosed {
		want = false
	}
	if want != c.paused {
		c.paused = want
		c.t.PauseRead(want)
	}
}

// armTimer keeps the one timer the connection needs: the header timeout
// while a head is awaited (first request, or a head already begun), the
// idle timeout between requests, none during an exchange. A running timer
// of the right kind is left alone, so trickling bytes do not extend it.
func (c *ServerConn) armTimer() {
	want := tkNone
	if c.state == scIdle {
		if c.served == 0 || c.p.Started() || len(c.in) > 0 {
			want = tkHeader
		} else {
			want = tkIdle
		}
	}
	if want == c.timerKind {
		return
	}
	c.stopTimer()
	switch want {
	case tkHeader:
		c.startTimer(c.cfg.HeaderTimeout)
	case tkIdle:
		c.startTimer(c.cfg.IdleTimeout)
	}
	c.timerKind = want
}

// startTimer arms the connection's one timer: the same one again when the
// clock's timers can be re-armed (stream.ResettableTimer), so a kept-alive
// connection does not allocate a timer per request.
func (c *ServerConn) startTimer(d time.Duration) {
	if rt, ok := c.timer.(stream.ResettableTimer); ok {
		rt.Reset(d)
		return
	}
	c.timer = c.t.Clock().AfterFunc(d, c.onTimer)
}

func (c *ServerConn) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timerKind = tkNone
}

func (c *ServerConn) timerFired() {
	kind := c.timerKind
	c.timerKind = tkNone
	if c.state != scIdle {
		return
	}
	if kind == tkHeader && c.p.Started() {
		c.writeError(408, false)
	}
	c.closeNow()
}

// closeNow ends the connection after what is queued.
func (c *ServerConn) closeNow() {
	if c.state == scClosed {
		return
	}
	c.state = scClosed
	c.stopTimer()
	c.t.Close()
}

// abortAll closes the connection and tells a live handler.
func (c *ServerConn) abortAll(err error) {
	live := c.state == scActive && c.ev != nil && (c.resp != rsDone || c.deliver)
	c.closeNow()
	if live {
		c.ev.OnAbort(err)
	}
}

// failRequest answers a request that never reached the handler.
func (c *ServerConn) failRequest(err error) error {
	status := 400
	var e *Error
	if errors.As(err, &e) {
		status = e.Status
	}
	// A request refused after its request line (an expectation, a
	// framing conflict) may be a HEAD, whose answer has no body.
	c.writeError(status, c.p.Method() == "HEAD")
	c.closeNow()
	return err
}

// failBody handles a framing error in a body the handler is receiving: the
// handler is aborted, and the client gets an error status if no response
// head has gone out yet.
func (c *ServerConn) failBody(err error) error {
	if c.resp == rsNone {
		status := 400
		var e *Error
		if errors.As(err, &e) {
			status = e.Status
		}
		c.writeError(status, c.isHead)
	}
	c.abortAll(err)
	return err
}

// writeError queues a small complete response that closes the
// connection; to a HEAD, without its body.
func (c *ServerConn) writeError(status int, head bool) {
	text := statusText(status)
	b := appendStatusLine(c.wbuf[:0], status)
	b = append(b, "content-type: text/plain; charset=utf-8\r\ncontent-length: "...)
	b = strconv.AppendInt(b, int64(len(text)+5), 10)
	b = append(b, "\r\nconnection: close\r\n\r\n"...)
	if !head {
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, ' ')
		b = append(b, text...)
		b = append(b, '\n')
	}
	c.wbuf = b
	c.t.Write(b)
}
