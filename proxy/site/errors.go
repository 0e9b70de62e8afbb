package site

import (
	"math/rand/v2"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// handle_errors: the errors a site's handlers answer themselves (a
// reverse proxy's 502 and 504, an error directive) re-enter the site's
// error routes, as in Caddy. A site with error routes watches each
// request (errWatch): it is the handlers' ResponseWriter, so their error
// answer reaches it first (stream.ErrorRouter), and the request's Events
// for the front end, so the answer the error routes chose gets the
// client's events from then on.

// ErrorStatus matches the status of the error being rendered:
// handle_errors' status codes (404, or 5xx stored as 5).
type ErrorStatus []int

// Match implements Matcher.
func (m ErrorStatus) Match(c *route.Ctx) bool {
	h := c.Req.Handoff
	if h == nil {
		return false
	}
	for _, s := range m {
		if s == h.ErrStatus || s < 10 && h.ErrStatus/100 == s {
			return true
		}
	}
	return false
}

// ErrorResponse is the error directive's answer where no error routes
// render it: the status and an empty body, as Caddy writes it.
func ErrorResponse(status int) *static.Handler {
	return static.NewResponse(status, []stream.Field{{Name: "content-length", Value: "0"}}, nil)
}

// raise answers the error directive's route n: to the site's error
// routes when w reaches them, or with the bare status.
func (h *Handler) raise(n *Error, req *stream.Request, w stream.ResponseWriter) stream.Events {
	if stream.RouteError(w, n.Status, n.Message.Expand(req)) {
		return drain{w}
	}
	return n.Static.Serve(req, w)
}

// drain is the Events of a request whose answer is written elsewhere: its
// body is read and dropped.
type drain struct{ w stream.ResponseWriter }

func (d drain) OnBody(p []byte)        { d.w.Consumed(len(p)) }
func (drain) OnBodyEnd([]stream.Field) {}
func (drain) OnWritable()              {}
func (drain) OnAbort(error)            {}

// watch serves req through the routes with an errWatch in front.
func (h *Handler) watch(req *stream.Request, w stream.ResponseWriter) stream.Events {
	ew := &errWatch{h: h, w: w, req: req, method: req.Method, path: req.Path, serving: true}
	ev := h.serve(req, ew)
	ew.serving = false
	if ew.routed {
		ew.old = ev // it answered at once, with an error the routes took
	} else {
		ew.inner = ev
		ew.root = h.ctx.Root // what the routes set: the handler's context is still this request's
	}
	return ew
}

// errWatch watches one request of a site with error routes.
type errWatch struct {
	h            *Handler
	w            stream.ResponseWriter // the client's
	req          *stream.Request
	method, path string // the request's, before any rewrite: Caddy's error routes see them
	root         string // the root the routes set: the error routes start from it
	serving      bool   // the routes are being evaluated: the handler's context is the request's

	inner  stream.Events // whatever answers now
	old    stream.Events // the handler whose error the routes took
	routed bool          // the error routes took an error
	status int           // that error's status
	gone   bool
}

// RouteError implements stream.ErrorRouter: the first error re-enters
// the site's error routes; an error while they answer (their reverse
// proxy down too) is the first error's status with an empty body, as in
// Caddy, never a second pass.
//
// fields, the response fields set when the error happened, stay on the
// answer: the error routes start from them (Handoff.Fields), as Caddy's
// write into the response header map its handlers had filled.
func (ew *errWatch) RouteError(status int, message string, fields []stream.Field) bool {
	if ew.gone {
		return false
	}
	if ew.routed {
		fs := make([]stream.Field, 0, len(fields)+1)
		for _, f := range fields {
			if f.Name != "content-length" {
				fs = append(fs, f)
			}
		}
		ew.w.WriteHeader(ew.status, append(fs, stream.Field{Name: "content-length", Value: "0"}), true)
		return true
	}
	ew.routed, ew.status = true, status
	if ew.serving { // an error raised while the routes ran (the error directive)
		ew.root = ew.h.ctx.Root
	}
	ew.old, ew.inner = ew.inner, nil
	r := ew.req
	r.Method, r.Path, r.Upgrade = ew.method, ew.path, ""
	// The body stays with the handler that failed, read and dropped: the
	// error routes answer without it.
	r.HasBody, r.ContentLength = false, -1
	depth := 0
	if r.Handoff != nil {
		depth = r.Handoff.Depth + 1
	}
	r.Handoff = &stream.Handoff{ErrStatus: status, ErrMessage: message, ErrID: errorID(), Root: ew.root, Depth: depth,
		Fields: append([]stream.Field(nil), fields...)}
	ew.inner = ew.h.serveFrom(ew.h.t.Errors, r, ew)
	return true
}

// errorID is an identifier for one occurrence of an error, as Caddy's
// {err.id}: nine random characters.
func errorID() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 9)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

func (ew *errWatch) WriteHeader(status int, fields []stream.Field, end bool) error {
	return ew.w.WriteHeader(status, fields, end)
}
func (ew *errWatch) Write(p []byte) (int, error)         { return ew.w.Write(p) }
func (ew *errWatch) Close(trailers []stream.Field) error { return ew.w.Close(trailers) }
func (ew *errWatch) Reset(code uint32)                   { ew.w.Reset(code) }
func (ew *errWatch) Consumed(n int)                      { ew.w.Consumed(n) }

// Unwrap implements stream.Unwrapper.
func (ew *errWatch) Unwrap() stream.ResponseWriter { return ew.w }

// RefuseBody passes stream.BodyRefuser on only while the first handler
// answers: the error routes' answer drops the body itself.
func (ew *errWatch) RefuseBody() {
	if !ew.routed {
		stream.RefuseBody(ew.w)
	}
}

// OnBody goes to the handler; once the error routes answer, the body is
// dropped.
func (ew *errWatch) OnBody(p []byte) {
	switch {
	case ew.routed:
		ew.w.Consumed(len(p))
	case ew.inner != nil:
		ew.inner.OnBody(p)
	}
}

func (ew *errWatch) OnBodyEnd(trailers []stream.Field) {
	if !ew.routed && ew.inner != nil {
		ew.inner.OnBodyEnd(trailers)
	}
}

func (ew *errWatch) OnWritable() {
	if ew.inner != nil {
		ew.inner.OnWritable()
	}
}

func (ew *errWatch) OnAbort(err error) {
	ew.gone = true
	if ew.inner != nil {
		ew.inner.OnAbort(err)
	}
}

// OnRelease releases both answers, the failed handler's and the error
// routes'.
func (ew *errWatch) OnRelease() {
	for _, ev := range [2]stream.Events{ew.old, ew.inner} {
		if r, ok := ev.(stream.Releaser); ok {
			r.OnRelease()
		}
	}
}

var (
	_ stream.Events         = (*errWatch)(nil)
	_ stream.Releaser       = (*errWatch)(nil)
	_ stream.ResponseWriter = (*errWatch)(nil)
	_ stream.ErrorRouter    = (*errWatch)(nil)
	_ stream.BodyRefuser    = (*errWatch)(nil)
	_ stream.Unwrapper      = (*errWatch)(nil)
)
