package fileserver

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// chunkSize is how much of a file a response holds at once: it reads the
// next chunk only once the client took the last one, so a slow client
// costs one chunk, never the file.
const chunkSize = 32 << 10

var chunks = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

func getChunk() []byte { return (*chunks.Get().(*[]byte))[:chunkSize] }

func putChunk(b []byte) {
	if cap(b) == chunkSize {
		b = b[:chunkSize]
		chunks.Put(&b)
	}
}

// bytesRead counts the file bytes the pool has read, for BytesRead.
var bytesRead atomic.Int64

// BytesRead is how many file bytes the process has read to answer
// requests: what a slow client's response has cost the disk so far.
func BytesRead() int64 { return bytesRead.Load() }

// errShrunk is a file that ended before the length its head promised
// (it was truncated while served): the stream is reset.
var errShrunk = errors.New("file shrank while served")

// fill reads the body's next bytes into buf, in the pool: segment heads
// and file bytes, in order. It closes the file once the body is read (or
// cannot be), so a finished response leaves nothing to close.
func (p *plan) fill(buf []byte) (int, error) {
	n := 0
	for n < len(buf) && p.at < len(p.segs) {
		s := &p.segs[p.at]
		if p.pos < int64(len(s.head)) {
			k := copy(buf[n:], s.head[p.pos:])
			n += k
			p.pos += int64(k)
			continue
		}
		in := p.pos - int64(len(s.head))
		if in >= s.n {
			p.at, p.pos = p.at+1, 0
			continue
		}
		want := int(min(int64(len(buf)-n), s.n-in))
		k, err := p.file.ReadAt(buf[n:n+want], s.off+in)
		bytesRead.Add(int64(k))
		n += k
		p.pos += int64(k)
		if k < want {
			if err == nil || err == io.EOF {
				err = errShrunk
			}
			p.closeFile()
			return n, err
		}
	}
	if p.at == len(p.segs) {
		p.closeFile()
	}
	return n, nil
}

func (p *plan) closeFile() {
	if p.file != nil {
		p.file.Close()
		p.file = nil
	}
}

// more reports whether body bytes remain to be read.
func (p *plan) more() bool { return p.at < len(p.segs) }

// response is one file response on the loop. Its plan comes from the
// pool; then it writes the chunk it holds and asks the pool for the next
// only when the stream took all of it.
type response struct {
	w       stream.ResponseWriter
	loop    offload.Poster
	pool    *offload.Pool
	head    bool // HEAD: no body whatever the plan
	p       *plan
	buf     []byte // the chunk being written
	sent    int
	reading bool // a fill runs in the pool
	done    bool
	gone    bool // the client went away
}

// serveWith answers a plan made on the loop (no disk work needed).
func (p *plan) serveWith(req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &response{w: w, head: req.Method == "HEAD"}
	r.planned(p)
	return r
}

// planned takes the plan from the pool, on the loop.
func (r *response) planned(p *plan) {
	if r.gone {
		r.release(p, p.first)
		return
	}
	// The fields the failure set (405's Allow) stay on the error routes'
	// answer, as in Caddy.
	if p.failed && stream.RouteErrorFields(r.w, p.status, "", p.fields[:p.set]) {
		// The error routes took the stream: nothing more from here.
		r.done = true
		r.release(p, p.first)
		return
	}
	r.p, r.buf = p, p.first
	empty := r.head || r.buf == nil
	if err := r.w.WriteHeader(p.status, p.fields, empty); err != nil || empty {
		r.done = true
		r.release(p, r.buf)
		r.buf = nil
		return
	}
	r.OnWritable()
}

// release gives back what a response no longer uses: its chunk, and its
// file (closed in the pool: closing may wait for the disk too).
func (r *response) release(p *plan, buf []byte) {
	if buf != nil {
		putChunk(buf)
	}
	if p != nil && p.file != nil {
		r.pool.Continue(p.closeFile)
	}
}

// OnWritable writes what the chunk still holds, then asks for the next.
func (r *response) OnWritable() {
	if r.p == nil || r.done || r.reading {
		return
	}
	for r.sent < len(r.buf) {
		n, err := r.w.Write(r.buf[r.sent:])
		if err != nil {
			r.finish()
			return
		}
		if n == 0 {
			return
		}
		r.sent += n
	}
	if !r.p.more() {
		r.finish()
		r.w.Close(nil)
		return
	}
	r.reading = true
	p, buf, loop := r.p, r.buf[:cap(r.buf)], r.loop
	r.pool.Continue(func() {
		n, err := p.fill(buf)
		loop.Post(func() { r.filled(n, err) })
	})
}

// filled takes the next chunk from the pool, on the loop.
func (r *response) filled(n int, err error) {
	r.reading = false
	if r.gone {
		r.finish()
		return
	}
	if err != nil {
		r.finish()
		r.w.Reset(stream.CodeInternal)
		return
	}
	r.buf, r.sent = r.buf[:n], 0
	r.OnWritable()
}

func (r *response) finish() {
	r.done = true
	r.release(r.p, r.buf)
	r.buf = nil
}

// OnBody drops a request body: a file answers GET and HEAD.
func (r *response) OnBody(p []byte) { r.w.Consumed(len(p)) }

// OnBodyEnd needs nothing: the answer does not wait for the body.
func (r *response) OnBodyEnd([]stream.Field) {}

// OnAbort: the client went away. A fill still running finishes in the
// pool, and its chunk and file are given back when it returns.
func (r *response) OnAbort(error) {
	r.gone = true
	if !r.reading && !r.done {
		r.finish()
	}
}
