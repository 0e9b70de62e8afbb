package templates

import (
	"bytes"
	"errors"
	"net/http"
	"text/template"
)

// Config is one templates directive.
type Config struct {
	// MIME are the response types rendered: a Content-Type containing
	// one of them (Caddy's mime; text/html, text/plain and text/markdown
	// by default).
	MIME []string
	// Delims are the actions' delimiters (between), "{{" "}}" when empty.
	Delims [2]string
	// Root is the directory the file functions read from (root); the
	// request's root ({http.vars.root}), then the working directory, when
	// empty.
	Root string
}

// DefaultMIME are the types rendered when mime names none.
var DefaultMIME = []string{"text/html", "text/plain", "text/markdown"}

// Renders reports whether a response of Content-Type ct is rendered.
func (c *Config) Renders(ct string) bool {
	mime := c.MIME
	if len(mime) == 0 {
		mime = DefaultMIME
	}
	for _, m := range mime {
		if bytes.Contains([]byte(ct), []byte(m)) {
			return true
		}
	}
	return false
}

// Input is what a rendering needs of the request and its response, copied
// off the loop.
type Input struct {
	// Req is the request as the routes left it; Orig as it came.
	Req, Orig *http.Request
	// ClientIP is the client's address ({client_ip}).
	ClientIP string
	// Root is the directory the file functions read ("": "." ).
	Root string
	// Header is the response's fields, which .RespHeader edits.
	Header http.Header
	// Placeholder fills a placeholder by name (without braces) from the
	// request, as the routes would.
	Placeholder func(name string) string
}

// Result is a rendering's outcome: the body, or the status of the error
// the client gets (500 for a broken template, httpError's own when it is
// a final status).
type Result struct {
	Body   []byte
	Status int
	Err    error
}

// StatusError is httpError's error: the client gets Status.
type StatusError struct{ Status int }

func (e StatusError) Error() string { return http.StatusText(e.Status) }

// Render executes body, named name (the request path, for messages), as
// a template with in.
func Render(cfg *Config, in *Input, name string, body []byte) Result {
	c := &Context{in: in, cfg: cfg, Req: in.Req, RespHeader: WrappedHeader{in.Header}}
	var buf bytes.Buffer
	buf.Write(body)
	if err := c.executeInBuffer(name, &buf); err != nil {
		// httpError's status, unless it cannot be a final answer (99,
		// 103, 600): that is a 500. Caddy writes it as it is, and Go's
		// server then panics (under 100), sends a 200 after it (1xx) or
		// a status line HTTP does not define (over 599).
		var se StatusError
		if errors.As(err, &se) && se.Status >= 200 && se.Status <= 599 {
			return Result{Status: se.Status, Err: err}
		}
		return Result{Status: http.StatusInternalServerError, Err: err}
	}
	return Result{Body: buf.Bytes()}
}

// newTemplate is a template of the context's configuration: missing keys
// are zero values, the delimiters and the functions Caddy's.
func (c *Context) newTemplate(name string) *template.Template {
	t := template.New(name).Option("missingkey=zero")
	if c.cfg.Delims[0] != "" {
		t.Delims(c.cfg.Delims[0], c.cfg.Delims[1])
	}
	t.Funcs(sprigFuncs)
	t.Funcs(c.funcs())
	c.tpl = t
	return t
}

// executeInBuffer parses buf as the template name and replaces its
// content with the output.
func (c *Context) executeInBuffer(name string, buf *bytes.Buffer) error {
	t := c.newTemplate(name)
	if _, err := t.Parse(buf.String()); err != nil {
		return err
	}
	buf.Reset()
	return t.Execute(buf, c)
}
