package server_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

const (
	bigSize   = 8 << 20
	slowDelay = 300 * time.Millisecond
)

var smallBody = []byte("hello from pollproxy\n")

// routes are the test handlers, shared by every loop; per-loop state lives
// in mux.
type routes struct {
	small, big *static.Handler
	// maxPending is the most request-body bytes an echo stream held
	// without being able to write them back: what backpressure bounds.
	maxPending  atomic.Int64
	echoes      atomic.Int64
	aborts      atomic.Value // the last error an echo stream was aborted with
	slowStarted chan struct{}
}

func newRoutes() *routes {
	return &routes{
		small:       static.New(smallBody, "text/plain"),
		big:         static.New(bigBody(), "application/octet-stream"),
		slowStarted: make(chan struct{}, 16),
	}
}

var bigBodyCache []byte

func bigBody() []byte {
	if bigBodyCache == nil {
		bigBodyCache = make([]byte, bigSize)
		(&pattern{n: bigSize}).Read(bigBodyCache)
	}
	return bigBodyCache
}

func (r *routes) forLoop(l *netpoll.Loop) stream.Handler { return &mux{r: r, loop: l} }

// mux routes by path on one loop.
type mux struct {
	r       *routes
	loop    *netpoll.Loop
	barrier []*held
}

func (m *mux) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	path, query, _ := strings.Cut(req.Path, "?")
	switch path {
	case "/echo":
		m.r.echoes.Add(1)
		return newEcho(m.r, req, w)
	case "/big":
		return m.r.big.Serve(req, w)
	case "/barrier":
		// Nobody is answered until n requests are open at once on this
		// loop: proof that they were concurrent.
		n, _ := strconv.Atoi(strings.TrimPrefix(query, "n="))
		h := &held{w: w}
		m.barrier = append(m.barrier, h)
		if len(m.barrier) >= n {
			for _, b := range m.barrier {
				b.answer()
			}
			m.barrier = nil
		}
		return h
	case "/slow":
		h := &held{w: w}
		select {
		case m.r.slowStarted <- struct{}{}:
		default:
		}
		m.loop.AfterFunc(slowDelay, h.answer)
		return h
	}
	return m.r.small.Serve(req, w)
}

// held is a request answered later with "ok".
type held struct {
	w       stream.ResponseWriter
	aborted bool
}

func (h *held) answer() {
	if h.aborted {
		return
	}
	h.w.WriteHeader(200, []stream.Field{{Name: "content-length", Value: "2"}}, false)
	h.w.Write([]byte("ok"))
	h.w.Close(nil)
}

func (h *held) OnBody(p []byte)          { h.w.Consumed(len(p)) }
func (h *held) OnBodyEnd([]stream.Field) {}
func (h *held) OnWritable()              {}
func (h *held) OnAbort(error)            { h.aborted = true }

// echo streams the request body back. It writes what the response takes
// and reports a body byte Consumed only once the response accepted it, so
// a client that does not read its response stops its own upload.
type echo struct {
	r       *routes
	w       stream.ResponseWriter
	pending []byte // body bytes the response did not take yet: pending[off:]
	off     int
	ended   bool
	done    bool
}

func newEcho(r *routes, req *stream.Request, w stream.ResponseWriter) *echo {
	e := &echo{r: r, w: w}
	fields := []stream.Field{{Name: "content-type", Value: "application/octet-stream"}}
	if req.ContentLength >= 0 {
		fields = append(fields, stream.Field{Name: "content-length", Value: strconv.FormatInt(req.ContentLength, 10)})
	}
	if err := w.WriteHeader(200, fields, !req.HasBody); err != nil || !req.HasBody {
		e.done = true
	}
	return e
}

func (e *echo) OnBody(p []byte) {
	if e.done {
		e.w.Consumed(len(p))
		return
	}
	if e.off == len(e.pending) {
		n, err := e.w.Write(p)
		if err != nil {
			e.done = true
			e.w.Consumed(len(p))
			return
		}
		if n > 0 {
			e.w.Consumed(n)
		}
		p = p[n:]
		e.pending, e.off = e.pending[:0], 0
	}
	if len(p) == 0 {
		return
	}
	if e.off > 0 && e.off >= len(e.pending)/2 {
		e.pending = append(e.pending[:0], e.pending[e.off:]...)
		e.off = 0
	}
	e.pending = append(e.pending, p...)
	held := int64(len(e.pending) - e.off)
	for {
		old := e.r.maxPending.Load()
		if held <= old || e.r.maxPending.CompareAndSwap(old, held) {
			break
		}
	}
}

func (e *echo) OnBodyEnd(trailers []stream.Field) {
	e.ended = true
	if !e.done && e.off == len(e.pending) {
		e.finish()
	}
}

func (e *echo) OnWritable() {
	if e.done {
		return
	}
	for e.off < len(e.pending) {
		n, err := e.w.Write(e.pending[e.off:])
		if err != nil {
			e.done = true
			return
		}
		if n == 0 {
			return
		}
		e.off += n
		e.w.Consumed(n)
	}
	e.pending, e.off = e.pending[:0], 0
	if e.ended {
		e.finish()
	}
}

func (e *echo) finish() {
	e.done = true
	e.w.Close(nil)
}

func (e *echo) OnAbort(err error) {
	e.done = true
	e.r.aborts.Store(err.Error())
}
