package proxy

// The exchange is the one place that knows both sides of a proxied
// request, so backpressure, timeouts, retries and the error answers are
// decided here; the backend connection only moves bytes and the pool only
// hands out connections.

import (
	"errors"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// exchange is one proxied request: the client's stream on one side, a
// backend connection on the other, and the flow of bytes between them with
// backpressure both ways. It lives on the loop that owns both.
type exchange struct {
	h                *Handler
	g                *group
	w                stream.ResponseWriter
	method           string
	head             []byte // the translated request head, kept for a retry
	hasBody, chunked bool

	early     []byte // body bytes framed before a connection was bound
	earlyBody int
	bodyEnded bool

	pool   *pool
	bc     *backendConn
	queued *pool // waiting for a connection of this pool

	key                         pickKey
	https                       bool
	tries                       int       // upstreams tried after a failed connect
	firstTry                    time.Time // when the first connect failed (lb_try_duration)
	sentAt                      time.Time // when the request head was handed to a connection
	lastFailed                  *upstream.Upstream
	reused, retried, failedOver bool
	gotByte                     bool // a response byte arrived on this attempt
	headSent                    bool // the client has a final response head
	finished                    bool
	pending                     []byte        // response body the client has not taken yet
	timer                       netpoll.Timer // one per exchange, re-armed for each wait; held by value (InitTimer)
	waiting                     waitKind
	status                      int
	bytesOut                    int64
	errText                     string
	log                         observe.RequestLog // request facts kept for the observer
	logging                     bool               // an observer waits for log
	tun                         *tunnelState       // set for a request that asked to upgrade
	bodyTimer                   *netpoll.Timer     // read_body: the client's body must end in time
	link                        inflightLink       // in the handler's inflight list (retire.go)

	// The exchange goes back to its handler's free list (recycle) once
	// both are true: the front end released it (no more Events, its
	// ResponseWriter not to be used) and it reported itself to the
	// observer (nothing left of it on the loop).
	released, observed bool
}

// waitKind is what the exchange's timer is guarding.
type waitKind uint8

const (
	waitQueue   waitKind = iota // a free connection in the pool's queue
	waitHeader                  // the response head
	waitRead                    // the next bytes of the response body
	waitTunnel                  // any byte of an open tunnel (stream_timeout)
	waitRetry                   // lb_try_interval before another upstream
	waitRemoved                 // the client's end of a tunnel a reload removed
)

// arm (re)starts the exchange's timer for one kind of wait.
func (ex *exchange) arm(kind waitKind, d time.Duration) {
	if !ex.timer.Initialized() {
		ex.h.loop.InitTimer(&ex.timer, ex.timedOut)
	}
	ex.waiting = kind
	ex.timer.Reset(d)
}

func (ex *exchange) timedOut() {
	switch ex.waiting {
	case waitQueue:
		ex.queueTimedOut()
	case waitHeader:
		ex.headerTimedOut()
	case waitRead:
		ex.readTimedOut()
	case waitTunnel:
		ex.tunnelTimedOut()
	case waitRetry:
		ex.begin(ex.lastFailed)
	case waitRemoved:
		ex.removedTimedOut()
	}
}

// observe reports the finished exchange, once.
func (ex *exchange) observe() {
	defer ex.recycle()
	ex.observed = true
	ex.h.live.remove(ex)
	if ex.bodyTimer != nil { // every way an exchange ends reports it
		ex.bodyTimer.Stop()
	}
	if ex.tun != nil {
		ex.tunnelEnded()
	}
	if !ex.logging {
		return
	}
	ex.logging = false
	l := &ex.log
	l.Status, l.BytesOut, l.Reused, l.Error = ex.status, ex.bytesOut, ex.reused, ex.errText
	if ex.pool != nil {
		l.Upstream = ex.pool.up.Name
	}
	l.Duration = ex.h.loop.Now().Sub(l.Start)
	ex.h.cfg.Observer.Observe(l)
}

var (
	_ stream.Events   = (*exchange)(nil)
	_ stream.Releaser = (*exchange)(nil)
)

// OnRelease implements stream.Releaser: the front end is done with the
// request, and the exchange is recycled once it has been observed. One
// that has not ended yet — a response without a body ends the client's
// stream with its head, before the origin's response is complete — runs on
// to the end of the origin's response with a ResponseWriter that takes
// nothing, so it never touches the released one. A tunnel keeps its own
// ending (front ends never reuse a tunnel's stream) and is left to the
// collector.
func (ex *exchange) OnRelease() {
	if ex.released {
		return
	}
	ex.released = true
	if ex.tun != nil {
		return
	}
	if !ex.finished {
		ex.w = releasedWriter{}
		return
	}
	ex.recycle()
}

// releasedWriter stands in for a ResponseWriter the front end took back.
type releasedWriter struct{}

func (releasedWriter) WriteHeader(int, []stream.Field, bool) error { return stream.ErrStreamClosed }
func (releasedWriter) Write([]byte) (int, error)                   { return 0, stream.ErrStreamClosed }
func (releasedWriter) Close([]stream.Field) error                  { return stream.ErrStreamClosed }
func (releasedWriter) Reset(uint32)                                {}
func (releasedWriter) Consumed(int)                                {}

// maxFreeExchanges bounds a handler's free list of exchanges: as many as a
// loop has requests in flight under heavy load (six h2 connections with a
// hundred streams each are 600), each about 1.7 KiB with its head buffer
// and timers, so at most 1.7 MiB per loop, beside the up to 8 MiB of free
// backend read buffers (maxBufs) the loop keeps for the same load.
const maxFreeExchanges = 1024

// maxKeptHead is the largest request-head buffer a recycled exchange keeps;
// a larger one (a request with huge fields) goes to the collector.
const maxKeptHead = 4 * headCap

// recycle puts the exchange on its handler's free list once the front end
// released it and it was observed: then no front end, backend connection,
// pool queue, timer or inflight list refers to it any more. Its timer (with
// the method value it calls), its read_body timer and its request-head
// buffer stay with it, so the next request allocates none of them.
func (ex *exchange) recycle() {
	if !ex.released || !ex.observed || !ex.finished || ex.tun != nil {
		return
	}
	h := ex.h
	if len(h.freeEx) >= maxFreeExchanges {
		return
	}
	ex.timer.Stop()
	ex.bodyTimer.Stop()
	timer, bodyTimer, head := ex.timer, ex.bodyTimer, ex.head[:0]
	if cap(head) > maxKeptHead {
		head = nil
	}
	// finished stays set: a stray call on a free exchange does nothing.
	*ex = exchange{timer: timer, bodyTimer: bodyTimer, head: head, finished: true}
	h.freeEx = append(h.freeEx, ex)
}

// newExchange takes an exchange from the free list, or allocates one.
func (h *Handler) newExchange() *exchange {
	n := len(h.freeEx)
	if n == 0 {
		return &exchange{}
	}
	ex := h.freeEx[n-1]
	h.freeEx[n-1] = nil
	h.freeEx = h.freeEx[:n-1]
	return ex
}

// begin picks an upstream and asks its pool for a connection.
func (ex *exchange) begin(skip *upstream.Upstream) {
	p := ex.g.pick(ex.h.loop.Now(), skip, &ex.key)
	if !p.acquire(ex, false) {
		ex.fail(503, "upstream queue full")
	}
}

// attach starts the exchange on a connection: the request head, then any
// body that already arrived.
func (ex *exchange) attach(p *pool, bc *backendConn, reused bool) {
	ex.pool, ex.bc, ex.reused, ex.queued = p, bc, reused, nil
	ex.gotByte = false
	bc.parser.Reset(ex.method)
	if ex.tun != nil {
		bc.parser.ExpectUpgrade()
	}
	ex.sentAt = ex.h.loop.Now()
	if ex.h.upHead {
		// header_up used {upstream_hostport} and the like: the marks in
		// the head are filled for this upstream, straight into the
		// connection's output, so a retry elsewhere gets its own.
		bc.out = route.FillUpstream(bc.out, ex.head, p.up.HostPort())
		bc.send(nil, 0)
	} else {
		bc.send(ex.head, 0)
	}
	if len(ex.early) > 0 && (ex.tun == nil || ex.tun.open) {
		bc.send(ex.early, ex.earlyBody)
		ex.early, ex.earlyBody = nil, 0
	}
	ex.arm(waitHeader, ex.h.cfg.ResponseHeaderTimeout)
}

// OnBody forwards request body bytes, framed for the origin.
func (ex *exchange) OnBody(p []byte) {
	if ex.finished {
		ex.w.Consumed(len(p)) // answered already: drain and drop
		return
	}
	ex.sendBody(p, len(p))
}

func (ex *exchange) sendBody(p []byte, body int) {
	chunk := ex.chunked && body > 0
	switch {
	case ex.bc == nil || ex.tun != nil && !ex.tun.open:
		if chunk {
			ex.early = h1.AppendChunk(ex.early, p)
		} else {
			ex.early = append(ex.early, p...)
		}
		ex.earlyBody += body
	case chunk:
		ex.bc.sendChunk(p)
	default:
		ex.bc.send(p, body)
	}
}

// OnBodyEnd ends a chunked request body, with the client's trailers.
func (ex *exchange) OnBodyEnd(trailers []stream.Field) {
	ex.bodyEnded = true
	if ex.bodyTimer != nil {
		ex.bodyTimer.Stop()
	}
	if ex.tun != nil {
		ex.clientEnded()
		return
	}
	if ex.finished || !ex.chunked {
		return
	}
	valid := trailers[:0:0]
	for _, f := range trailers {
		if h1.ValidField(f) && !field.Lookup(f.Name).Has(field.NotInTrailer) {
			valid = append(valid, f)
		}
	}
	ex.sendBody(h1.AppendLastChunk(nil, valid), 0)
}

// bodyWritten reports body bytes that reached the origin's socket: only now
// may the client send that many more.
func (ex *exchange) bodyWritten(n int) {
	if t := ex.tun; t != nil && t.open {
		t.bytesIn += int64(n)
		ex.tunnelActive()
	}
	ex.w.Consumed(n)
}

// OnWritable resumes a response the client had stopped taking.
func (ex *exchange) OnWritable() {
	if ex.tun != nil && ex.tun.open {
		if !ex.finished && ex.stalled() {
			ex.bc.tunnelWritable()
		}
		return
	}
	if ex.finished || len(ex.pending) == 0 {
		return
	}
	n, err := ex.w.Write(ex.pending)
	if err != nil {
		ex.abortBackend()
		return
	}
	ex.bytesOut += int64(n)
	ex.pending = ex.pending[n:]
	if len(ex.pending) == 0 && ex.bc != nil {
		ex.bc.resume()
	}
}

func (ex *exchange) stalled() bool {
	return len(ex.pending) > 0 || ex.tun != nil && ex.tun.open && ex.bc != nil && ex.bc.inStart < ex.bc.inEnd
}

// OnAbort: the client went away. A connection mid-exchange cannot be reused.
func (ex *exchange) OnAbort(error) {
	if ex.finished {
		return
	}
	ex.errText = "client went away"
	ex.abortBackend()
	ex.observe()
}

func (ex *exchange) abortBackend() {
	ex.h.live.remove(ex)
	ex.finished = true
	ex.timer.Stop()
	if ex.queued != nil {
		ex.queued.dequeue(ex)
		ex.queued = nil
	}
	if ex.bc != nil {
		ex.bc.close()
	}
}

func (ex *exchange) gotBytes() {
	ex.gotByte = true
	if ex.tun != nil && ex.tun.open {
		ex.tunnelActive()
		return
	}
	if ex.headSent && ex.h.cfg.ReadTimeout > 0 {
		ex.timer.Reset(ex.h.cfg.ReadTimeout)
	}
}

// parse runs the response parser over the connection's buffered bytes. It
// returns true when it needs more input, false when the exchange stalled
// (the client's window is full), finished or failed.
func (ex *exchange) parse() bool {
	bc := ex.bc
	p := &bc.parser
	for {
		n, ev, err := p.Feed(bc.in[bc.inStart:bc.inEnd])
		bc.inStart += n
		if err != nil {
			ex.badResponse(err)
			return false
		}
		switch ev {
		case h1.EventNone:
			return true
		case h1.EventInfo:
			// 100 Continue is pollproxy's business with the origin; Early
			// Hints are the client's.
			if p.Status() == 103 {
				ex.w.WriteHeader(103, p.Header(), false)
			}
		case h1.EventHead:
			ex.responseHead(p)
			if ex.finished {
				return false
			}
		case h1.EventBody:
			body := p.Body()
			k, err := ex.w.Write(body)
			if err != nil {
				ex.abortBackend()
				return false
			}
			ex.bytesOut += int64(k)
			if k < len(body) {
				ex.pending = body[k:]
				bc.parseOwed = true
				bc.setInterest()
				return false
			}
		case h1.EventDone:
			ex.complete(p.KeepAlive(), p.Trailers())
			return false
		}
	}
}

func (ex *exchange) responseHead(p *h1.ResponseParser) {
	if p.Switched() {
		ex.switched(p)
		return
	}
	if ex.tun != nil {
		ex.upgradeRefused()
	}
	ex.status = p.Status()
	if hc := &ex.h.cfg.Health; hc.UnhealthyResponse(ex.status, ex.h.loop.Now().Sub(ex.sentAt)) {
		ex.pool.up.Failed(*hc, ex.h.loop.Now())
	}
	ex.timer.Stop()
	if ex.h.cfg.ReadTimeout > 0 {
		ex.arm(waitRead, ex.h.cfg.ReadTimeout)
	}
	fields := ex.h.responseFields(p.Header())
	if ex.g.policy == Cookie && ex.key.cookie != ex.pool.index {
		fields = append(fields, stream.Field{Name: "set-cookie", Value: ex.cookie()})
	}
	ex.headSent = true
	if err := ex.w.WriteHeader(ex.status, fields, !p.HasBody()); err != nil {
		ex.abortBackend()
	}
}

// complete ends the response and gives the connection back when both the
// response and our request were complete, so the next request on it starts
// on a clean boundary.
func (ex *exchange) complete(keepAlive bool, trailers []stream.Field) {
	ex.finished = true
	ex.timer.Stop()
	bc := ex.bc
	ex.bc = nil
	// Release before Close: the front end may start the next pipelined
	// request from inside Close.
	bc.done(keepAlive && (ex.bodyEnded || !ex.hasBody))
	ex.w.Close(trailers)
	ex.observe()
}

// originEOF: the origin closed the connection.
func (ex *exchange) originEOF() {
	ev, err := ex.bc.parser.EOF()
	if ev == h1.EventDone {
		ex.complete(false, nil)
		return
	}
	ex.backendFailed(err)
}

// backendFailed handles a connection that broke before the response was
// complete: retried once on a fresh connection when that is safe, 502 when
// the client has no head yet, a stream reset otherwise.
func (ex *exchange) backendFailed(err error) {
	if ex.finished {
		return
	}
	if bc := ex.bc; bc != nil {
		bc.close()
	}
	if ex.tun != nil && ex.tun.open {
		ex.tunnelBroken("origin: " + errText(err))
		return
	}
	if ex.canRetry() {
		ex.retried = true
		ex.pool.up.Retries.Add(1)
		if !ex.pool.acquire(ex, true) {
			ex.fail(503, "upstream queue full")
		}
		return
	}
	ex.pool.up.Failed(ex.h.cfg.Health, ex.h.loop.Now())
	if ex.headSent {
		// Counted, and told to the access log by reset; never logged here:
		// a log write on the loop would stall every stream it serves.
		ex.pool.up.Broken.Add(1)
		ex.reset("upstream broke mid-response: " + errText(err))
		return
	}
	ex.fail(502, "bad gateway: "+errText(err))
}

// canRetry: a reused connection that failed before a single response byte
// most likely raced the origin's keep-alive close; replaying is safe for a
// request without a body whose method is idempotent (RFC 9110 §9.2.2).
func (ex *exchange) canRetry() bool {
	if !ex.reused || ex.retried || ex.gotByte || ex.hasBody {
		return false
	}
	switch ex.method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

func (ex *exchange) badResponse(err error) {
	if bc := ex.bc; bc != nil {
		bc.close()
	}
	ex.pool.up.Failed(ex.h.cfg.Health, ex.h.loop.Now())
	if ex.headSent {
		ex.reset("malformed response body from upstream")
		return
	}
	ex.fail(502, "bad gateway: malformed response from upstream")
}

// connectFailed: the connection never came up. With more than one
// upstream the request moves to another one once (nothing was sent yet).
func (ex *exchange) connectFailed(err error) {
	if ex.finished {
		return
	}
	up := ex.pool.up
	now := ex.h.loop.Now()
	up.Failed(ex.h.cfg.Health, now)
	if ex.tries == 0 {
		ex.firstTry = now
	}
	if ex.mayRetry(now) {
		ex.tries++
		ex.failedOver = true
		ex.lastFailed = up
		if ex.h.cfg.TryDuration > 0 {
			ex.arm(waitRetry, ex.h.cfg.TryInterval)
			return
		}
		ex.begin(up)
		return
	}
	if errors.Is(err, errConnectTimeout) {
		ex.fail(504, "gateway timeout: connect to upstream timed out")
		return
	}
	ex.fail(502, "bad gateway: "+errText(err))
}

// mayRetry: Caddy's lb_retries and lb_try_duration. Without either, a
// request moves to another upstream once when there is one.
func (ex *exchange) mayRetry(now time.Time) bool {
	c := &ex.h.cfg
	switch {
	case c.Retries < 0:
		return false
	case c.Retries > 0:
		if ex.tries < c.Retries {
			return true
		}
	case c.TryDuration == 0:
		return ex.tries == 0 && len(ex.g.pools) > 1
	}
	return c.TryDuration > 0 && now.Add(c.TryInterval).Sub(ex.firstTry) < c.TryDuration
}

// cookie is the cookie policy's Set-Cookie naming the chosen upstream.
func (ex *exchange) cookie() string {
	v := ex.h.cfg.PolicyArg + "=" + ex.g.cookies[ex.pool.index] + "; Path=/"
	if ex.https {
		v += "; Secure; SameSite=None"
	}
	return v
}

func (ex *exchange) headerTimedOut() {
	if bc := ex.bc; bc != nil {
		bc.close()
	}
	ex.pool.up.Failed(ex.h.cfg.Health, ex.h.loop.Now())
	ex.fail(504, "gateway timeout: upstream sent no response head in time")
}

// bodyTimedOut: the client's body did not end within read_body. The
// origin has part of a request, so its connection is closed, never
// reused, and the upstream is not blamed; the client gets a 408 (a reset
// if a response head already went out).
func (ex *exchange) bodyTimedOut() {
	if ex.finished || ex.bodyEnded {
		return
	}
	if bc := ex.bc; bc != nil {
		bc.close()
	}
	ex.fail(408, "request timeout: the request body did not arrive in time")
}

// writeTimedOut: writing the request to the origin stayed blocked for
// transport http's write_timeout. As in Caddy, whose write deadline
// surfaces as a timeout, the client gets a 504 (a reset if a response head
// already went out); the connection was closed and the upstream counts a
// failure.
func (ex *exchange) writeTimedOut() {
	if ex.finished {
		return
	}
	ex.pool.up.Failed(ex.h.cfg.Health, ex.h.loop.Now())
	ex.fail(504, "gateway timeout: writing the request to upstream timed out")
}

func (ex *exchange) queueTimedOut() {
	ex.fail(503, "service unavailable: no upstream connection became free in time")
}

func (ex *exchange) readTimedOut() {
	if bc := ex.bc; bc != nil {
		bc.close()
	}
	ex.reset("upstream read timed out")
}

// reset aborts the client's stream after its head went out.
func (ex *exchange) reset(why string) {
	ex.finished = true
	ex.timer.Stop()
	ex.status, ex.errText = 0, why
	ex.w.Reset(stream.CodeInternal)
	ex.observe()
}

// fail answers the client with a short error response (or resets the
// stream when a head already went out).
func (ex *exchange) fail(status int, msg string) {
	if ex.finished {
		return
	}
	ex.finished = true
	ex.timer.Stop()
	if ex.queued != nil {
		ex.queued.dequeue(ex)
		ex.queued = nil
	}
	if ex.headSent {
		ex.reset(msg)
		return
	}
	ex.status, ex.errText = status, msg
	ex.headSent = true
	body := msg + "\n"
	ex.w.WriteHeader(status, []stream.Field{
		{Name: "content-type", Value: "text/plain; charset=utf-8"},
		{Name: "content-length", Value: strconv.Itoa(len(body))},
	}, false)
	ex.w.Write([]byte(body))
	ex.w.Close(nil)
	ex.observe()
}

func errText(err error) string {
	switch {
	case err == nil:
		return "upstream closed the connection"
	case errors.Is(err, unix.ECONNREFUSED):
		return "connection refused by upstream"
	case errors.Is(err, unix.ECONNRESET):
		return "connection reset by upstream"
	}
	return err.Error()
}
