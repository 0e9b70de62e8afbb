package site

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/fileserver"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/templates"
)

// MaxTemplateBody bounds the response a templates directive buffers to
// render: a longer one is answered 500, as a broken template is. Caddy
// buffers any length; pollproxy's memory per stream is bounded.
const MaxTemplateBody = 8 << 20

// tplWriter is the writer of a response a templates directive may
// render: a head whose type it renders is held with its body, the
// template runs in fileserver's pool when the body ends, and the result
// goes out from the loop; any other response passes through.
type tplWriter struct {
	stream.ResponseWriter
	h     *Handler
	cfg   *templates.Config
	req   *stream.Request
	root  string
	inner stream.Events

	holding bool // the head is held, with the body in buf
	status  int
	fields  []stream.Field
	buf     []byte
	tooBig  bool
	out     []byte // the rendered body not yet taken by the writer
	writing bool   // the rendered answer is going out
	gone    bool   // the client went away, or the front end released the request
}

// wrapTemplates wraps w in the templates directive d's writer.
func (h *Handler) wrapTemplates(d *Templates, req *stream.Request, w stream.ResponseWriter) *tplWriter {
	root := d.Config.Root
	if root == "" {
		root = h.ctx.Root
	}
	return &tplWriter{ResponseWriter: w, h: h, cfg: d.Config, req: req, root: root}
}

var (
	_ stream.ResponseWriter = (*tplWriter)(nil)
	_ stream.Unwrapper      = (*tplWriter)(nil)
	_ stream.Events         = (*tplWriter)(nil)
	_ stream.Releaser       = (*tplWriter)(nil)
)

// Unwrap implements stream.Unwrapper.
func (t *tplWriter) Unwrap() stream.ResponseWriter { return t.ResponseWriter }

// Events puts t in front of the handler's events inner.
func (t *tplWriter) Events(inner stream.Events) stream.Events {
	t.inner = inner
	return t
}

// WriteHeader holds a final head of a type the directive renders.
func (t *tplWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status < 200 || t.holding || t.writing {
		return t.ResponseWriter.WriteHeader(status, fields, end)
	}
	ct, _ := fieldValue(fields, "content-type")
	if !t.cfg.Renders(ct) {
		return t.ResponseWriter.WriteHeader(status, fields, end)
	}
	t.holding, t.status = true, status
	t.fields = append([]stream.Field(nil), fields...)
	if end {
		t.render()
	}
	return nil
}

// Write takes a held response's body, up to MaxTemplateBody.
func (t *tplWriter) Write(p []byte) (int, error) {
	if !t.holding {
		return t.ResponseWriter.Write(p)
	}
	if len(t.buf)+len(p) > MaxTemplateBody {
		t.tooBig = true
	} else if !t.tooBig {
		t.buf = append(t.buf, p...)
	}
	return len(p), nil
}

// Close renders a held response. A Close after a head that ended the
// response (a HEAD's, a 204's), which is rendering already, is the
// handler's end of what it wrote: the rendered answer ends the response
// itself, and the front end, told of the end before any head, would
// close the connection without an answer.
func (t *tplWriter) Close(trailers []stream.Field) error {
	switch {
	case t.holding:
		t.render()
		return nil
	case t.writing:
		return nil
	}
	return t.ResponseWriter.Close(trailers)
}

// render hands the held body to the pool, with a copy of what the
// template may read, and answers when the result is back on the loop.
func (t *tplWriter) render() {
	t.holding = false
	if t.tooBig {
		t.fail(http.StatusInternalServerError)
		return
	}
	snap := snapshot(t.req)
	root, status, fields, body := t.root, t.status, t.fields, t.buf
	t.buf = nil
	cfg := t.cfg
	type answer struct {
		res    templates.Result
		header http.Header
	}
	work := func() answer {
		in := input(snap, root, fields)
		return answer{templates.Render(cfg, in, route.PathOnly(snap.Path), body), in.Header}
	}
	done := func(a answer) {
		if t.gone {
			return
		}
		if a.res.Err != nil {
			t.fail(a.res.Status)
			return
		}
		t.send(status, fieldsOf(a.header, fields), a.res.Body)
	}
	t.writing = true
	if err := offload.Do(fileserver.Shared(), t.h.loop, work, done); err != nil {
		t.fail(http.StatusServiceUnavailable)
	}
}

// fail answers status instead of the response, to the site's error
// routes when there are some.
func (t *tplWriter) fail(status int) {
	t.writing = true
	if stream.RouteError(t.ResponseWriter, status, http.StatusText(status)) {
		return
	}
	t.ResponseWriter.WriteHeader(status, []stream.Field{{Name: "content-length", Value: "0"}}, true)
}

