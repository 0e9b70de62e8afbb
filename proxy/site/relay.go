package site

import "github.com/pollproxy/pollproxy/proxy/stream"

// relay is a request whose answer is first another exchange's, the
// relayed one: forward_auth's subrequest, a reverse_proxy with
// handle_response, whatever an intercept watches. That exchange writes to
// the relay (relayReply), whose response head decides: the response is
// the client's as written (passing); or, picked by a response matcher or
// a 2xx to forward_auth, it is taken and the request re-enters its routes
// (resumeWith) — the block's routes, then on past the route that relayed
// it. A taken response's body is read and dropped unless copy_response
// sends it after all (copying). The relay is also the request's Events
// for the front end, passing each to whichever answer it concerns.
//
// The relay's lifecycle is one phase, changed only by pass, take and
// copyResponse:
//
//	phase           event                                        next
//	relayDeciding   a final head the handlers leave alone,       relayPassing
//	                a replace_status match, an error routed
//	                to the client (pass)
//	relayDeciding   a response matcher's match or forward_auth's relayTaken
//	                2xx that hands on (take)
//	relayTaken      copy_response (copyResponse)                 relayCopying
//
// relayPassing and relayCopying are final: the relayed response is the
// client's, written through cw. In relayTaken it is read and dropped.
// 1xx heads leave the phase as it is.
type relay struct {
	// hold keeps the client's body for forward_auth, whose subrequest
	// never gets it; otherwise the relayed exchange has the body and
	// hold only keeps w and the routes' answer (inner).
	hold
	h   *Handler
	req *stream.Request
	cw  stream.ResponseWriter // the client's, with the response edits matched before
	at  *resumePoint          // where the request re-enters the routes

	// The route that relayed: its handle_response, and forward_auth's
	// copy_headers.
	responses []ResponseHandler
	copy      []CopyField

	// What kind of relay this is, fixed when it is made: not state.
	auth bool           // forward_auth: the relayed exchange serves sub
	icpt bool           // intercept: the routes do not go on past it
	sub  stream.Request // forward_auth's subrequest

	phase relayPhase

	origin stream.Events // the relayed exchange
	// originReleased is apart from the phase: the relayed exchange is
	// released when the front end is done (any phase) or when a taken
	// response ends (relayTaken), and once released it may serve another
	// request, so nothing may reach it whatever the phase.
	originReleased bool

	// the taken response's head, for copy_response
	status int
	fields []stream.Field
	end    bool
}

// relayPhase is where a relay stands with the relayed response (see
// relay).
type relayPhase uint8

const (
	relayDeciding relayPhase = iota // no final head yet: whose the response is is open
	relayPassing                    // the relayed response is the client's as written
	relayTaken                      // the relayed response was taken: the routes answer, its body is dropped
	relayCopying                    // copy_response: the taken response goes to the client after all
)

// toClient reports whether the relayed response goes to the client.
func (r *relay) toClient() bool { return r.phase == relayPassing || r.phase == relayCopying }

func (r *relay) live() bool { return r.origin != nil && !r.originReleased }

// releaseOrigin releases the relayed exchange once: after that it may
// serve another request, so nothing may reach it any more.
func (r *relay) releaseOrigin() {
	if r.originReleased {
		return
	}
	r.originReleased = true
	if rel, ok := r.origin.(stream.Releaser); ok {
		rel.OnRelease()
	}
}

// OnBody holds the body for forward_auth; otherwise it is the relayed
// exchange's (once that is released, the rest is dropped).
func (r *relay) OnBody(p []byte) {
	switch {
	case r.auth:
		r.hold.OnBody(p)
	case r.live():
		r.origin.OnBody(p)
	default:
		r.w.Consumed(len(p))
	}
}

func (r *relay) OnBodyEnd(trailers []stream.Field) {
	switch {
	case r.auth:
		r.hold.OnBodyEnd(trailers)
	case r.live():
		r.origin.OnBodyEnd(trailers)
	}
}

