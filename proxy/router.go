package proxy

import (
	"strconv"
	"strings"

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
	host := hostOnly(authority)
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
	return misdirected(req, w)
}

// hostOnly strips the port and brackets, lowercases and drops a trailing
// dot, allocating only when the authority is not already in that form.
func hostOnly(a string) string {
	if n := len(a); n > 0 && a[0] == '[' {
		if i := strings.IndexByte(a, ']'); i > 0 {
			a = a[1:i]
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 && strings.IndexByte(a, ':') == i {
		a = a[:i]
	}
	a = strings.TrimSuffix(a, ".")
	for i := 0; i < len(a); i++ {
		if c := a[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(a)
		}
	}
	return a
}

var misdirectedBody = []byte("pollproxy: no site is configured for this host\n")

var misdirectedHead = []stream.Field{
	{Name: "content-type", Value: "text/plain; charset=utf-8"},
	{Name: "content-length", Value: strconv.Itoa(len(misdirectedBody))},
}

// misdirected answers 421 once the request body, if any, is drained.
func misdirected(req *stream.Request, w stream.ResponseWriter) stream.Events {
	m := &fixedResponse{w: w, status: 421, head: misdirectedHead, body: misdirectedBody, noBody: req.Method == "HEAD"}
	if !req.HasBody {
		m.start()
		if m.done {
			return nil
		}
	}
	return m
}

// fixedResponse writes one small response pollproxy makes itself.
type fixedResponse struct {
	w       stream.ResponseWriter
	status  int
	head    []stream.Field
	body    []byte
	noBody  bool
	started bool
	sent    int
	done    bool
}

func (m *fixedResponse) start() {
	m.started = true
	empty := m.noBody || len(m.body) == 0
	if m.w.WriteHeader(m.status, m.head, empty) != nil || empty {
		m.done = true
		return
	}
	m.OnWritable()
}

func (m *fixedResponse) OnBody(p []byte) { m.w.Consumed(len(p)) }

func (m *fixedResponse) OnBodyEnd([]stream.Field) {
	if !m.started {
		m.start()
	}
}

func (m *fixedResponse) OnWritable() {
	if !m.started || m.done {
		return
	}
	for m.sent < len(m.body) {
		n, err := m.w.Write(m.body[m.sent:])
		if err != nil {
			m.done = true
			return
		}
		if n == 0 {
			return
		}
		m.sent += n
	}
	m.done = true
	m.w.Close(nil)
}

func (m *fixedResponse) OnAbort(error) { m.done = true }
