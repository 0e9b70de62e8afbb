package proxy

// An exchange over HTTP/2 to its origin: the request head as h2 fields,
// the stream's events mapped onto the exchange's, and the response body
// held by the stream's window while the client is slow. The exchange
// reaches this file through its os field; everything else it does
// (timers, answers, end, the access log) is the same as over HTTP/1.1.

import (
	"net/textproto"
	"strings"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/sniff"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// h2Request readies the origin's request head for req as HTTP/2 fields
// in the exchange's own h2Request (whose fields' array it reuses from the
// exchange's last request): the same translation as an HTTP/1.1 head's
// (requestFields), with Host as :authority, and method and the target as
// reverse_proxy's method and rewrite leave them.
func (ex *exchange) h2Request(req *stream.Request, method string, trusted bool) *h2Request {
	h := ex.h
	fs := h.requestFields(req, trusted)
	r := &ex.h2buf
	*r = h2Request{Request: h2.Request{Header: r.Header[:0]}}
	r.Method, r.Path = method, originTarget(h.upstreamTarget(req))
	r.Scheme = "http"
	if h.cfg.TLS != nil {
		r.Scheme = "https"
	}
	for _, f := range fs {
		if f.Name == "host" {
			r.Authority = f.Value
			continue
		}
		if field.Lookup(f.Name).Has(field.ConnectionSpecific) && f.Name != "te" {
			continue
		}
		if strings.ToLower(f.Name) != f.Name {
			f.Name = strings.ToLower(f.Name)
		}
		r.Header = append(r.Header, f)
	}
	return r
}

// h1Head builds the HTTP/1.1 head of a request readied for an HTTP/2
// origin that turned out to speak HTTP/1.1 (ALPN), and frames the body
// kept so far for it.
func (ex *exchange) h1Head() {
	req := ex.req
	if req == nil {
		return
	}
	trusted := route.Trusted(req.RemoteAddr.Addr(), ex.h.cfg.TrustedProxies)
	if ex.dropBody {
		req = withoutBody(req)
	}
	ex.head, ex.chunked = ex.h.requestHead(ex.head, req, ex.method, trusted)
	if !ex.chunked {
		return
	}
	if len(ex.early) > 0 {
		ex.early = h1.AppendChunk(nil, ex.early)
	}
	if ex.bodyEnded {
		ex.early = h1.AppendLastChunk(ex.early, ex.h2req.trailers)
	}
}

// h2Request is a request head for an HTTP/2 origin, with its upstream
// placeholders (header_up) still to fill (filled), and the client's
// trailers when its body ended before a stream opened.
type h2Request struct {
	h2.Request
	trailers []stream.Field
}

// filled is the head for the upstream at hostport: header_up's upstream
// placeholders filled as for an HTTP/1.1 head (attach).
func (r *h2Request) filled(h *Handler, hostport string) *h2.Request {
	if !h.upHead {
		return &r.Request
	}
	port := "80"
	if h.cfg.TLS != nil {
		port = "443"
	}
	fill := func(v string) string {
		if strings.IndexByte(v, route.UpstreamMark) < 0 {
			return v
		}
		return string(route.FillUpstream(nil, []byte(v), hostport, port))
	}
	out := r.Request
	out.Authority = fill(out.Authority)
	out.Header = make([]stream.Field, len(r.Header))
	for i, f := range r.Header {
		out.Header[i] = stream.Field{Name: f.Name, Value: fill(f.Value)}
	}
	return &out
}

// originStream is an exchange's stream to an HTTP/2 origin: the events
// of proxy/h2's ClientStream, and the response body the client has not
// taken yet. held is what the exchange was given and keeps (its pending,
// then after): returned to the stream's window once the client took it.
// more arrived meanwhile and waits to be given. Both together stay
// within the stream's window.
type originStream struct {
	ex       *exchange
	hc       *h2Conn
	cs       *h2.ClientStream
	held     []byte
	owed     int // of held, the bytes whose window is still to go back
	more     []byte
	ended    bool // the response ended while body bytes wait
	trailers []stream.Field
	sentBody bool // request body bytes went out: not safe to retry
}

// attachStream starts the exchange on a stream of hc: the head, then any
// body that already arrived.
func (ex *exchange) attachStream(hc *h2Conn, reused bool) {
	ex.reused, ex.gotByte, ex.phase = reused, false, phaseSent
	ex.sentAt = ex.h.loop.Now()
	ex.arm(ex.h.cfg.ResponseHeaderTimeout)
	// The exchange's own: a stream closed on the protocol's side gets no
	// more events, so a retry's stream may take the place of the last.
	os := &ex.osv
	*os = originStream{ex: ex, hc: hc}
	ex.os = os
	end := ex.bodyEnded && len(ex.early) == 0 && len(ex.h2req.trailers) == 0 && ex.tun == nil
	os.cs = hc.cc.Open(ex.h2req.filled(ex.h, ex.pool.up.HostPort()), end, os)
	if ex.tun != nil {
		return // a tunnel's bytes wait for the origin's 2xx (h2Switched)
	}
	if len(ex.early) > 0 {
		os.sentBody = true
		os.cs.Write(ex.early)
		if !hc.connecting() {
			ex.early, ex.earlyBody = nil, 0
		}
	}
	if ex.bodyEnded && !end {
		os.cs.End(ex.h2req.trailers)
	}
}

// sendStreamBody forwards request body bytes on the stream; while its
// connection comes up they are kept too, for a connect that fails moves
// the request elsewhere with all of its body.
func (os *originStream) sendBody(p []byte) {
	ex := os.ex
	if os.hc.connecting() {
		ex.keep(p, len(p), false)
	}
	os.sentBody = true
	os.cs.Write(p)
	os.hc.later()
}

// endH2Body ends the request body of an exchange readied for an HTTP/2
// origin, with the client's valid trailers: on its stream, or, while it
// waits for one, when the stream opens (attachStream, or h1Head should
// the origin pick HTTP/1.1).
func (ex *exchange) endH2Body(trailers []stream.Field) {
	var valid []stream.Field
	for _, f := range trailers {
		if h1.ValidField(f) && !field.Lookup(f.Name).Has(field.NotInTrailer) {
			valid = append(valid, f)
		}
	}
	if os := ex.os; os != nil {
		os.cs.End(valid)
		os.hc.later()
		return
	}
	ex.h2req.trailers = valid
}

// finish lets go of the stream as the exchange ends: a complete response
// leaves it as the origin ended it, anything else resets it (CANCEL); a
// stream the protocol already ended (OnReset) is only let go of. After
// it cs is nil: the struct may serve another stream at once
// (ClientStream.Finish).
func (os *originStream) finish(complete bool) {
	if complete {
		os.cs.Finish()
	} else {
		os.cs.Reset(resetCode)
	}
	os.cs = nil
	os.release()
}

// release takes the stream off its connection's books, once.
func (os *originStream) release() {
	if os.hc == nil {
		return
	}
	hc := os.hc
	os.hc = nil
	os.held, os.more = nil, nil
	hc.streamDone()
}

// OnHead implements h2.StreamEvents. Nothing keeps fields past the call
// but a head held for sniffing, which copies them.
func (os *originStream) OnHead(status int, fields []stream.Field, end bool) {
	ex := os.ex
	if ex.os != os {
		return
	}
	ex.gotByte = true
	if status < 200 {
		if status == 103 {
			ex.w.WriteHeader(103, fields, false)
		}
		return
	}
	if ex.tun != nil {
		if status < 300 {
			ex.h2Switched(fields) // h2tunnel.go
			return
		}
		ex.upgradeRefused()
	}
	ex.status = status
	if hc := &ex.h.cfg.Health; hc.UnhealthyResponse(status, ex.h.loop.Now().Sub(ex.sentAt)) {
		ex.upstreamFailed(observe.ReasonUnhealthy)
	}
	ex.phase = phaseStreaming
	ex.timer.Stop()
	if ex.h.cfg.ReadTimeout > 0 {
		ex.arm(ex.h.cfg.ReadTimeout)
	}
	fields = responseVia(ex.h.responseFields(fields), "2.0 pollproxy")
	if ex.g.policy == Cookie && ex.key.cookie != ex.pool.index {
		fields = append(fields, stream.Field{Name: "set-cookie", Value: ex.cookie()})
	}
	if ex.h.cfg.LogHeaders && !ex.log.Skip && ex.h.cfg.Observer != nil {
		ex.log.RespHeader = append([]stream.Field(nil), fields...)
	}
	if !end && sniff.Needed(fields) {
		// Kept past the call: a copy (OnHead's fields are the
		// connection's to decode the next head into).
		ex.holding, ex.held = true, append([]stream.Field(nil), fields...)
		ex.heldLength = -1
		if v, ok := lookupField(fields, "content-length"); ok {
			if n, ok := field.ParseContentLength(v); ok {
				ex.heldLength = n
			}
		}
		return
	}
	if end {
		ex.log.NoteGRPC(fields) // a trailers-only answer: gRPC's status is in its head
	}
	if !ex.writeHead(fields, end) || !end {
		return
	}
	// A trailers-only answer (gRPC's status with no message): the head
	// ended the client's stream too.
	ex.end(outcome{tell: tellClose, reusable: true})
}

// lookupField is the first value of the field named name in fs.
func lookupField(fs []stream.Field, name string) (string, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// OnData implements h2.StreamEvents: the bytes go to the client as far
// as it takes them; the rest is held (within the stream's window) until
// OnWritable, and the window opens again only as the client takes them.
func (os *originStream) OnData(p []byte) {
	ex := os.ex
	if ex.os != os {
		return
	}
	ex.gotBytes()
	ex.tunnelActive()
	if len(os.held) > 0 || len(os.more) > 0 {
		os.more = append(os.more, p...)
		return
	}
	os.give(p)
}

// give hands body bytes to the exchange, and keeps a copy of what the
// client did not take (the exchange's pending and after alias p, which
// is valid only during the call).
func (os *originStream) give(p []byte) {
	ex := os.ex
	if ex.responseBody(p) {
		if ex.os == os {
			os.cs.Consumed(len(p))
		}
		return
	}
	if ex.os != os {
		return // ended
	}
	pl := len(ex.pending)
	os.held = append(append(os.held[:0], ex.pending...), ex.after...)
	ex.pending = os.held[:pl:pl]
	if ex.after != nil {
		ex.after = os.held[pl:]
	}
	// What is held may include bytes a sniffed head kept from earlier
	// DATA, whose window went back then: only p's share is owed.
	os.owed = min(len(os.held), len(p))
	os.cs.Consumed(len(p) - os.owed)
}

// resume: the client took everything it was given (OnWritable). Those
// bytes go back to the stream's window, and what arrived meanwhile is
// given next; an ended response ends once all of it went.
func (os *originStream) resume() {
	hc := os.hc
	if hc == nil {
		return
	}
	os.cs.Consumed(os.owed)
	os.held, os.owed = os.held[:0], 0
	if len(os.more) > 0 {
		p := os.more
		os.more = nil
		os.give(p)
		if os.ex.os != os {
			return
		}
		if len(os.held) > 0 {
			return
		}
		os.more = p[:0]
	}
	if os.ended {
		os.ended = false
		os.done(os.trailers)
	}
	hc.later()
}

// OnEnd implements h2.StreamEvents.
func (os *originStream) OnEnd(trailers []stream.Field) {
	if os.ex.os != os {
		return
	}
	if len(os.held) > 0 || len(os.more) > 0 {
		os.ended, os.trailers = true, trailers
		return
	}
	os.done(trailers)
}

// done ends the exchange with the complete response.
func (os *originStream) done(trailers []stream.Field) {
	ex := os.ex
	if ex.phase == phaseTunnel {
		ex.originEnded()
		return
	}
	if ex.holding && !ex.sendHeld(nil) {
		return
	}
	ex.log.NoteGRPC(trailers)
	if len(trailers) > 0 && ex.log.RespHeader != nil {
		// As Caddy's access log shows them: gRPC's status is here.
		for _, f := range trailers {
			ex.log.RespHeader = append(ex.log.RespHeader, stream.Field{Name: "Trailer:" + textproto.CanonicalMIMEHeaderKey(f.Name), Value: f.Value})
		}
	}
	ex.end(outcome{tell: tellClose, reusable: true, trailers: trailers})
}

// OnSent implements h2.StreamEvents: request body bytes left for the
// origin, and the client may send as many more.
func (os *originStream) OnSent(n int) {
	ex := os.ex
	if ex.os != os || os.hc == nil {
		return
	}
	if ex.phase == phaseTunnel {
		os.tunnelSent(n)
		return
	}
	if !os.hc.connecting() {
		ex.early, ex.earlyBody = nil, 0
	}
	ex.w.Consumed(n)
}

// OnReset implements h2.StreamEvents: the stream ended without a
// complete response. A connection that failed under it fails the
// exchange as an HTTP/1.1 connection's failure would (connect errors
// move to another upstream, a kept-alive connection's race is retried);
// a stream the origin did not process is retried once when no body
// went; any other reset reaches the client as a reset with the origin's
// code, whether or not a head went out (a 502 would hide the code a
// gRPC client acts on).
func (os *originStream) OnReset(code http2.ErrCode, unprocessed bool) {
	ex := os.ex
	if ex.os != os {
		return
	}
	hc := os.hc
	ex.os = nil
	os.finish(false) // over already: only let go of, before a retry opens a stream
	switch {
	case ex.phase == phaseDone:
	case ex.tun != nil && ex.phase == phaseSent && hc.cc.Settled() && !hc.cc.ExtendedConnect() && hc.err == nil:
		// As in Caddy, which has no other way to such an origin.
		ex.upstreamFailed(observe.ReasonBroken)
		ex.end(answer(502, observe.ReasonBroken, "upstream does not accept extended CONNECT (RFC 8441)"))
	case ex.phase == phaseTunnel && hc.err == nil:
		ex.end(resetting(uint32(code), observe.ReasonTunnelBroken, "stream reset by upstream: "+code.String()))
	case hc.err == errSpeaksHTTP1:
		ex.acquire(ex.pool, false) // the pool speaks HTTP/1.1 now
	case hc.err != nil && hc.connecting():
		ex.connectFailed(hc.err)
	case hc.err != nil:
		ex.backendFailed(hc.err)
	case unprocessed && !os.sentBody && !ex.retried:
		ex.retried = true
		ex.pool.up.Retries.Add(1)
		ex.acquire(ex.pool, false)
	case ex.phase == phaseStreaming:
		ex.upstreamFailed(observe.ReasonBrokenMidResponse)
		ex.pool.up.Broken.Add(1)
		ex.end(resetting(uint32(code), observe.ReasonBrokenMidResponse, "stream reset by upstream: "+code.String()))
	default:
		if code != http2.ErrCodeRefusedStream && code != http2.ErrCodeNo && code != http2.ErrCodeCancel {
			ex.upstreamFailed(observe.ReasonBroken)
		}
		ex.end(resetting(uint32(code), observe.ReasonBroken, "stream reset by upstream: "+code.String()))
	}
}
