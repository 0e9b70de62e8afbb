// Package static is a handler that answers every request with one fixed
// response, on the loop. It lets the front ends be tested and benchmarked
// on their own, without an origin behind them, and it is how pollproxy
// sends the few answers it makes itself (421 for a host it does not serve).
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
// are shared by every response: neither may change afterwards.
func NewResponse(status int, head []stream.Field, body []byte) *Handler {
	return &Handler{Body: body, status: status, head: head}
}

// Serve answers once the request body, if any, has been read. A response
// finished within Serve returns no events (see stream.Handler).
func (h *Handler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &response{h: h, w: w, head: req.Method == "HEAD"}
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
	head    bool
	started bool
	sent    int
	done    bool
}

func (r *response) start() {
	r.started = true
	empty := r.head || len(r.h.Body) == 0
	if r.w.WriteHeader(r.h.status, r.h.head, empty) != nil || empty {
		r.done = true
		return
	}
	r.OnWritable()
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
