package route

import (
	"slices"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// reverse_proxy's handle_response: an origin response a response matcher
// picks does not go to the client; the request re-enters the routes of
// the handle_response block instead, with {rp.status_code} and
// {rp.header.*} filled from that response, and goes on past the
// reverse_proxy when they do not answer, as Caddy's do. copy_response
// sends the origin's response after all; copy_response_headers copies
// its fields onto whatever answers.

// ResponseHandler is one of reverse_proxy's handle_response or
// replace_status: the origin responses it matches go to Routes instead of
// the client, or, with Status, go with that status.
type ResponseHandler struct {
	Match  *ResponseMatch // nil: every response
	Status int            // replace_status
	Routes []Node
}

// maxDepth bounds how many times one request re-enters its routes. The
// routes are a tree, so a request cannot come back to where it was; the
// bound is there for whatever future route makes that untrue.
const maxDepth = 8

// match returns the first handler matching the response, or nil.
func matchResponse(hs []ResponseHandler, status int, fields []stream.Field) *ResponseHandler {
	for i := range hs {
		if hs[i].Match == nil || hs[i].Match.Matches(status, fields) {
			return &hs[i]
		}
	}
	return nil
}

// handOn records on req what re-entering its routes hands them: the
// origin's response. It reports false past maxDepth.
func handOn(req *stream.Request, status int, fields []stream.Field) bool {
	depth := 0
	if req.Handoff != nil {
		depth = req.Handoff.Depth + 1
	}
	if depth >= maxDepth {
		return false
	}
	req.Handoff = &stream.Handoff{Status: status, Header: append([]stream.Field(nil), fields...), Depth: depth}
	return true
}

// respRoute is a request proxied by a reverse_proxy with handle_response:
// the Events of the front end, and, as originReply, the ResponseWriter of
// the proxy's exchange, which gets the request and its body as usual.
type respRoute struct {
	h   *Handler
	req *stream.Request
	w   stream.ResponseWriter // the client's
	cw  stream.ResponseWriter // the client's, with the response edits matched before
	n   *Node
	at  *resumePoint

	origin         stream.Events // the proxy's exchange
	originReleased bool
	passing        bool // the origin's response is the client's
	routed         bool // a handle_response took it
	copying        bool // copy_response: the origin's body goes to the client
	icpt           bool // intercept's, not a reverse_proxy's
	inner          stream.Events

	// the origin's final head, for copy_response
	status int
	fields []stream.Field
	end    bool
}

// proxyRouted proxies req through n, a reverse_proxy with
// handle_response.
func (h *Handler) proxyRouted(n *Node, at *resumePoint, resp []*Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	rr := &respRoute{h: h, req: req, w: w, cw: w, n: n, at: at}
	if len(resp) > 0 {
		rr.cw = h.wrap(w, req, resp)
	}
	rr.origin = h.proxies[n.Proxy].Serve(req, (*originReply)(rr))
	return rr
}

// resumeWith re-enters the routes at p with nodes evaluated first, for a
// request handed on by another exchange.
// When they do not answer, orElse does (nil: Caddy's empty 200).
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

// intercept answers a request that matched an intercept: whatever
// answers it (n) writes to the intercept, which decides on its head.
// The handle_response routes do not go on past the intercept, as in
// Caddy: when they do not answer, the response is the intercepted
// status with no body.
func (h *Handler) intercept(n *Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	rr := &respRoute{h: h, req: req, w: w, cw: w, n: h.icpt, at: &resumePoint{resp: append([]*Node(nil), h.resp...)}, icpt: true}
	h.icpt = nil
	rr.origin = h.finish(n, req, (*originReply)(rr))
	return rr
}

func (rr *respRoute) releaseOrigin() {
	if rr.originReleased {
		return
	}
	rr.originReleased = true
	if r, ok := rr.origin.(stream.Releaser); ok {
		r.OnRelease()
	}
}

// OnBody goes to the origin's exchange: the request's body is its own
// (once it is released, the rest is dropped).
func (rr *respRoute) OnBody(p []byte) {
	if rr.originReleased || rr.origin == nil {
		rr.w.Consumed(len(p))
		return
	}
	rr.origin.OnBody(p)
}

func (rr *respRoute) OnBodyEnd(trailers []stream.Field) {
	if !rr.originReleased && rr.origin != nil {
		rr.origin.OnBodyEnd(trailers)
	}
}

// OnWritable goes to whichever answer writes to the client.
func (rr *respRoute) OnWritable() {
	switch {
	case (rr.passing || rr.copying) && !rr.originReleased && rr.origin != nil:
		rr.origin.OnWritable()
	case rr.inner != nil:
		rr.inner.OnWritable()
	}
}

func (rr *respRoute) OnAbort(err error) {
	if !rr.originReleased && rr.origin != nil {
		rr.origin.OnAbort(err)
	}
	if rr.inner != nil {
		rr.inner.OnAbort(err)
	}
}

func (rr *respRoute) OnRelease() {
	rr.releaseOrigin()
	if r, ok := rr.inner.(stream.Releaser); ok {
		r.OnRelease()
	}
}

// originReply is the proxy exchange's ResponseWriter.
type originReply respRoute

// WriteHeader picks what becomes of the origin's final head: the client's
// (no handler matched), the client's with another status
// (replace_status), or the handle_response routes'.
func (o *originReply) WriteHeader(status int, fields []stream.Field, end bool) error {
	rr := (*respRoute)(o)
	switch {
	case rr.passing || rr.copying:
		return rr.cw.WriteHeader(status, fields, end)
	case rr.routed:
		return nil
	case status < 200:
		return rr.cw.WriteHeader(status, fields, end)
	}
	rh := matchResponse(rr.n.Responses, status, fields)
	if rh == nil || rh.Status != 0 || !handOn(rr.req, status, fields) {
		rr.passing = true
		if rh != nil && rh.Status != 0 {
			status = rh.Status
		}
		return rr.cw.WriteHeader(status, fields, end)
	}
	rr.routed = true
	rr.status, rr.fields, rr.end = status, rr.req.Handoff.Header, end
	// The body went to the origin: the routes answer without one.
	r := rr.req
	r.HasBody, r.ContentLength, r.Upgrade = false, -1, ""
	var orElse *Node
	if rr.icpt {
		orElse = &Node{Kind: Respond, Static: ErrorResponse(status)}
	}
	rr.inner = rr.h.resumeWith(rr.at, rh.Routes, orElse, r, (*routesWriter)(rr))
	return nil
}

func (o *originReply) Write(p []byte) (int, error) {
	if rr := (*respRoute)(o); rr.passing || rr.copying {
		return rr.cw.Write(p)
	}
	return len(p), nil // a response the routes took: read and dropped
}

// Close ends the origin's response. One the routes took is released from
// the loop's task queue: its exchange is still inside its ending here.
func (o *originReply) Close(trailers []stream.Field) error {
	rr := (*respRoute)(o)
	if rr.passing || rr.copying {
		return rr.cw.Close(trailers)
	}
	if rr.routed {
		rr.h.checks.loop.Post(rr.releaseOrigin)
	}
	return nil
}

func (o *originReply) Reset(code uint32) {
	rr := (*respRoute)(o)
	switch {
	case rr.passing || rr.copying:
		rr.cw.Reset(code)
	case rr.routed:
		rr.h.checks.loop.Post(rr.releaseOrigin)
	}
}

// Consumed: the origin's exchange took the client's body.
func (o *originReply) Consumed(n int) { (*respRoute)(o).w.Consumed(n) }

// RefuseBody passes on to the client's writer.
func (o *originReply) RefuseBody() {
	if r, ok := (*respRoute)(o).w.(stream.BodyRefuser); ok {
		r.RefuseBody()
	}
}

// RouteError passes the proxy's own errors on to handle_errors.
func (o *originReply) RouteError(status int, message string) bool {
	rr := (*respRoute)(o)
	r, ok := rr.w.(stream.ErrorRouter)
	return ok && !rr.routed && r.RouteError(status, message)
}

// routesWriter is the ResponseWriter of what the handle_response routes
// chose: the client's, and copy_response's way back to the origin's
// response.
type routesWriter respRoute

func (rw *routesWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	return rw.w.WriteHeader(status, fields, end)
}
func (rw *routesWriter) Write(p []byte) (int, error)         { return rw.w.Write(p) }
func (rw *routesWriter) Close(trailers []stream.Field) error { return rw.w.Close(trailers) }
func (rw *routesWriter) Reset(code uint32)                   { rw.w.Reset(code) }
func (rw *routesWriter) Consumed(int)                        {}

// RouteError passes an error of the routes' answer on to handle_errors.
func (rw *routesWriter) RouteError(status int, message string) bool {
	r, ok := rw.w.(stream.ErrorRouter)
	return ok && r.RouteError(status, message)
}

// copyResponse sends the origin's response after all (copy_response),
// through w (the routes' writer with their response edits), with status
// when not 0.
func (rw *routesWriter) copyResponse(w stream.ResponseWriter, status int) stream.Events {
	rr := (*respRoute)(rw)
	if status == 0 {
		status = rr.status
	}
	rr.copying, rr.cw = true, w
	rr.cw.WriteHeader(status, rr.fields, rr.end)
	return drain{rr.w}
}

// copier is a writer that reaches a handle_response's origin response.
type copier interface {
	copyResponse(w stream.ResponseWriter, status int) stream.Events
}

// copyResponse answers copy_response's route n.
func (h *Handler) copyResponse(n *Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	c, ok := w.(copier)
	if rw, wrapped := w.(*respWriter); wrapped {
		c, ok = rw.ResponseWriter.(copier)
	}
	if !ok {
		// Caddy refuses copy_response outside handle_response routes at
		// load; pollproxy does too, so this is only a safety net.
		return Responder(500, "").Serve(req, w)
	}
	return c.copyResponse(w, n.Status)
}

// HeaderFilter is copy_response_headers' include or exclude list (lower
// case names).
type HeaderFilter struct {
	Include, Exclude []string
}

// appendCopied appends the fields of the response a handle_response
// matched that f lets through.
func (f *HeaderFilter) appendCopied(fs []stream.Field, h *stream.Handoff) []stream.Field {
	if h == nil {
		return fs
	}
	for _, fl := range h.Header {
		if len(f.Include) > 0 && !slices.Contains(f.Include, fl.Name) || slices.Contains(f.Exclude, fl.Name) {
			continue
		}
		fs = append(fs, fl)
	}
	return fs
}

var (
	_ stream.Events         = (*respRoute)(nil)
	_ stream.Releaser       = (*respRoute)(nil)
	_ stream.ResponseWriter = (*originReply)(nil)
	_ stream.ErrorRouter    = (*originReply)(nil)
	_ stream.ResponseWriter = (*routesWriter)(nil)
	_ copier                = (*routesWriter)(nil)
)