// send writes the rendered answer: its length known, without the fields
// that no longer describe it (ranges, validators), as Caddy writes it.
func (t *tplWriter) send(status int, fields []stream.Field, body []byte) {
	fs := fields[:0]
	for _, f := range fields {
		switch f.Name {
		case "content-length", "accept-ranges", "last-modified", "etag":
			continue
		}
		fs = append(fs, f)
	}
	switch {
	case status == 204 || status == 304:
		body = nil
	case t.req.Method == "HEAD":
		// Go's server, which Caddy runs, states the length of what a
		// HEAD's handler wrote, when it wrote something.
		if len(body) > 0 {
			fs = append(fs, stream.Field{Name: "content-length", Value: strconv.Itoa(len(body))})
		}
		body = nil
	default:
		fs = append(fs, stream.Field{Name: "content-length", Value: strconv.Itoa(len(body))})
	}
	if t.ResponseWriter.WriteHeader(status, fs, len(body) == 0) != nil || len(body) == 0 {
		return
	}
	t.out = body
	t.flush()
}

// flush writes what the writer takes of the rendered body, and ends the
// response once all of it went.
func (t *tplWriter) flush() {
	for len(t.out) > 0 {
		n, err := t.ResponseWriter.Write(t.out)
		if err != nil {
			t.out = nil
			return
		}
		if n == 0 {
			return // OnWritable goes on
		}
		t.out = t.out[n:]
	}
	t.out = nil
	t.ResponseWriter.Close(nil)
}

// OnBody implements stream.Events.
func (t *tplWriter) OnBody(p []byte) {
	if t.inner != nil {
		t.inner.OnBody(p)
		return
	}
	t.Consumed(len(p))
}

// OnBodyEnd implements stream.Events.
func (t *tplWriter) OnBodyEnd(trailers []stream.Field) {
	if t.inner != nil {
		t.inner.OnBodyEnd(trailers)
	}
}

// OnWritable sends more of the rendered body, or tells the handler.
func (t *tplWriter) OnWritable() {
	if len(t.out) > 0 {
		t.flush()
		return
	}
	if t.inner != nil && !t.writing {
		t.inner.OnWritable()
	}
}

// OnAbort implements stream.Events: a render under way is dropped.
func (t *tplWriter) OnAbort(err error) {
	t.gone, t.out = true, nil
	if t.inner != nil {
		t.inner.OnAbort(err)
	}
}

// OnRelease implements stream.Releaser.
func (t *tplWriter) OnRelease() {
	t.gone = true
	if r, ok := t.inner.(stream.Releaser); ok {
		r.OnRelease()
	}
}

// snapshot copies what a rendering reads of req, so that the loop may
// reuse the request while the pool renders.
func snapshot(req *stream.Request) *stream.Request {
	c := *req
	c.Header = append([]stream.Field(nil), req.Header...)
	c.Hop = append([]stream.Field(nil), req.Hop...)
	c.Vars = append([]stream.Var(nil), req.Vars...)
	c.Mapped = append([]stream.Mapper(nil), req.Mapped...)
	c.Captures = append([]stream.Capture(nil), req.Captures...)
	c.Conn = nil
	return &c
}

// input is the template's view of the request r and the response fields.
func input(r *stream.Request, root string, fields []stream.Field) *templates.Input {
	in := &templates.Input{Req: httpRequest(r, r.Method, r.Path), Root: root, Header: http.Header{}}
	in.Orig = httpRequest(r, firstOf(r.OriginalMethod, r.Method), firstOf(r.OriginalPath, r.Path))
	if r.ClientIP.IsValid() {
		in.ClientIP = r.ClientIP.String()
	} else {
		in.ClientIP = r.RemoteAddr.Addr().String()
	}
	for _, f := range fields {
		in.Header.Add(f.Name, f.Value)
	}
	in.Placeholder = func(name string) string {
		if route.Shorthand(name) {
			return "" // a Caddyfile spelling, not a name Caddy's replacer knows
		}
		t, err := route.ParseTemplate("{"+name+"}", route.TemplateOptions{ReplaceAll: true})
		if err != nil {
			return ""
		}
		return t.Expand(r)
	}
	return in
}

// httpRequest is r as net/http has a request, which templates read.
func httpRequest(r *stream.Request, method, target string) *http.Request {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		u = &url.URL{Path: route.PathOnly(target), RawQuery: route.QueryOnly(target)}
	}
	hr := &http.Request{Method: method, URL: u, Proto: r.Proto, Host: r.Authority, RequestURI: target,
		Header: http.Header{}, RemoteAddr: r.RemoteAddr.String()}
	hr.ProtoMajor, hr.ProtoMinor, _ = http.ParseHTTPVersion(r.Proto)
	for _, fs := range [2][]stream.Field{r.Header, r.Hop} {
		for _, f := range fs {
			hr.Header.Add(f.Name, f.Value)
		}
	}
	return hr
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fieldsOf is h as response fields, names in lower case: the names of
// was first, in its order, then the ones the template added, sorted.
func fieldsOf(h http.Header, was []stream.Field) []stream.Field {
	var fs []stream.Field
	seen := map[string]bool{}
	emit := func(name string) {
		key := http.CanonicalHeaderKey(name)
		if seen[key] {
			return
		}
		seen[key] = true
		for _, v := range h[key] {
			fs = append(fs, stream.Field{Name: lower(key), Value: v})
		}
	}
	for _, f := range was {
		emit(f.Name)
	}
	added := make([]string, 0, len(h))
	for name := range h {
		if !seen[name] {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	for _, name := range added {
		emit(name)
	}
	return fs
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// fieldValue is the first value of the field name.
func fieldValue(fs []stream.Field, name string) (string, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}