// OnWritable goes to whichever answer writes to the client: the relayed
// exchange when its response passes; otherwise the routes' answer, which
// for copy_response passes it on to the relayed exchange once the
// writers the routes put in between (an encoder) have sent what they
// hold.
func (r *relay) OnWritable() {
	switch {
	case r.phase == relayPassing && r.live():
		r.origin.OnWritable()
	case r.inner != nil:
		r.inner.OnWritable()
	}
}

// OnAbort: the client went away; so goes the relayed exchange, unless its
// response was taken (it then ends on its own).
func (r *relay) OnAbort(err error) {
	r.hold.OnAbort(err)
	if (r.phase == relayDeciding || r.phase == relayPassing) && r.live() {
		r.origin.OnAbort(err)
	}
}

// OnRelease: the front end is done with the request, so are both answers.
func (r *relay) OnRelease() {
	r.hold.OnRelease()
	r.releaseOrigin()
}

// take hands the request to the routes: the block's, then on past the
// route that relayed it (for an intercept, to orElse instead).
func (r *relay) take(routes []Node, status int, fields []stream.Field, end bool) {
	r.phase = relayTaken
	r.status, r.fields, r.end = status, r.req.Handoff.Header, end
	var orElse *Node
	if r.icpt {
		orElse = answerNode(ErrorResponse(status))
	}
	if r.auth {
		// The body is still held: it goes to what answers now.
		r.handOver(r.h.resumeWith(r.at, routes, orElse, r.req, (*routesWriter)(r)))
		return
	}
	// The relayed exchange had the body: the routes answer without one.
	q := r.req
	q.HasBody, q.ContentLength, q.Upgrade = false, -1, ""
	r.answered = true
	r.inner = r.h.resumeWith(r.at, routes, orElse, q, (*routesWriter)(r))
}

// pass makes the relayed response the client's.
func (r *relay) pass() {
	r.phase = relayPassing
	if r.auth {
		r.handOver(nil) // the app never runs: the held body is drained
	}
}

// relayReply is the relayed exchange's ResponseWriter.
type relayReply relay

// WriteHeader decides on the relayed response's final head: a 2xx to
// forward_auth copies its fields and lets the request on; a response
// handler's match is taken by its routes or, with replace_status, passes
// with that status; anything else is the client's as written.
func (o *relayReply) WriteHeader(status int, fields []stream.Field, end bool) error {
	r := (*relay)(o)
	switch {
	case r.toClient():
		return r.cw.WriteHeader(status, fields, end)
	case r.phase == relayTaken:
		return nil
	case status < 200:
		if r.auth {
			return nil // the auth service's 1xx are not the client's
		}
		return r.cw.WriteHeader(status, fields, end)
	case r.gone:
		return stream.ErrStreamClosed
	case r.auth && status < 300:
		r.copyFields(fields)
		if handOn(r.req, status, fields) {
			r.take(nil, status, fields, end)
			return nil
		}
	}
	if rh := matchResponse(r.responses, status, fields); rh != nil {
		if rh.Status != 0 {
			status = rh.Status
		} else if handOn(r.req, status, fields) {
			r.take(rh.Routes, status, fields, end)
			return nil
		}
	}
	r.pass()
	return r.cw.WriteHeader(status, fields, end)
}

// Write passes the relayed body to the client, or drops a taken one.
func (o *relayReply) Write(p []byte) (int, error) {
	if r := (*relay)(o); r.toClient() {
		return r.cw.Write(p)
	}
	return len(p), nil
}

// Close ends the relayed response. A taken one's exchange is released
// from the loop's task queue: it is still inside its ending here.
func (o *relayReply) Close(trailers []stream.Field) error {
	r := (*relay)(o)
	if r.toClient() {
		return r.cw.Close(trailers)
	}
	if r.phase == relayTaken {
		r.h.loop.Post(r.releaseOrigin)
	}
	return nil
}

// Reset ends the relayed exchange. Unless its response was taken, that
// exchange was the client's answer, and its reset is the client's too,
// also before any head (an abort under an intercept): dropped, it would
// leave the client waiting forever.
func (o *relayReply) Reset(code uint32) {
	r := (*relay)(o)
	if r.phase == relayTaken {
		r.h.loop.Post(r.releaseOrigin)
		return
	}
	r.cw.Reset(code)
}

