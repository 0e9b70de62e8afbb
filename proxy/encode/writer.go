package encode

import (
	"net/http"
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Writer is one response on its way through an encode directive: the
// stream.ResponseWriter its handler writes to, and the stream.Events the
// front end calls (Events), so that compressed bytes the client did not
// take yet go out before the handler hears OnWritable. Wrap makes one.
type Writer struct {
	next   stream.ResponseWriter
	inner  stream.Events
	cfg    *Config
	pool   *Pool
	format int // index in cfg.Formats; -1 when the client accepts none

	state     wstate
	status    int
	head      []stream.Field // the final head, edited, held while undecided
	held      []byte         // the first body bytes, while too few to decide by
	length    int64          // its content-length; -1 when it has none
	enc       encoder        // while encoding a body
	out       sink           // enc's output the front end has not taken
	oneByOne  bool           // server-sent events: flushed after every write
	dirty     bool           // enc holds input it has not flushed
	wroteBody bool
	trailers  []stream.Field // Close's, kept while out drains
	released  bool
}

type wstate uint8

const (
	wsHead     wstate = iota // no final head yet
	wsHeld                   // the final head waits for the first body bytes to decide
	wsPlain                  // the response passes as it is
	wsEncoding               // the body is encoded
	wsClosing                // Close came while out still waits for the client
	wsDone
)

// inputSlice is the most input encoded before its output is offered to
// the client: it bounds what waits in out for a slow client to one
// slice's output plus the encoder's block.
const inputSlice = 16 << 10

// sink collects an encoder's output.
type sink struct {
	b   []byte
	off int // b[off:] is not yet taken
}

func (s *sink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// Wrap returns the Writer for one request's response under encode
// directive cfg, writing to next, with encoders from the loop's pool.
// The request should be an ordinary one: a tunnel's is not wrapped.
func Wrap(cfg *Config, pool *Pool, req *stream.Request, next stream.ResponseWriter) *Writer {
	return &Writer{next: next, cfg: cfg, pool: pool, format: cfg.Choose(req), length: -1}
}

// Encoding returns the encoding chosen for the request ("" for none):
// its handler must not see that mark on If-None-Match (StripETags).
func (w *Writer) Encoding() string {
	if w.format < 0 {
		return ""
	}
	return w.cfg.Formats[w.format].Name
}

// Events returns what the front end is to call for the request whose
// handler returned inner: w itself, or nil when the response is over
// and inner is nil too.
func (w *Writer) Events(inner stream.Events) stream.Events {
	w.inner = inner
	if inner == nil && w.state == wsDone {
		w.release()
		return nil
	}
	return w
}

var (
	_ stream.ResponseWriter = (*Writer)(nil)
	_ stream.Flusher        = (*Writer)(nil)
	_ stream.Events         = (*Writer)(nil)
	_ stream.Releaser       = (*Writer)(nil)
	_ stream.Unwrapper      = (*Writer)(nil)
)

// WriteHeader decides on encoding at the final head when it can: a head
// that cannot be encoded, or whose length or type settle it, goes on at
// once. A head without a length waits for the first body bytes, as in
// Caddy, unless it starts server-sent events.
func (w *Writer) WriteHeader(status int, fields []stream.Field, end bool) error {
	if w.state != wsHead || w.released {
		if w.state == wsPlain {
			return w.next.WriteHeader(status, fields, end)
		}
		return stream.ErrHeadWritten
	}
	if status < 200 {
		return w.next.WriteHeader(status, fields, end) // informational, or a 101 that opens a tunnel
	}
	w.status = status
	w.head = append(w.head[:0], fields...)
	if status == 304 && !field.HasToken(w.head, "vary", "accept-encoding") {
		// RFC 9110 §15.4.5: a 304 carries the Vary the 200 would.
		w.head = append(w.head, stream.Field{Name: "vary", Value: "Accept-Encoding"})
	}
	if cl, ok := get(w.head, "content-length"); ok {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.length = n
		}
	}
	_, typed := get(w.head, "content-type")
	switch {
	case !w.encodable():
	case end:
		// No body (HEAD, 204, 304): the head says what a GET would get.
		if w.length > w.cfg.MinLength {
			w.init()
		}
	case typed && !w.cfg.Match.Matches(w.status, w.head):
		// Not a response match picks (an image, say): nothing to wait for.
	case isStreaming(w.head):
		w.oneByOne = true
		w.start(w.init())
	case w.length >= 0 && w.length <= w.cfg.MinLength:
	case w.length > w.cfg.MinLength && typed:
		w.start(w.init())
	default:
		w.state = wsHeld
		return nil
	}
	return w.sendHead(end)
}

// encodable: nothing about the response forbids encoding it. A 206 is a
// part of a representation (RFC 9110 §14); an encoded response is not
// encoded twice; no-transform binds an intermediary (RFC 9111 §5.2.2.6).
func (w *Writer) encodable() bool {
	if w.status == 206 {
		return false
	}
	if ce, ok := get(w.head, "content-encoding"); ok && ce != "" {
		return false
	}
	if _, ok := get(w.head, "content-range"); ok {
		return false
	}
	return !field.HasToken(w.head, "cache-control", "no-transform")
}

// init edits the head of a response that match picks: Vary, and, when
// the client accepts an encoding, the fields of the encoded
// representation. It reports whether the body is to be encoded.
func (w *Writer) init() bool {
	if !w.cfg.Match.Matches(w.status, w.head) {
		return false
	}
	if !field.HasToken(w.head, "vary", "accept-encoding") {
		w.head = append(w.head, stream.Field{Name: "vary", Value: "Accept-Encoding"})
	}
	if w.format < 0 {
		return false
	}
	name := w.cfg.Formats[w.format].Name
	h := w.head[:0]
	for _, f := range w.head {
		switch f.Name {
		case "content-length", "accept-ranges", "content-encoding":
			continue
		case "etag":
			f.Value = markETag(f.Value, name)
		}
		h = append(h, f)
	}
	w.head = append(h, stream.Field{Name: "content-encoding", Value: name})
	return true
}

// start readies the encoder when init said to encode.
func (w *Writer) start(encode bool) {
	if !encode {
		w.state = wsPlain
		return
	}
	w.state = wsEncoding
	w.out.b, w.out.off = w.pool.getBuf(), 0
	w.enc = w.pool.get(w.cfg.Formats[w.format], &w.out)
}

// sendHead passes the head on.
func (w *Writer) sendHead(end bool) error {
	if w.state == wsHead || w.state == wsHeld {
		w.state = wsPlain
	}
	if end {
		w.finish()
	}
	return w.next.WriteHeader(w.status, w.head, end)
}

// decide settles a held head with the first body bytes, as Caddy does:
// encoded when they, or the declared length, pass minimum_length, with
// a Content-Type sniffed from them when the head has none. The bytes
// held so far go on first: into the encoder, or to wait in out.
func (w *Writer) decide(first []byte) error {
	encode := false
	if int64(len(first)) > w.cfg.MinLength || w.length > w.cfg.MinLength {
		if _, ok := get(w.head, "content-type"); !ok {
			w.head = append(w.head, stream.Field{Name: "content-type", Value: http.DetectContentType(first)})
		}
		encode = w.init()
	}
	w.start(encode)
	if err := w.sendHead(false); err != nil {
		return err
	}
	held := w.held
	w.held = nil
	if len(held) == 0 {
		return nil
	}
	if encode {
		w.dirty, w.wroteBody = true, true
		_, err := w.enc.Write(held)
		return err
	}
	if w.out.b == nil {
		w.out.b = w.pool.getBuf()
	}
	w.out.b = append(w.out.b, held...)
	return w.drain()
}

// hold keeps the first body bytes while they are too few to decide by
// and the length is unknown: Caddy decides by its first write, which
// carries what one read of the origin brought, however many chunks; here
// each chunk comes as a write of its own. The head waits with them until
// they pass minimum_length, the origin goes quiet (Flush) or the body
// ends, so at most minimum_length bytes are held.
func (w *Writer) hold(p []byte) bool {
	if w.length >= 0 || int64(len(w.held)+len(p)) > w.cfg.MinLength {
		return false
	}
	w.held = append(w.held, p...)
	return true
}

// settle decides a held head by the bytes held, once no more are coming
// for now.
func (w *Writer) settle() error {
	if w.state != wsHeld || len(w.held) == 0 {
		return nil
	}
	return w.decide(w.held)
}

// Write takes body bytes. Encoding, it takes no more while compressed
// bytes still wait for the client, and at most what one slice's output
// lets through: n < len(p) then waits for OnWritable, as the front end's
// Write would.
func (w *Writer) Write(p []byte) (int, error) {
	switch w.state {
	case wsHead:
		return w.next.Write(p)
	case wsPlain:
		return w.plain(p)
	case wsHeld:
		if len(p) == 0 || w.hold(p) {
			return len(p), nil
		}
		first := p
		if len(w.held) > 0 {
			first = append(w.held[:len(w.held):len(w.held)], p[:min(len(p), 512)]...)
		}
		if err := w.decide(first); err != nil {
			return 0, err
		}
		if w.state == wsPlain {
			return w.plain(p)
		}
	case wsEncoding:
	default:
		return 0, stream.ErrStreamClosed
	}
	if w.pending() {
		if err := w.drain(); err != nil || w.pending() {
			return 0, err
		}
	}
	n := 0
	for n < len(p) {
		k := min(len(p)-n, inputSlice)
		if _, err := w.enc.Write(p[n : n+k]); err != nil {
			return n, err
		}
		n += k
		w.dirty, w.wroteBody = true, true
		if err := w.drain(); err != nil {
			return n, err
		}
		if w.pending() {
			return n, nil
		}
	}
	if w.oneByOne {
		w.Flush()
	}
	return n, nil
}

// plain passes body bytes on as they are, after those waiting in out.
func (w *Writer) plain(p []byte) (int, error) {
	if w.pending() {
		if err := w.drain(); err != nil || w.pending() {
			return 0, err
		}
	}
	return w.next.Write(p)
}

// Flush implements stream.Flusher: what the encoder holds goes out, so
// that the client has everything written so far; a head held with too
// few bytes to decide by is decided by them. Then the writers beneath
// flush theirs (another encode directive's).
func (w *Writer) Flush() {
	switch {
	case w.state == wsHeld:
		w.settle()
	case w.state == wsEncoding && w.dirty:
		w.dirty = false
		if w.enc.Flush() == nil {
			w.drain()
		}
	}
	if !w.released {
		stream.Flush(w.next)
	}
}

// pending reports compressed bytes waiting for the client.
func (w *Writer) pending() bool { return w.out.off < len(w.out.b) }

// drain offers the waiting compressed bytes to the front end.
func (w *Writer) drain() error {
	if !w.pending() {
		return nil
	}
	k, err := w.next.Write(w.out.b[w.out.off:])
	w.out.off += k
	if w.out.off == len(w.out.b) {
		w.out.b, w.out.off = w.out.b[:0], 0
	}
	return err
}

// Close ends the encoded stream; the front end's response ends once the
// client has taken its last bytes.
func (w *Writer) Close(trailers []stream.Field) error {
	if err := w.settle(); err != nil {
		return err
	}
	switch w.state {
	case wsHead:
		w.finish()
		return w.next.Close(trailers)
	case wsPlain:
		return w.closeAfterOut(trailers)
	case wsHeld:
		// No body came. Caddy encodes the head by its length alone.
		if w.length > w.cfg.MinLength {
			w.init()
		}
		if err := w.sendHead(false); err != nil {
			return err
		}
		w.finish()
		return w.next.Close(trailers)
	case wsEncoding:
	default:
		return stream.ErrStreamClosed
	}
	if w.wroteBody { // an empty body stays empty, as in Caddy
		if err := w.enc.Close(); err != nil {
			w.Reset(stream.CodeInternal)
			return err
		}
	}
	w.putEncoder()
	return w.closeAfterOut(trailers)
}

// closeAfterOut closes the front end's response once out is taken.
func (w *Writer) closeAfterOut(trailers []stream.Field) error {
	if err := w.drain(); err != nil {
		return err
	}
	if w.pending() {
		w.trailers = append(w.trailers[:0], trailers...)
		w.state = wsClosing
		return nil
	}
	w.finish()
	return w.next.Close(trailers)
}

// Reset implements stream.ResponseWriter.
func (w *Writer) Reset(code uint32) {
	if w.released {
		return
	}
	w.finish()
	w.next.Reset(code)
}

// Consumed implements stream.ResponseWriter.
func (w *Writer) Consumed(n int) {
	if !w.released {
		w.next.Consumed(n)
	}
}

// Unwrap implements stream.Unwrapper.
func (w *Writer) Unwrap() stream.ResponseWriter { return w.next }

// OnBody implements stream.Events.
func (w *Writer) OnBody(p []byte) {
	if w.inner != nil {
		w.inner.OnBody(p)
		return
	}
	w.Consumed(len(p))
}

// OnBodyEnd implements stream.Events.
func (w *Writer) OnBodyEnd(trailers []stream.Field) {
	if w.inner != nil {
		w.inner.OnBodyEnd(trailers)
	}
}

// OnWritable sends what waits in out first; the handler hears of it
// only once the client took all of it.
func (w *Writer) OnWritable() {
	if w.pending() {
		if w.drain() != nil || w.pending() {
			return
		}
	}
	if w.state == wsClosing {
		t := w.trailers
		w.trailers = nil
		w.finish()
		w.next.Close(t)
		return
	}
	if w.inner != nil {
		w.inner.OnWritable()
	}
}

// OnAbort implements stream.Events.
func (w *Writer) OnAbort(err error) {
	w.finish()
	if w.inner != nil {
		w.inner.OnAbort(err)
	}
}

// OnRelease implements stream.Releaser: the front end is done with the
// request, and so is the Writer; the handler's own release follows.
func (w *Writer) OnRelease() {
	w.release()
	if r, ok := w.inner.(stream.Releaser); ok {
		r.OnRelease()
	}
}

// finish ends the Writer's part: its encoder and buffer go back to the
// pool.
func (w *Writer) finish() {
	w.state = wsDone
	w.putEncoder()
	w.pool.putBuf(w.out.b)
	w.out, w.held = sink{}, nil
}

// release is finish for a request the front end let go of: nothing
// reaches it any more.
func (w *Writer) release() {
	w.finish()
	w.released = true
}

func (w *Writer) putEncoder() {
	if w.enc != nil {
		w.pool.put(w.cfg.Formats[w.format], w.enc)
		w.enc = nil
	}
}
