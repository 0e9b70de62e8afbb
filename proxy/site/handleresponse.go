package site

import (
	"slices"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/route"
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
	Match  *route.ResponseMatch // nil: every response
	Status int                  // replace_status
	Routes []Node
}

// matchResponse returns the first handler matching the response, or nil.
func matchResponse(hs []ResponseHandler, status int, fields []stream.Field) *ResponseHandler {
	for i := range hs {
		if hs[i].Match == nil || hs[i].Match.Matches(status, fields) {
			return &hs[i]
		}
	}
	return nil
}

// proxyRouted proxies req through n, a reverse_proxy with
// handle_response, in a relay. A response that passes goes through the
// response edits and encodes matched before (resp), as any proxied one.
func (h *Handler) proxyRouted(n *Proxy, at *resumePoint, resp edits, req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &relay{hold: hold{w: w}, h: h, req: req, responses: n.Responses, at: at}
	var one [1]eventer
	cw, encs := h.edit(w, req, resp, mergeAdd, one[:0])
	r.cw = cw
	r.origin = h.proxies[n.Index].Serve(req, (*relayReply)(r))
	return encoded(r, encs)
}

// intercept answers a request that matched an intercept: whatever
// answers it (n) writes to the intercept, which decides on its head.
// The handle_response routes do not go on past the intercept, as in
// Caddy: when they do not answer, the response is the intercepted
// status with no body.
func (h *Handler) intercept(n *Node, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &relay{hold: hold{w: w}, h: h, req: req, cw: w, responses: h.icpt.Responses, at: &resumePoint{resp: h.edits().keep(), vars: vars}, icpt: true}
	h.icpt = nil
	r.origin = h.finish(n, vars, req, (*relayReply)(r))
	return r
}

// copier is a writer that reaches a handle_response's origin response.
type copier interface {
	copyResponse(w stream.ResponseWriter, status int) stream.Events
}

// copyResponse answers copy_response's route n.
func (h *Handler) copyResponse(n *CopyResponse, req *stream.Request, w stream.ResponseWriter) stream.Events {
	c, ok := stream.Find[copier](w)
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
// matched that f lets through. Its framing (Content-Length) is never
// copied: it described that response's body, not this one's, and two
// lengths make a head no front end can send.
func (f *HeaderFilter) appendCopied(fs []stream.Field, h *stream.Handoff) []stream.Field {
	if h == nil {
		return fs
	}
	for _, fl := range h.Header {
		if field.Lookup(fl.Name).Has(field.Framing) ||
			len(f.Include) > 0 && !slices.Contains(f.Include, fl.Name) || slices.Contains(f.Exclude, fl.Name) {
			continue
		}
		fs = append(fs, fl)
	}
	return fs
}
