package route

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// CopyField is one of forward_auth's copy_headers: the auth answer's
// field From, put on the request as To (both lower case).
type CopyField struct {
	From, To string
}

// forwardAuth starts forward_auth's subrequest, Caddy's expansion of it:
// the request's head with method GET, target uri, X-Forwarded-Method and
// X-Forwarded-Uri set to the request's, and no body, to the auth
// service's reverse proxy on this loop. The request waits parked (its
// body held for the app) until the answer's head.
func (h *Handler) forwardAuth(n *Node, at *resumePoint, resp []*Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	f := &forwardWait{parked: parked{w: w}, h: h, req: req, at: at, n: n, cw: w}
	if len(resp) > 0 {
		f.cw = h.wrap(w, req, resp)
	}
	sub := &f.sub
	*sub = *req
	sub.Method, sub.HasBody, sub.ContentLength, sub.Upgrade = "GET", false, -1, ""
	if to := rewriteTarget(n.To, req); to != "" {
		sub.Path = to
	}
	fs := make([]stream.Field, 0, len(req.Header)+2)
	for _, fl := range req.Header {
		switch fl.Name {
		case "x-forwarded-method", "x-forwarded-uri", "content-length", "expect":
			continue // set below, or about a body the auth service never gets
		}
		fs = append(fs, fl)
	}
	sub.Header = append(fs, stream.Field{Name: "x-forwarded-method", Value: req.Method},
		stream.Field{Name: "x-forwarded-uri", Value: req.Path})
	f.auth = h.proxies[n.Proxy].Serve(sub, (*authReply)(f))
	return f
}

// forwardWait is a request parked while the auth service answers
// forward_auth's subrequest. It is the request's Events for the front
// end and, as authReply, the ResponseWriter of the subrequest's exchange.
type forwardWait struct {
	parked
	h   *Handler
	req *stream.Request
	at  *resumePoint // where the request re-enters the routes on a 2xx
	n   *Node
	cw  stream.ResponseWriter // the client's, with the response edits matched before
	sub stream.Request        // the subrequest

	auth         stream.Events // the subrequest's exchange
	authReleased bool          // auth was released: never call it again
	passing      bool          // the auth service's answer is the client's
	granted      bool          // a 2xx, or a handle_response took the answer: the request went on
}

// copyFields puts copy_headers' fields of the auth answer on the request.
// A field named there is removed from the request first, as Caddy does,
// so a client cannot send it when the auth service does not.
func (f *forwardWait) copyFields(answer []stream.Field) {
	r := f.req
	fs := make([]stream.Field, 0, len(r.Header)+len(f.n.Copy))
	for _, fl := range r.Header {
		if !copiedTo(f.n.Copy, fl.Name) {
			fs = append(fs, fl)
		}
	}
	for _, c := range f.n.Copy {
		v := ""
		for _, a := range answer {
			if a.Name == c.From && a.Value != "" {
				v = joinValue(v, a.Value)
			}
		}
		if v != "" {
			fs = append(fs, stream.Field{Name: c.To, Value: v})
		}
	}
	r.Header = fs
}

func copiedTo(cs []CopyField, name string) bool {
	for _, c := range cs {
		if c.To == name {
			return true
		}
	}
	return false
}

// joinValue joins a field's values as Caddy's {http.reverse_proxy.header.*}
// does: with commas.
func joinValue(v, more string) string {
	if v == "" {
		return more
	}
	return v + "," + more
}

// releaseAuth releases the subrequest's exchange once: after that it may
// serve another request, so nothing may reach it any more.
func (f *forwardWait) releaseAuth() {
	if f.authReleased {
		return
	}
	f.authReleased = true
	if r, ok := f.auth.(stream.Releaser); ok {
		r.OnRelease()
	}
}

// OnWritable goes to whichever answer writes to the client.
func (f *forwardWait) OnWritable() {
	switch {
	case f.passing && !f.authReleased:
		f.auth.OnWritable()
	case f.inner != nil:
		f.inner.OnWritable()
	}
}