// Consumed: the relayed exchange took the client's body (forward_auth's
// subrequest has none).
func (o *relayReply) Consumed(n int) {
	if r := (*relay)(o); !r.auth {
		r.w.Consumed(n)
	}
}

// Unwrap implements stream.Unwrapper: the relayed response goes to cw
// when it goes anywhere.
func (o *relayReply) Unwrap() stream.ResponseWriter { return o.cw }

// Replaced implements stream.Replacer: a taken response is not the
// client's, the routes' answer is.
func (o *relayReply) Replaced() bool {
	return o.phase == relayTaken || o.phase == relayCopying
}

// RefuseBody passes on to the client's writer, unless the relayed
// exchange is forward_auth's subrequest: the client's body is not its to
// refuse.
func (o *relayReply) RefuseBody() {
	if !o.auth {
		stream.RefuseBody(o.w)
	}
}

// RouteError passes an error pollproxy answers for the relayed exchange
// (its origin down or slow) on to the site's error routes, as Caddy's
// reverse proxy returns it to handle_errors; it is never a response the
// handlers match. Refused, the error answer is the client's. It goes
// through cw, whose immediate header edits stay on the error's answer.
func (o *relayReply) RouteError(status int, message string, fields []stream.Field) bool {
	r := (*relay)(o)
	if r.phase != relayDeciding {
		return false
	}
	r.pass()
	return stream.RouteErrorFields(r.cw, status, message, fields)
}

// routesWriter is the ResponseWriter of what the routes answer: the
// client's, and copy_response's way back to the taken response.
type routesWriter relay

func (rw *routesWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	return rw.w.WriteHeader(status, fields, end)
}
func (rw *routesWriter) Write(p []byte) (int, error)         { return rw.w.Write(p) }
func (rw *routesWriter) Close(trailers []stream.Field) error { return rw.w.Close(trailers) }
func (rw *routesWriter) Reset(code uint32)                   { rw.w.Reset(code) }
func (rw *routesWriter) Consumed(n int)                      { rw.w.Consumed(n) }

// Unwrap implements stream.Unwrapper.
func (rw *routesWriter) Unwrap() stream.ResponseWriter { return rw.w }

// copyResponse sends the taken response after all (copy_response),
// through w (the routes' writer with their response edits), with status
// when not 0.
func (rw *routesWriter) copyResponse(w stream.ResponseWriter, status int) stream.Events {
	r := (*relay)(rw)
	if status == 0 {
		status = r.status
	}
	r.phase, r.cw = relayCopying, w
	r.cw.WriteHeader(status, r.fields, r.end)
	return (*copying)(r)
}

// copying is the Events of copy_response's answer: the taken response
// goes on from the relayed exchange, which hears OnWritable from here.
// The client's body is the relayed exchange's or dropped (relay.OnBody),
// never this answer's.
type copying relay

func (c *copying) OnBody(p []byte)        { c.w.Consumed(len(p)) }
func (*copying) OnBodyEnd([]stream.Field) {}
func (*copying) OnAbort(error)            {}

func (c *copying) OnWritable() {
	if r := (*relay)(c); r.live() {
		r.origin.OnWritable()
	}
}

// OnRelease releases nothing: the relay, the request's Events, releases
// the relayed exchange itself. (Without it, hold's would be promoted
// here and call back into the routes' answer.)
func (*copying) OnRelease() {}

var (
	_ stream.Events         = (*relay)(nil)
	_ stream.Releaser       = (*relay)(nil)
	_ stream.ResponseWriter = (*relayReply)(nil)
	_ stream.ErrorRouter    = (*relayReply)(nil)
	_ stream.BodyRefuser    = (*relayReply)(nil)
	_ stream.Unwrapper      = (*relayReply)(nil)
	_ stream.Replacer       = (*relayReply)(nil)
	_ stream.ResponseWriter = (*routesWriter)(nil)
	_ stream.Unwrapper      = (*routesWriter)(nil)
	_ stream.Releaser       = (*copying)(nil)
	_ copier                = (*routesWriter)(nil)
)
