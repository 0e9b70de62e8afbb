package site

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
// evaluation stack just past the route that handed it on, the response
// edits matched before it, and what routing had decided (the root).
type resumePoint struct {
	stack []frame
	resp  edits
	vars  reqVars
}

// savePoint copies where evaluation stands, for a request that leaves the
// table and comes back (the handler's stack serves the next request
// meanwhile).
func (h *Handler) savePoint(vars reqVars) *resumePoint {
	return &resumePoint{stack: append([]frame(nil), h.stack...), resp: h.edits().keep(), vars: vars}
}

// resumeWith re-enters the routes at p for req, with nodes (a
// handle_response block) evaluated first, and hands the request to what
// answers there, as Serve does from the start; when nothing does, orElse
// answers (nil: Caddy's empty 200). It runs on the loop from one of its
// entry points (the other exchange's events), never inside another
// evaluation, so the handler's scratch state is free.
func (h *Handler) resumeWith(p *resumePoint, nodes []Node, orElse *Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	h.ctx.Reset(req, h.clientFn)
	h.ctx.Root, req.Root = p.vars.root, p.vars.root
	h.resp = append(h.resp[:0], p.resp.dirs...)
	h.preset = append(h.preset[:0], p.resp.preset...)
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
	// A root set in the re-entered routes (X-Accel-Redirect's root and
	// file_server) is the request's from here.
	vars := p.vars
	vars.root = h.ctx.Root
	return h.finish(t, vars, req, w)
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