// OnAbort: the client went away; so goes the subrequest, unless it
// already answered with a 2xx (it then ends on its own).
func (f *forwardWait) OnAbort(err error) {
	f.abort(err)
	if !f.granted && !f.authReleased && f.auth != nil {
		f.auth.OnAbort(err)
	}
}

// OnRelease: the front end is done with the request; so is the
// subrequest's answer when it was the client's.
func (f *forwardWait) OnRelease() {
	f.release()
	if !f.granted {
		f.releaseAuth()
	}
}

// authReply is the subrequest's ResponseWriter: the auth service's
// answer, and the moment the request goes on or is answered.
type authReply forwardWait

// WriteHeader decides on the auth service's final head: a 2xx copies the
// fields and lets the request on to the routes after forward_auth; any
// other status is the client's answer, as the auth service wrote it.
func (a *authReply) WriteHeader(status int, fields []stream.Field, end bool) error {
	f := (*forwardWait)(a)
	switch {
	case f.passing:
		return f.cw.WriteHeader(status, fields, end)
	case f.granted || status < 200:
		return nil
	case f.gone:
		return stream.ErrStreamClosed
	case status < 300:
		f.granted = true
		f.copyFields(fields)
		f.handTo(f.h.resume(f.at, f.req, f.w))
		return nil
	}
	if rh := matchResponse(f.n.Responses, status, fields); rh != nil {
		if rh.Status != 0 {
			status = rh.Status
		} else if handOn(f.req, status, fields) {
			// handle_response: the request (its body still held) goes
			// to the block's routes, and on past forward_auth if they
			// do not answer; the auth answer is not the client's.
			f.granted = true
			f.handTo(f.h.resumeWith(f.at, rh.Routes, nil, f.req, f.w))
			return nil
		}
	}
	f.passing = true
	f.handTo(nil) // the app never runs: its body is drained
	return f.cw.WriteHeader(status, fields, end)
}

// Write passes the answer's body to the client, or drops a 2xx's.
func (a *authReply) Write(p []byte) (int, error) {
	if f := (*forwardWait)(a); f.passing {
		return f.cw.Write(p)
	}
	return len(p), nil
}

// Close ends the answer. A 2xx's exchange is released from the loop's
// task queue: it is still inside its ending here.
func (a *authReply) Close(trailers []stream.Field) error {
	f := (*forwardWait)(a)
	if f.passing {
		return f.cw.Close(trailers)
	}
	if f.granted {
		f.h.checks.loop.Post(f.releaseAuth)
	}
	return nil
}

// Reset resets the client's stream when the answer was the client's.
func (a *authReply) Reset(code uint32) {
	f := (*forwardWait)(a)
	switch {
	case f.passing:
		f.cw.Reset(code)
	case f.granted:
		f.h.checks.loop.Post(f.releaseAuth)
	}
}

// RouteError passes an error pollproxy answers for the auth service (it
// is down, or slow) on to the site's error routes, as Caddy's
// forward_auth, a reverse proxy, returns it to handle_errors.
func (a *authReply) RouteError(status int, message string) bool {
	f := (*forwardWait)(a)
	r, ok := f.w.(stream.ErrorRouter)
	if !ok || f.passing || f.granted {
		return false
	}
	f.passing = true
	f.handTo(nil)
	return r.RouteError(status, message)
}

// Consumed: the subrequest has no body.
func (a *authReply) Consumed(int) {}

// RefuseBody: the subrequest has no body to refuse.
func (a *authReply) RefuseBody() {}

var (
	_ stream.Events         = (*forwardWait)(nil)
	_ stream.Releaser       = (*forwardWait)(nil)
	_ stream.ResponseWriter = (*authReply)(nil)
	_ stream.BodyRefuser    = (*authReply)(nil)
	_ stream.ErrorRouter    = (*authReply)(nil)
)

// ParseCopyField reads one copy_headers argument: Name, or From>To to
// rename it on the way.
func ParseCopyField(arg string) (CopyField, bool) {
	from, to, ok := strings.Cut(arg, ">")
	if !ok {
		to = from
	}
	c := CopyField{From: strings.ToLower(from), To: strings.ToLower(to)}
	return c, c.From != "" && c.To != ""
}
