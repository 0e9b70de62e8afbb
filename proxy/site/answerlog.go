package site

import (
	"time"

	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// A request the routes answer themselves (respond, redir, abort, basic
// auth's 401, the empty 200) is observed here, as a proxied one is by
// its reverse proxy: Caddy's access log has an entry for every request of
// a site that logs.

// LoopClock is what an answer's log entry needs of its loop
// (netpoll.Loop): its number, its poller and its clock.
type LoopClock interface {
	ID() int
	Backend() string
	Now() time.Time
}

// Observe makes the handler report the requests its routes answer to obs
// (the site's access logs), with their fields when headers is set. The
// loop the handler was made for must be a LoopClock.
func (h *Handler) Observe(obs observe.Observer, headers bool) {
	if lc, ok := h.loop.(LoopClock); ok && obs != nil {
		h.obs, h.clock, h.logHeaders = obs, lc, headers
	}
}

// answerLog is the ResponseWriter of an observed answer: it counts what
// goes out and reports the request when the answer ends.
type answerLog struct {
	stream.ResponseWriter
	h     *Handler
	log   observe.RequestLog
	inner stream.Events
	ended bool
}

// observed wraps w for an answer the routes make, when they are observed.
func (h *Handler) observed(req *stream.Request, w stream.ResponseWriter) (stream.ResponseWriter, *answerLog) {
	if h.obs == nil {
		return w, nil
	}
	a := &answerLog{ResponseWriter: w, h: h}
	// Not h.ctx: a request parked for a password check is answered after
	// others used it.
	client := route.PeerIP(req)
	if h.clientFn != nil {
		client = h.clientFn(req)
	}
	a.log.Begin(req, h.clock.ID(), h.clock.Backend(), h.clock.Now(), client, h.logHeaders)
	return a, a
}

// events is the answer's events, seen by a so that a client gone before
// the end is reported too; nil events mean the answer ended in Serve.
func (a *answerLog) events(inner stream.Events) stream.Events {
	if inner == nil {
		a.end()
		return nil
	}
	a.inner = inner
	return a
}

func (a *answerLog) end() {
	if a.ended {
		return
	}
	a.ended = true
	if stream.Replaced(a.ResponseWriter) {
		a.log.Skip = true // the answer that replaced this one reports the request
	}
	a.log.Duration = a.h.clock.Now().Sub(a.log.Start)
	a.h.obs.Observe(&a.log)
}

// WriteHeader records the final status (and fields, when logged).
func (a *answerLog) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status >= 200 {
		a.log.Status = status
		if a.h.logHeaders && !a.log.Skip {
			a.log.RespHeader = append([]stream.Field(nil), fields...)
		}
	}
	err := a.ResponseWriter.WriteHeader(status, fields, end)
	if end && status >= 200 {
		a.end()
	}
	return err
}

// Write counts the body bytes the client took.
func (a *answerLog) Write(p []byte) (int, error) {
	n, err := a.ResponseWriter.Write(p)
	a.log.BytesOut += int64(n)
	return n, err
}

// Close ends the answer.
func (a *answerLog) Close(trailers []stream.Field) error {
	err := a.ResponseWriter.Close(trailers)
	a.end()
	return err
}

// Reset ends the answer with no status, as a reset stream is logged.
func (a *answerLog) Reset(code uint32) {
	a.ResponseWriter.Reset(code)
	a.log.Status = 0
	a.end()
}

// Unwrap implements stream.Unwrapper.
func (a *answerLog) Unwrap() stream.ResponseWriter { return a.ResponseWriter }

// OnBody counts the request body an answer reads (and drops).
func (a *answerLog) OnBody(p []byte) {
	a.log.BytesRead += int64(len(p))
	a.inner.OnBody(p)
}

// OnBodyEnd, OnWritable: the answer's own.
func (a *answerLog) OnBodyEnd(trailers []stream.Field) { a.inner.OnBodyEnd(trailers) }

func (a *answerLog) OnWritable() { a.inner.OnWritable() }

// OnAbort: the client went away before the answer ended.
func (a *answerLog) OnAbort(err error) {
	a.inner.OnAbort(err)
	a.log.Reason = observe.ReasonClientGone
	a.end()
}
