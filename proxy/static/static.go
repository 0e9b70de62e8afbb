package static

import (
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Handler answers every request with one status, head and Body (and
// discards request bodies).
type Handler struct {
	Body        []byte
	ContentType string
	status      int
	head        []stream.Field
}

// New returns a handler serving body with status 200.
func New(body []byte, contentType string) *Handler {
	h := NewResponse(200, []stream.Field{
		{Name: "content-type", Value: contentType},
		{Name: "content-length", Value: strconv.Itoa(len(body))},
		{Name: "server", Value: "pollproxy"},
	}, body)
	h.ContentType = contentType
	return h
}

// NewResponse returns a handler answering status with exactly the fields
// in head (which should give the body's length) and body. head and body
// are shared by every response: neither may change afterwards. An
// informational status (1xx but 101) goes as an interim head, and the
// answer that follows is a 200 with head and body.
func NewResponse(status int, head []stream.Field, body []byte) *Handler {
	return &Handler{Body: body, status: status, head: head}
}

// Serve answers once the request body, if any, has been read. A response
// finished within Serve returns no events (see stream.Handler).
func (h *Handler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &response{h: h, w: w}
	if !req.HasBody {
		r.start()
		if r.done {
			return nil
		}
	}
	return r
}

type response struct {
	h       *Handler
	w       stream.ResponseWriter
	started bool
	sent    int
	done    bool
}

func (r *response) start() {
	r.started = true
	status := r.h.status
	if status < 200 && status != 101 {
		// An informational status cannot end an exchange: it goes as an
		// interim head, and the answer is a 200 with the head and body,
		// as Caddy's respond 103 (net/http's WriteHeader) does.
		if r.w.WriteHeader(status, nil, false) != nil {
			r.refused()
			return
		}
		status = 200
	}
	// The body goes also to a HEAD: the front end drops it, knowing
	// the method the client sent, where req.Method may be a route's
	// (method HEAD on a GET must still answer the GET with a body).
	empty := len(r.h.Body) == 0
	if r.w.WriteHeader(status, r.h.head, empty) != nil {
		r.refused()
		return
	}
	if empty {
		r.done = true
		return
	}
	r.OnWritable()
}

// refused ends an exchange whose head the front end refused (a 101 to a
// request that asked for no upgrade): left alone, it would wait for an
// answer forever.
func (r *response) refused() {
	r.done = true
	r.w.Reset(stream.CodeInternal)
}

func (r *response) OnBody(p []byte) { r.w.Consumed(len(p)) }

func (r *response) OnBodyEnd([]stream.Field) {
	if !r.started {
		r.start()
	}
}

func (r *response) OnWritable() {
	if !r.started || r.done {
		return
	}
	for r.sent < len(r.h.Body) {
		n, err := r.w.Write(r.h.Body[r.sent:])
		if err != nil {
			r.done = true
			return
		}
		if n == 0 {
			return // wait for OnWritable
		}
		r.sent += n
	}
	r.done = true
	r.w.Close(nil)
}

func (r *response) OnAbort(error) { r.done = true }
