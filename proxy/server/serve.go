//go:build !pollproxy_panichook

package server

import "github.com/pollproxy/pollproxy/proxy/stream"

// Serve hands a request to the loop's current handler. Front ends are
// given the loopState rather than the handler itself so that SetHandler
// reaches requests on connections that are already open.
func (ls *loopState) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	return ls.handler.Serve(req, w)
}
