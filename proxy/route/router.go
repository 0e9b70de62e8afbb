package route

import (
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Router is a stream.Handler that picks a site's handler by the request's
// host (Authority without its port): an exact name first, then a wildcard
// "*.example.com" covering one leftmost label, then the default. A request
// for no known host gets 421 Misdirected Request. A Router is built once
// per loop and never changed; a reload builds a new one.
type Router struct {
	exact    map[string]stream.Handler
	wildcard map[string]stream.Handler // by the suffix after "*.", e.g. "example.com"
	fallback stream.Handler
}

// NewRouter returns an empty router.
func NewRouter() *Router {
	return &Router{exact: map[string]stream.Handler{}, wildcard: map[string]stream.Handler{}}
}

// Handle routes host to h: "example.com", "*.example.com", or "" for the
// default. Names are matched without case and without a trailing dot.
func (r *Router) Handle(host string, h stream.Handler) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case host == "":
		r.fallback = h
	case strings.HasPrefix(host, "*."):
		r.wildcard[host[2:]] = h
	default:
		r.exact[host] = h
	}
}

// Route returns the handler for a request authority, or nil.
func (r *Router) Route(authority string) stream.Handler {
	host := HostOnly(authority)
	if h, ok := r.exact[host]; ok {
		return h
	}
	if len(r.wildcard) > 0 {
		if i := strings.IndexByte(host, '.'); i > 0 {
			if h, ok := r.wildcard[host[i+1:]]; ok {
				return h
			}
		}
	}
	return r.fallback
}

// Serve routes one request.
func (r *Router) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	if h := r.Route(req.Authority); h != nil {
		return h.Serve(req, w)
	}
	return misdirected.Serve(req, w)
}

var misdirectedBody = []byte("pollproxy: no site is configured for this host\n")

// misdirected answers 421 Misdirected Request (RFC 9110 §15.5.20): the
// client may retry on another connection, one for the right host.
var misdirected = static.NewResponse(421, []stream.Field{
	{Name: "content-type", Value: "text/plain; charset=utf-8"},
	{Name: "content-length", Value: strconv.Itoa(len(misdirectedBody))},
}, misdirectedBody)
