package site

import "github.com/pollproxy/pollproxy/proxy/stream"

// hold is the Events of a request parked before its answer (a password
// compared, files looked up, off the loop). It keeps the client's body
// bytes meanwhile: they are not reported Consumed, so the client's
// flow-control window (h2) or the body window (HTTP/1.1) bounds them.
// Once answered, it hands everything it held to the answer's Events and
// passes every later event on.
//
// Its three flags are independent of each other, and of the phase of a
// relay that embeds it: answered is whether the request left the wait
// (with or without an inner Events to hand on to); gone is the client's
// abort, which can come before or after that; ended is the client's body
// end, which can come before or after either.
type hold struct {
	w        stream.ResponseWriter
	inner    stream.Events // the answer's, once handed over
	answered bool          // handed over: later body bytes go to inner, or are Consumed
	gone     bool          // the client went away: an answer coming back finds nobody waiting
	body     []byte
	ended    bool // the body ended while parked: inner hears OnBodyEnd on hand-over
	trailers []stream.Field
}

// handOver gives the request to its answer's Events (nil: answered
// within Serve) with the body bytes held.
func (o *hold) handOver(inner stream.Events) {
	o.answered, o.inner = true, inner
	body := o.body
	o.body = nil
	if inner == nil { // nothing wants the body
		if len(body) > 0 {
			o.w.Consumed(len(body))
		}
		return
	}
	if len(body) > 0 {
		inner.OnBody(body)
	}
	if o.ended {
		inner.OnBodyEnd(o.trailers)
		o.trailers = nil
	}
}

// OnBody holds body bytes while parked, and passes them on afterwards.
func (o *hold) OnBody(p []byte) {
	switch {
	case o.inner != nil:
		o.inner.OnBody(p)
	case o.answered:
		o.w.Consumed(len(p))
	default:
		o.body = append(o.body, p...)
	}
}

// OnBodyEnd notes the body's end while parked, and passes it on
// afterwards.
func (o *hold) OnBodyEnd(trailers []stream.Field) {
	switch {
	case o.inner != nil:
		o.inner.OnBodyEnd(trailers)
	case !o.answered:
		o.ended = true
		o.trailers = append([]stream.Field(nil), trailers...)
	}
}

// OnWritable passes on: nothing is written while parked.
func (o *hold) OnWritable() {
	if o.inner != nil {
		o.inner.OnWritable()
	}
}

// OnAbort: the client went away. Work still running off the loop
// finishes there (it cannot be stopped); its answer then finds nobody
// waiting.
func (o *hold) OnAbort(err error) {
	o.gone, o.body = true, nil
	if o.inner != nil {
		o.inner.OnAbort(err)
	}
}

// OnRelease passes on, so the answer's memory is reused as without the
// wait.
func (o *hold) OnRelease() {
	if r, ok := o.inner.(stream.Releaser); ok {
		r.OnRelease()
	}
}

var (
	_ stream.Events   = (*hold)(nil)
	_ stream.Releaser = (*hold)(nil)
)
