// Package static is a handler that answers every request with one fixed
// body, on the loop. It lets the front ends be tested and benchmarked on
// their own, without an origin behind them.
package static

import (
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Handler answers every request with Body (and discards request bodies).
type Handler struct {
	Body        []byte
	ContentType string
	head        []stream.Field
}

// New returns a handler serving body.
func New(body []byte, contentType string) *Handler {
	return &Handler{Body: body, ContentType: contentType, head: []stream.Field{
		{Name: "content-type", Value: contentType},
		{Name: "content-length", Value: strconv.Itoa(len(body))},
		{Name: "server", Value: "pollproxy"},
	}}
}

// Serve answers once the request body, if any, has been read.
func (h *Handler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &response{h: h, w: w, head: req.Method == "HEAD"}
	if !req.HasBody {
		r.start()
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
	if r.w.WriteHeader(200, r.h.head, empty) != nil || empty {
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
