package route

import "github.com/pollproxy/pollproxy/proxy/stream"

// Re-entering the routes: the one mechanism behind forward_auth,
// handle_response, intercept and handle_errors. Some routes hand the
// request to another exchange before anything answers it (relay.go): an
// auth service's answer, an origin's response a matcher picks, any
// handler's response an intercept watches. When that answer is taken,
// the request re-enters the site's routes where it left them: the
// evaluation stack saved at that route (a resumePoint), with the taken
// block's routes on top, evaluated on the loop like any request. An error
// pollproxy answers itself re-enters the error routes the same way
// (errors.go). Meanwhile a request whose body must wait (forward_auth's)
// is parked: its body is held, unread, so the client's flow-control
// window bounds it, and handed to whatever answers in the end, or drained
// if that is the other exchange's answer.

// frame is one list of routes being evaluated, and how far.
type frame struct {
	nodes []Node
	i     int    // the next route to evaluate
	done  uint64 // the exclusive groups of the list that ran
}

// resumePoint is where a request re-enters its site's routes: the
// evaluation stack just past the route that handed it on, and the
// response edits matched before it.
type resumePoint struct {
	stack []frame
	resp  []*Node
}

// savePoint copies where evaluation stands, for a request that leaves the
// table and comes back (the handler's stack serves the next request
// meanwhile).
func (h *Handler) savePoint() *resumePoint {
	return &resumePoint{stack: append([]frame(nil), h.stack...), resp: append([]*Node(nil), h.resp...)}
}

// resumeWith re-enters the routes at p for req, with nodes (a
// handle_response block) evaluated first, and hands the request to what
// answers there, as Serve does from the start; when nothing does, orElse
// answers (nil: Caddy's empty 200). It runs on the loop from one of its
// entry points (the other exchange's events), never inside another
// evaluation, so the handler's scratch state is free.
func (h *Handler) resumeWith(p *resumePoint, nodes []Node, orElse *Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	h.ctx.Reset(req, h.clientFn)
	h.resp = append(h.resp[:0], p.resp...)
	h.auths = h.auths[:0]
	h.icpt = nil
	h.stack = append(h.stack[:0], p.stack...)
	if len(nodes) > 0 {
		h.stack = append(h.stack, frame{nodes: nodes})
	}
	t := h.walk()
	if t == nil {
		t = orElse
	}
	return h.finish(t, req, w)
}

// maxDepth bounds how many times one request re-enters its routes. The
// routes are a tree, so a request cannot come back to where it was; the
// bound is there for whatever future route makes that untrue.
const maxDepth = 8

// handOn records on req what re-entering its routes hands them: the
// origin's response. It reports false past maxDepth.
// The error being rendered, if any, stays: {err.*} still read it in an
// error route's handle_response.
func handOn(req *stream.Request, status int, fields []stream.Field) bool {
	var h stream.Handoff
	if req.Handoff != nil {
		h = *req.Handoff
		h.Depth++
	}
	if h.Depth >= maxDepth {
		return false
	}
	h.Status, h.Header = status, append([]stream.Field(nil), fields...)
	req.Handoff = &h
	return true
}

// parked is a request whose answer is not chosen yet. It holds the
// client's body bytes meanwhile: they are not reported Consumed, so the
// client's flow-control window (h2) or the body window (HTTP/1.1) bounds
// them. Once answered, it hands everything it held to the answer's Events
// (handTo) and passes every later body event on.
type parked struct {
	w        stream.ResponseWriter // the client's
	inner    stream.Events         // the answer's, once dispatched
	answered bool
	gone     bool // the client went away while parked
	body     []byte
	ended    bool
	trailers []stream.Field
}

// handTo ends the parking: inner is the answer's Events, nil when the
// answer wants no body (it was written already), whose held and later
// body bytes are then drained.
func (p *parked) handTo(inner stream.Events) {
	p.answered, p.inner = true, inner
	body := p.body
	p.body = nil
	if inner == nil {
		if len(body) > 0 {
			p.w.Consumed(len(body))
		}
		return
	}
	if len(body) > 0 {
		inner.OnBody(body)
	}
	if p.ended {
		inner.OnBodyEnd(p.trailers)
		p.trailers = nil
	}
}

// OnBody holds body bytes while parked, and passes them on afterwards.
func (p *parked) OnBody(b []byte) {
	switch {
	case p.inner != nil:
		p.inner.OnBody(b)
	case p.answered:
		p.w.Consumed(len(b))
	default:
		p.body = append(p.body, b...)
	}
}

// OnBodyEnd notes the body's end while parked, and passes it on
// afterwards.
func (p *parked) OnBodyEnd(trailers []stream.Field) {
	switch {
	case p.inner != nil:
		p.inner.OnBodyEnd(trailers)
	case !p.answered:
		p.ended = true
		p.trailers = append([]stream.Field(nil), trailers...)
	}
}

// abort: the client went away.
func (p *parked) abort(err error) {
	p.gone, p.body = true, nil
	if p.inner != nil {
		p.inner.OnAbort(err)
	}
}

// release passes the front end's release on to the answer, so its memory
// is reused as without the parking.
func (p *parked) release() {
	if r, ok := p.inner.(stream.Releaser); ok {
		r.OnRelease()
	}
}
