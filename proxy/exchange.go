package proxy

// The exchange is the one place that knows both sides of a proxied
// request, so backpressure, timeouts, retries and the error answers are
// decided here; the backend connection only moves bytes and the pool only
// hands out connections.

import (
	"errors"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/sniff"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// exchange is one proxied request: the client's stream on one side, a
// backend connection on the other, and the flow of bytes between them with
// backpressure both ways. It lives on the loop that owns both. Its phase
// says where it is; every way it ends goes through end.
type exchange struct {
	h       *Handler
	g       *group
	w       stream.ResponseWriter
	req     *stream.Request  // valid until released: what the log of a panic names
	conn    stream.Abandoner // the client connection, abandoned after a panic in the exchange's work
	method  string
	head    []byte // the translated request head, kept for a retry
	hasBody bool
	// dropBody: the origin's request has no body though the client's has
	// (reverse_proxy's method GET or HEAD); the client's is read and
	// dropped.
	dropBody bool
	chunked  bool
	https    bool

	early     []byte // body bytes framed before a connection was bound
	earlyBody int
	bodyEnded bool  // the client's body (or its direction of a tunnel) ended
	bodyRead  int64 // request body bytes the client sent
	maxBody   int64 // request_body max_size (0: none)

	phase phase
	pool  *pool        // the pool it waits in or got its connection from
	bc    *backendConn // its connection, in phaseSent, phaseStreaming and phaseTunnel

	// An HTTP/2 origin's exchange has a stream instead of a connection
	// (h2exchange.go), and its request head as fields.
	os    *originStream
	h2req *h2Request
	// osv and h2buf are what os and h2req point to, kept with the
	// exchange (and h2buf's fields' array across recycling), so a
	// request to an HTTP/2 origin allocates neither.
	osv   originStream
	h2buf h2Request

	key        pickKey
	client     netip.AddrPort // the client's address, for a PROXY protocol header
	tries      int            // upstreams tried after a failed connect
	firstTry   time.Time      // when the first connect failed (lb_try_duration)
	sentAt     time.Time      // when the request head was handed to a connection
	lastFailed *upstream.Upstream
	reused     bool // this attempt's connection was kept alive
	retried    bool // the one retry on a fresh connection was spent
	gotByte    bool // a response byte arrived on this attempt

	pending   []byte        // response body the client has not taken yet
	timer     netpoll.Timer // one per exchange, guarding what its phase waits for; held by value (InitTimer)
	status    int
	bytesOut  int64
	log       observe.RequestLog // request facts kept for the observer
	tun       *tunnelState       // set for a request that asked to upgrade
	bodyTimer *netpoll.Timer     // read_body: the client's body must end in time
	link      inflightLink       // in the handler's inflight list (retire.go)

	// holding: the response head (held) waits for the first body bytes
	// to sniff a Content-Type from (sniff.go), with heldLength its
	// Content-Length (-1: none), kept the body bytes taken meanwhile, and
	// after the body bytes that go once pending has.
	holding    bool
	heldLength int64
	held       []stream.Field
	kept       []byte
	after      []byte

	// fcgiHeld: a FastCGI request whose body's length is unknown; the
	// body waits in early (at most fcgiBufferLimit) and the request
	// starts when it ends. trusted is the peer's trust, for its CGI
	// environment then.
	fcgiHeld bool
	trusted  bool
	// replay is what a FastCGI request sent on a reused connection after
	// its head (FCGI_STDIN records), kept while at most fcgiReplayMax so
	// that the request can be sent again if the connection turns out to
	// have been closed under it; replayBody is how much of it is the
	// client's body, written how much of that reached the socket
	// (fcgiretry.go).
	replay     []byte
	replayBody int
	written    int
	replayOK   bool

	// released: the front end is done with the request (OnRelease). The
	// exchange goes back to its handler's free list (recycle) once it is
	// also done.
	released bool
}

// phase is where an exchange is. It also says what the exchange's one
// timer guards (timedOut). Connecting is the backend connection's state,
// not the exchange's: a request is handed to a connection at once, and
// waits in its output until the connect completes.
type phase uint8

const (
	// phaseNew: no connection or queue yet — just served, or waiting
	// lb_try_interval before another upstream (the timer).
	phaseNew phase = iota
	// phaseQueued: in its pool's queue for a connection (the timer:
	// connect_timeout).
	phaseQueued
	// phaseSent: bound to a connection, which has the request; waiting
	// for the response head (response_header_timeout).
	phaseSent
	// phaseStreaming: the response head went to the client; the body
	// follows (read_timeout, when set).
	phaseStreaming
	// phaseTunnel: the origin switched protocols; bytes flow both ways
	// (stream_timeout, when set).
	phaseTunnel
	// phaseDone: ended. Nothing more goes to the origin; only a tunnel a
	// reload removed still waits for the client to end its direction
	// (removedLinger).
	phaseDone
)

// arm (re)starts the exchange's timer for what its phase waits for.
func (ex *exchange) arm(d time.Duration) {
	if !ex.timer.Initialized() {
		ex.h.loop.InitTimer(&ex.timer, ex.timedOut)
		ex.timer.SetOwner(ex)
	}
	ex.timer.Reset(d)
}

func (ex *exchange) timedOut() {
	switch ex.phase {
	case phaseNew:
		ex.begin(ex.lastFailed)
	case phaseQueued:
		ex.end(answer(503, observe.ReasonQueueTimeout, ""))
	case phaseSent:
		ex.upstreamFailed(observe.ReasonHeaderTimeout)
		ex.end(answer(504, observe.ReasonHeaderTimeout, ""))
	case phaseStreaming:
		ex.end(resetting(stream.CodeInternal, observe.ReasonReadTimeout, ""))
	case phaseTunnel:
		ex.end(resetting(stream.CodeCancel, observe.ReasonStreamTimeout, ""))
	case phaseDone:
		if ex.tun != nil {
			ex.removedTimedOut()
		}
	}
}

// outcome is how an exchange ends: what the client is told, why, and
// what becomes of the backend connection.
type outcome struct {
	tell     tell
	status   int            // tellAnswer: the status of pollproxy's answer
	code     uint32         // tellReset: the stream's reset code
	reason   observe.Reason // why, for the access log; ReasonNone when the origin's response completed
	detail   string         // what the reason names, such as a socket error
	reusable bool           // the backend connection may serve another request
	trailers []stream.Field // tellClose: the response's trailers
}

// tell is what an ending does to the client's stream.
type tell uint8

const (
	// tellNothing: the client is gone, or both directions of its tunnel
	// ended already.
	tellNothing tell = iota
	// tellClose: the origin's response is complete; so is the client's.
	tellClose
	// tellAnswer: pollproxy answers with a short error response, or
	// resets the stream (stream.CodeInternal) when a response head
	// already went out.
	tellAnswer
	// tellReset: the stream is reset.
	tellReset
	// tellEndOurs: a tunnel's direction toward the client ends as if the
	// origin had closed it; the client gets removedLinger to end its own.
	tellEndOurs
)

// answer is an ending in pollproxy's own error response.
func answer(status int, r observe.Reason, detail string) outcome {
	return outcome{tell: tellAnswer, status: status, reason: r, detail: detail}
}

// resetting is an ending in a stream reset.
func resetting(code uint32, r observe.Reason, detail string) outcome {
	return outcome{tell: tellReset, code: code, reason: r, detail: detail}
}

// clientGone is the ending of an exchange whose client went away or
// refused a write: nothing is left to tell it.
func clientGone() outcome { return outcome{tell: tellNothing, reason: observe.ReasonClientGone} }

// end is the one way an exchange ends, whatever ends it: its timers
// stop, it leaves its pool's queue, its backend connection goes back to
// the pool or is closed, the client hears of it, and the observer gets
// the exchange's report. Later calls do nothing.
func (ex *exchange) end(o outcome) {
	was := ex.phase
	if was == phaseDone {
		return
	}
	ex.phase = phaseDone
	ex.timer.Stop()
	if ex.bodyTimer != nil {
		ex.bodyTimer.Stop()
	}
	if was == phaseQueued {
		ex.pool.dequeue(ex)
	}
	// The connection goes first: the front end may start the next
	// pipelined request from inside Close.
	if bc := ex.bc; bc != nil {
		ex.bc = nil
		if o.reusable {
			bc.done()
		} else {
			bc.close()
		}
	}
	if os := ex.os; os != nil {
		ex.os = nil
		os.finish(o.reusable)
	}
	switch o.tell {
	case tellClose:
		ex.w.Close(o.trailers)
	case tellAnswer:
		if was >= phaseStreaming {
			ex.status = 0
			ex.w.Reset(stream.CodeInternal)
			break
		}
		ex.answer(o.status, o.reason.Text(o.detail))
	case tellReset:
		if was != phaseTunnel { // a tunnel's log keeps its 101
			ex.status = 0
		}
		ex.w.Reset(o.code)
	case tellEndOurs:
		t := ex.tun
		if !t.originDone {
			t.originDone = true
			ex.w.Close(nil)
		}
		if !t.clientDone {
			ex.arm(removedLinger)
		}
	}
	ex.report(&o, was == phaseTunnel)
	ex.recycle()
}

// answer sends pollproxy's own short error response, unless the site
// renders its errors itself (handle_errors).
func (ex *exchange) answer(status int, text string) {
	ex.status = status
	if stream.RouteError(ex.w, status, text) {
		// The error routes' answer is the request's: it reports it.
		ex.log.Skip = true
		return
	}
	if !ex.bodyEnded {
		// The rest of the client's body goes nowhere now.
		stream.RefuseBody(ex.w)
	}
	body := make([]byte, 0, len(text)+1)
	body = append(append(body, text...), '\n')
	ex.w.WriteHeader(status, []stream.Field{
		{Name: "content-type", Value: "text/plain; charset=utf-8"},
		{Name: "content-length", Value: strconv.Itoa(len(body))},
	}, false)
	ex.w.Write(body)
	ex.w.Close(nil)
}

// report takes the ended exchange off its handler's books and tells the
// observer.
func (ex *exchange) report(o *outcome, tunnel bool) {
	ex.h.live.remove(ex)
	if tunnel {
		ex.h.tunnels.remove(ex)
	}
	obs := ex.h.cfg.Observer
	if obs == nil {
		return
	}
	l := &ex.log
	ex.noteReplaced()
	l.Status, l.BytesOut, l.Reused = ex.status, ex.bytesOut, ex.reused
	l.Reason, l.Detail = o.reason, o.detail
	if tunnel {
		l.Tunnel, l.BytesIn = true, ex.tun.bytesIn
	} else {
		l.BytesRead = ex.bodyRead
	}
	if ex.pool != nil {
		l.Upstream = ex.pool.up.Name
	}
	l.Duration = ex.h.loop.Now().Sub(l.Start)
	obs.Observe(l)
}

// upstreamFailed counts a failure of the exchange's upstream: its passive
// health, and the failure metric by reason.
func (ex *exchange) upstreamFailed(r observe.Reason) {
	up := ex.pool.up
	up.Failed(ex.h.cfg.Health, ex.h.loop.Now())
	if f := ex.h.failures; f != nil {
		f.UpstreamFailed(up.Name, r)
	}
}

var (
	_ stream.Events   = (*exchange)(nil)
	_ stream.Releaser = (*exchange)(nil)
)

// OnRelease implements stream.Releaser: the front end is done with the
// request, and the exchange is recycled once it has ended. One that has
// not ended yet — a response without a body ends the client's stream with
// its head, before the origin's response is complete — runs on to the end
// of the origin's response with a ResponseWriter that takes nothing, so it
// never touches the released one. A tunnel keeps its own ending (front
// ends never reuse a tunnel's stream) and is left to the collector.
func (ex *exchange) OnRelease() {
	if ex.released {
		return
	}
	ex.released = true
	if ex.tun != nil {
		return
	}
	if ex.phase != phaseDone {
		ex.noteReplaced()
		ex.w = releasedWriter{}
		return
	}
	ex.recycle()
}

// noteReplaced leaves the request to the answer that replaced the
// response (handle_response, intercept), which reports it.
func (ex *exchange) noteReplaced() {
	if stream.Replaced(ex.w) {
		ex.log.Skip = true
	}
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
// hundred streams each are 600), so that such a load allocates none; the
// bound keeps what an idle loop holds small next to its free backend read
// buffers (maxBufs).
const maxFreeExchanges = 1024

// maxKeptFields is the most HTTP/2 request fields whose array a recycled
// exchange keeps.
const maxKeptFields = 64

// maxKeptHead is the largest request-head buffer a recycled exchange keeps;
// a larger one (a request with huge fields) goes to the collector.
const maxKeptHead = 4 * headCap

// recycle puts the exchange on its handler's free list once the front end
// released it and it ended: then no front end, backend connection, pool
// queue, timer or inflight list refers to it any more. Its timer (with
// the method value it calls), its read_body timer and its request-head
// buffer stay with it, so the next request allocates none of them.
func (ex *exchange) recycle() {
	if !ex.released || ex.phase != phaseDone || ex.tun != nil {
		return
	}
	h := ex.h
	if len(h.freeEx) >= maxFreeExchanges {
		return
	}
	ex.timer.Stop()
	ex.bodyTimer.Stop()
	timer, bodyTimer, head, h2fields := ex.timer, ex.bodyTimer, ex.head[:0], ex.h2buf.Header
	if cap(head) > maxKeptHead {
		head = nil
	}
	if cap(h2fields) > maxKeptFields {
		h2fields = nil
	}
	clear(h2fields[:cap(h2fields)]) // no request's strings kept alive
	// The phase stays done: a stray call on a free exchange does nothing.
	*ex = exchange{timer: timer, bodyTimer: bodyTimer, head: head, phase: phaseDone,
		h2buf: h2Request{Request: h2.Request{Header: h2fields[:0]}}}
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
	ex.acquire(ex.g.pick(ex.h.loop.Now(), skip, &ex.key), false)
}

// acquire asks pool p for a connection (a fresh one when asked): the
// pool binds one (attach), queues the exchange, or has no room left.
func (ex *exchange) acquire(p *pool, fresh bool) {
	ex.pool, ex.phase = p, phaseNew
	switch p.acquire(ex, fresh) {
	case poolQueued:
		ex.phase = phaseQueued
		ex.arm(ex.h.cfg.ConnectTimeout)
	case poolFull:
		ex.end(answer(503, observe.ReasonQueueFull, ""))
	}
}

// attach starts the exchange on a connection of its pool: the request
// head, then any body that already arrived.
func (ex *exchange) attach(bc *backendConn, reused bool) {
	if len(ex.head) == 0 && ex.h2req != nil {
		ex.h1Head() // its origin answered ALPN with http/1.1 (h2exchange.go)
	}
	ex.bc, ex.reused, ex.gotByte, ex.phase = bc, reused, false, phaseSent
	ex.sentAt = ex.h.loop.Now()
	// Armed before anything is sent: a write that fails at once ends or
	// retries the exchange from inside send, and must find the timer of
	// the phase it left behind.
	ex.arm(ex.h.cfg.ResponseHeaderTimeout)
	bc.request(ex.method, ex.tun != nil)
	if ex.h.cfg.FastCGI != nil {
		ex.fcgiAttach(reused) // before a send that may fail at once
	}
	if ex.h.upHead {
		// header_up used {upstream_hostport} and the like: the marks in
		// the head are filled for this upstream, straight into the
		// connection's output, so a retry elsewhere gets its own.
		port := "80"
		if ex.h.cfg.TLS != nil {
			port = "443"
		}
		bc.sendFilled(ex.head, ex.pool.up.HostPort(), port)
	} else {
		bc.send(ex.head, 0)
	}
	if len(ex.early) > 0 && ex.tun == nil && ex.bc == bc {
		bc.send(ex.early, ex.earlyBody)
		if !bc.comingUp() {
			ex.early, ex.earlyBody = nil, 0
		}
	}
}

// connected: the connection the exchange is bound to came up, with what
// it was sent meanwhile. Until then the body sent also stayed in early,
// for a connect that fails moves the request to another connection
// (connectFailed) with all of its body, not what came after.
func (ex *exchange) connected() {
	if ex.tun == nil {
		ex.early, ex.earlyBody = nil, 0
	}
}

// OnBody forwards request body bytes, framed for the origin.
func (ex *exchange) OnBody(p []byte) {
	ex.bodyRead += int64(len(p))
	if ex.phase == phaseDone || ex.dropBody {
		ex.w.Consumed(len(p)) // answered already: drain and drop
		return
	}
	if ex.maxBody > 0 && ex.bodyRead > ex.maxBody && ex.tun == nil {
		// Past request_body max_size: none of p goes to the origin, whose
		// connection (holding part of a request) is closed by end.
		ex.w.Consumed(len(p))
		ex.end(answer(413, observe.ReasonBodyTooLarge, ""))
		return
	}
	ex.sendBody(p, len(p))
}

func (ex *exchange) sendBody(p []byte, body int) {
	if ex.h.cfg.FastCGI != nil {
		ex.fcgiSendBody(p, body)
		return
	}
	if ex.h2req != nil && ex.tun != nil && ex.phase != phaseTunnel {
		ex.keep(p, body, false) // until the origin's 2xx (h2Switched)
		return
	}
	if ex.os != nil {
		ex.os.sendBody(p)
		return
	}
	chunk := ex.chunked && body > 0
	if ex.bc == nil || ex.tun != nil && ex.phase != phaseTunnel {
		ex.keep(p, body, chunk)
		return
	}
	if ex.tun == nil && ex.bc.comingUp() {
		ex.keep(p, body, chunk) // and sent too: see connected
	}
	if chunk {
		ex.bc.sendChunk(p)
	} else {
		ex.bc.send(p, body)
	}
}

// keep adds p, framed, to the body kept in early.
func (ex *exchange) keep(p []byte, body int, chunk bool) {
	if chunk {
		ex.early = h1.AppendChunk(ex.early, p)
	} else {
		ex.early = append(ex.early, p...)
	}
	ex.earlyBody += body
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
	if ex.h2req != nil && ex.bc == nil && ex.phase != phaseDone {
		ex.endH2Body(trailers) // h2exchange.go
		return
	}
	if ex.phase == phaseDone {
		return
	}
	if ex.h.cfg.FastCGI != nil {
		ex.fcgiBodyEnd()
		return
	}
	if !ex.chunked {
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
	ex.written += n
	if ex.phase == phaseTunnel {
		ex.tun.bytesIn += int64(n)
		ex.tunnelActive()
	}
	ex.w.Consumed(n)
}

// OnWritable resumes a response the client had stopped taking.
func (ex *exchange) OnWritable() {
	switch ex.phase {
	case phaseTunnel:
		if ex.bc == nil {
			break // a stream's tunnel: the body's way below
		}
		if ex.stalled() {
			ex.bc.tunnelWritable()
		}
		return
	case phaseDone:
		return
	}
	if len(ex.pending) == 0 {
		return
	}
	for len(ex.pending) > 0 {
		n, err := ex.w.Write(ex.pending)
		if err != nil {
			ex.end(clientGone())
			return
		}
		ex.bytesOut += int64(n)
		ex.pending = ex.pending[n:]
		if len(ex.pending) > 0 {
			return
		}
		ex.pending, ex.after = ex.after, nil
	}
	if ex.bc != nil {
		ex.bc.resume()
	}
	if ex.os != nil {
		ex.os.resume()
	}
}

// stalled reports whether bytes from the origin wait for the client: its
// connection is then not read.
func (ex *exchange) stalled() bool {
	return len(ex.pending) > 0 || ex.phase == phaseTunnel && ex.bc != nil && ex.bc.buffered()
}

// OnAbort: the client went away. A connection mid-exchange cannot be reused.
func (ex *exchange) OnAbort(error) { ex.end(clientGone()) }

// gotBytes: the origin sent bytes on this attempt; the body's read timer
// starts again.
func (ex *exchange) gotBytes() {
	ex.gotByte = true
	if ex.phase == phaseStreaming && ex.h.cfg.ReadTimeout > 0 {
		ex.timer.Reset(ex.h.cfg.ReadTimeout)
	}
}

// originQuiet: the origin has sent all it has for now. A writer that
// holds bytes back to compress them (encode) lets them go, so the client
// gets what arrived without waiting for more: pollproxy forwards a
// response as it arrives (Caddy's flush_interval -1), encoded or not.
func (ex *exchange) originQuiet() {
	if ex.phase != phaseStreaming {
		return
	}
	if ex.holding && (ex.heldLength >= 0 || !ex.sendHeld(nil)) {
		return
	}
	stream.Flush(ex.w)
}

// informational passes an informational response on: 100 Continue is
// pollproxy's business with the origin; Early Hints are the client's.
func (ex *exchange) informational(p *h1.ResponseParser) {
	if p.Status() == 103 {
		ex.w.WriteHeader(103, p.Header(), false)
	}
}

// responseHead passes the response head on, or opens the tunnel an
// upgrade asked for.
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
		ex.upstreamFailed(observe.ReasonUnhealthy)
	}
	ex.phase = phaseStreaming
	ex.timer.Stop()
	if ex.h.cfg.ReadTimeout > 0 {
		ex.arm(ex.h.cfg.ReadTimeout)
	}
	via := "1.1 pollproxy"
	switch {
	case ex.h.cfg.FastCGI != nil:
		// Caddy's Via names the version of the origin's response, and a
		// FastCGI response has none: "0.0".
		via = "0.0 pollproxy"
	case p.Proto10():
		via = "1.0 pollproxy"
	}
	fields := responseVia(ex.h.responseFields(p.Header()), via)
	if ex.g.policy == Cookie && ex.key.cookie != ex.pool.index {
		fields = append(fields, stream.Field{Name: "set-cookie", Value: ex.cookie()})
	}
	if ex.h.cfg.LogHeaders && !ex.log.Skip && ex.h.cfg.Observer != nil {
		ex.log.RespHeader = append([]stream.Field(nil), fields...)
	}
	if p.HasBody() && sniff.Needed(fields) {
		ex.holdHead(fields, p)
		return
	}
	ex.writeHead(fields, !p.HasBody())
}

// writeHead passes the response head on. It reports whether the front
// end took it; when it did not (a client gone, or a head it cannot send
// for the client's request: a length without a body to a GET that a
// route made a HEAD), the stream is reset, so a client still there is
// not left waiting (a gone one ignores it), and the exchange ended.
func (ex *exchange) writeHead(fields []stream.Field, end bool) bool {
	if err := ex.w.WriteHeader(ex.status, fields, end); err != nil {
		ex.end(resetting(stream.CodeInternal, observe.ReasonClientGone, errText(err)))
		return false
	}
	return true
}

// responseBody hands response body bytes to the client. It reports
// whether the client took them all; when it did not, the exchange either
// keeps the rest until OnWritable (and the connection stops reading) or
// ended.
func (ex *exchange) responseBody(body []byte) bool {
	if ex.holding {
		if goOn, ok := ex.sniffBody(body); !goOn {
			return ok
		}
	}
	return ex.writeBody(body)
}

// writeBody is responseBody's write, once no head is held.
func (ex *exchange) writeBody(body []byte) bool {
	k, err := ex.w.Write(body)
	if err != nil {
		ex.end(clientGone())
		return false
	}
	ex.bytesOut += int64(k)
	if k < len(body) {
		ex.pending = body[k:]
		return false
	}
	return true
}

// responseDone ends the response. The connection goes back to the pool
// when both the response and our request were complete, so the next
// request on it starts on a clean boundary.
func (ex *exchange) responseDone(keepAlive bool, trailers []stream.Field) {
	// A head still held had no body bytes (a response with a length
	// sent its kept ones with its last): it goes without a type.
	if ex.holding && !ex.sendHeld(nil) {
		return
	}
	ex.log.NoteGRPC(trailers)
	ex.end(outcome{tell: tellClose, reusable: keepAlive && (ex.bodyEnded || !ex.hasBody), trailers: trailers})
}

// backendFailed handles a connection that broke (and closed) before the
// response was complete: retried once on a fresh connection when that is
// safe, 502 when the client has no head yet, a stream reset otherwise.
func (ex *exchange) backendFailed(err error) {
	ex.bc = nil
	switch {
	case ex.phase == phaseDone:
	case ex.phase == phaseTunnel:
		ex.end(resetting(stream.CodeCancel, observe.ReasonTunnelBroken, errText(err)))
	case ex.canRetry():
		ex.retried = true
		ex.pool.up.Retries.Add(1)
		if ex.hasBody {
			ex.fcgiReplay()
		}
		ex.acquire(ex.pool, true)
	case ex.phase == phaseStreaming:
		// Counted, and told to the access log by the report; never
		// logged here: a log write on the loop would stall every stream
		// it serves.
		ex.upstreamFailed(observe.ReasonBrokenMidResponse)
		ex.pool.up.Broken.Add(1)
		ex.end(resetting(stream.CodeInternal, observe.ReasonBrokenMidResponse, errText(err)))
	default:
		reason := observe.ReasonBroken
		if errors.As(err, new(tlsError)) {
			reason = observe.ReasonTLS // an alert: the origin refused our client certificate
		}
		ex.upstreamFailed(reason)
		ex.end(answer(502, reason, errText(err)))
	}
}

// canRetry: a reused connection that failed before a single response byte
// most likely raced the origin's keep-alive close; replaying is safe for a
// request without a body whose method is idempotent (RFC 9110 §9.2.2).
// A FastCGI application closes a kept connection only between requests
// (a worker that reached pm.max_requests, a restart), so a FastCGI
// request is sent again whatever its method, with the body it kept
// (fcgiretry.go).
func (ex *exchange) canRetry() bool {
	if !ex.reused || ex.retried || ex.gotByte {
		return false
	}
	if ex.h.cfg.FastCGI != nil {
		return !ex.hasBody || ex.replayOK
	}
	if ex.hasBody {
		return false
	}
	switch ex.method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// badResponse: the origin's response could not be parsed; its connection
// is closed.
func (ex *exchange) badResponse() {
	if ex.phase == phaseStreaming {
		ex.upstreamFailed(observe.ReasonBadBody)
		ex.end(resetting(stream.CodeInternal, observe.ReasonBadBody, ""))
		return
	}
	ex.upstreamFailed(observe.ReasonBadResponse)
	ex.end(answer(502, observe.ReasonBadResponse, ""))
}

// connectFailed: the connection never came up (and is closed). With more
// than one upstream the request moves to another one once (nothing was
// sent yet).
func (ex *exchange) connectFailed(err error) {
	ex.bc = nil
	if ex.phase == phaseDone {
		return
	}
	up := ex.pool.up
	now := ex.h.loop.Now()
	reason := observe.ReasonConnect
	var te tlsError
	switch {
	case errors.Is(err, errConnectTimeout):
		reason = observe.ReasonConnectTimeout
	case errors.As(err, &te):
		reason = observe.ReasonTLS
	}
	ex.upstreamFailed(reason)
	if ex.tries == 0 {
		ex.firstTry = now
	}
	if ex.mayRetry(now) {
		ex.tries++
		ex.lastFailed = up
		ex.phase = phaseNew
		if ex.h.cfg.TryDuration > 0 {
			ex.arm(ex.h.cfg.TryInterval)
			return
		}
		ex.begin(up)
		return
	}
	if reason == observe.ReasonConnectTimeout {
		ex.end(answer(504, reason, ""))
		return
	}
	ex.end(answer(502, reason, errText(err)))
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

// cookie is the cookie policy's Set-Cookie naming the chosen upstream,
// with Caddy's attributes in net/http's order: Path=/, Max-Age when
// max_age set one, HttpOnly, and SameSite=Lax, or Secure and
// SameSite=None when the client spoke HTTPS.
func (ex *exchange) cookie() string {
	v := ex.h.cfg.PolicyArg + "=" + ex.g.cookies[ex.pool.index] + "; Path=/"
	if s := int(ex.h.cfg.CookieMaxAge.Seconds()); s > 0 {
		v += "; Max-Age=" + strconv.Itoa(s)
	}
	if ex.https {
		return v + "; HttpOnly; Secure; SameSite=None"
	}
	return v + "; HttpOnly; SameSite=Lax"
}

// lastValue is the value of the last field named name in fs ("" without
// one), as Caddy's lastHeaderValue reads it.
func lastValue(fs []stream.Field, name string) string {
	v := ""
	for _, f := range fs {
		if f.Name == name {
			v = f.Value
		}
	}
	return v
}

// bodyTimedOut: the client's body did not end within read_body. The
// origin has part of a request, so its connection is closed, never
// reused, and the upstream is not blamed; the client gets a 408 (a reset
// if a response head already went out).
func (ex *exchange) bodyTimedOut() {
	if ex.bodyEnded {
		return
	}
	ex.end(answer(408, observe.ReasonBodyTimeout, ""))
}

// writeTimedOut: writing the request to the origin stayed blocked for
// transport http's write_timeout, and the connection was closed. As in
// Caddy, whose write deadline surfaces as a timeout, the client gets a
// 504 (a reset if a response head already went out) and the upstream
// counts a failure.
func (ex *exchange) writeTimedOut() {
	ex.bc = nil
	if ex.phase == phaseDone {
		return
	}
	ex.upstreamFailed(observe.ReasonWriteTimeout)
	ex.end(answer(504, observe.ReasonWriteTimeout, ""))
}

// errText is a socket error as the access log and a 502's body name it.
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
