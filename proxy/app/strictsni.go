package app

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// strictSNIHost is Caddy's servers { strict_sni_host }: a request over
// TLS whose host is not the name its client sent in the ClientHello (no
// name counts as a different one) is answered 421 Misdirected Request,
// with an empty body, before any route sees it. It keeps a client that
// authenticated for one name from asking another site of the listener.
type strictSNIHost struct {
	next stream.Handler
}

var misdirected = static.NewResponse(421, []stream.Field{{Name: "content-length", Value: "0"}}, nil)

func (h strictSNIHost) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	if req.TLS != nil && !strings.EqualFold(req.TLS.ServerName, route.HostOnly(req.Authority)) {
		return misdirected.Serve(req, w)
	}
	return h.next.Serve(req, w)
}
