//go:build pollproxy_panichook

package server

import "github.com/pollproxy/pollproxy/proxy/stream"

// PanicHeader is the request field that makes a pollproxy built with the
// pollproxy_panichook tag panic while routing the request, as a bug in a
// site's handlers would: how the command's tests check, at the process
// level, that a panic is contained to its connection. A release build has
// no such field (serve.go) and pays nothing for the hook.
const PanicHeader = "x-pollproxy-panic"

// Serve hands a request to the loop's current handler, or panics when the
// request asks for it (PanicHeader).
func (ls *loopState) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	if v, ok := req.Get(PanicHeader); ok {
		panic("pollproxy_panichook: " + v)
	}
	return ls.handler.Serve(req, w)
}
