package templates

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/dustin/go-humanize"
)

// sprigFuncs is the sprig library, as Caddy's templates have it.
var sprigFuncs = sprig.TxtFuncMap()

// Context is the data a template executes with: Caddy's template
// context, field for field and method for method.
type Context struct {
	// Req is the request as the routes left it.
	Req *http.Request
	// Args are what include passed to the template it includes.
	Args []any
	// RespHeader edits the response's fields.
	RespHeader WrappedHeader

	in  *Input
	cfg *Config
	tpl *template.Template
}

// OriginalReq is the request as the client sent it.
func (c *Context) OriginalReq() http.Request {
	if c.in.Orig == nil {
		return http.Request{}
	}
	return *c.in.Orig
}

// Cookie is the value of the request's cookie name ("" when none).
func (c *Context) Cookie(name string) string {
	for _, k := range c.Req.Cookies() {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// RemoteIP is the peer's address, without its port.
func (c *Context) RemoteIP() string {
	ip, _, err := net.SplitHostPort(c.Req.RemoteAddr)
	if err != nil {
		return c.Req.RemoteAddr
	}
	return ip
}

// ClientIP is the client's address, as trusted_proxies derive it.
func (c *Context) ClientIP() string { return c.in.ClientIP }

// Host is the request's host, without its port.
func (c *Context) Host() (string, error) {
	host, _, err := net.SplitHostPort(c.Req.Host)
	if err != nil {
		if !strings.Contains(c.Req.Host, ":") {
			return c.Req.Host, nil
		}
		return "", err
	}
	return host, nil
}

// WrappedHeader is .RespHeader: edits of the response's fields that
// print nothing in the output.
type WrappedHeader struct{ http.Header }

// Add adds a field value.
func (h WrappedHeader) Add(field, val string) string { h.Header.Add(field, val); return "" }

// Set sets a field.
func (h WrappedHeader) Set(field, val string) string { h.Header.Set(field, val); return "" }

// Del removes a field.
func (h WrappedHeader) Del(field string) string { h.Header.Del(field); return "" }

// funcs are Caddy's template functions, bound to c.
func (c *Context) funcs() template.FuncMap {
	return template.FuncMap{
		"include":          c.include,
		"readFile":         c.readFile,
		"import":           c.importFile,
		"httpInclude":      c.httpInclude,
		"stripHTML":        stripHTML,
		"markdown":         markdown,
		"splitFrontMatter": splitFrontMatter,
		"listFiles":        c.listFiles,
		"fileStat":         c.fileStat,
		"env":              os.Getenv,
		"placeholder":      c.placeholder,
		"ph":               c.placeholder,
		"fileExists":       c.fileExists,
		"httpError":        c.httpError,
		"humanize":         humanizeValue,
		"maybe":            maybe,
		"pathEscape":       url.PathEscape,
	}
}

// root is the directory the file functions read, as http.Dir keeps a
// name inside it.
func (c *Context) root() http.Dir {
	if c.in.Root == "" {
		return http.Dir(".")
	}
	return http.Dir(c.in.Root)
}

func (c *Context) readFileBytes(name string) ([]byte, error) {
	f, err := c.root().Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// include renders the file name as a template of its own, with args as
// its .Args.
func (c *Context) include(name string, args ...any) (string, error) {
	b, err := c.readFileBytes(name)
	if err != nil {
		return "", err
	}
	sub := *c
	sub.Args = args
	buf := bytes.NewBuffer(b)
	if err := sub.executeInBuffer(name, buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func (c *Context) readFile(name string) (string, error) {
	b, err := c.readFileBytes(name)
	return string(b), err
}

// importFile parses the file name into the template being executed, so
// that its definitions can be used; it prints nothing.
func (c *Context) importFile(name string) (string, error) {
	b, err := c.readFileBytes(name)
	if err != nil {
		return "", err
	}
	_, err = c.tpl.Parse(string(b))
	return "", err
}

// httpInclude would render another request's answer; pollproxy does not
// make requests from a template.
func (c *Context) httpInclude(uri string) (string, error) {
	return "", fmt.Errorf("httpInclude %s: not supported by pollproxy", uri)
}

func (c *Context) placeholder(name string) string {
	if c.in.Placeholder == nil {
		return ""
	}
	return c.in.Placeholder(name)
}

func (c *Context) listFiles(name string) ([]string, error) {
	d, err := c.root().Open(path.Clean(name))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%v is not a directory", name)
	}
	infos, err := d.Readdir(0)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(infos))
	for i, fi := range infos {
		names[i] = fi.Name()
	}
	return names, nil
}

func (c *Context) fileExists(name string) (bool, error) {
	f, err := c.root().Open(name)
	if err != nil {
		return false, nil
	}
	f.Close()
	return true, nil
}

func (c *Context) fileStat(name string) (fs.FileInfo, error) {
	f, err := c.root().Open(path.Clean(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// httpError ends the rendering with the error status: the client gets
// that error, without the fields the body's handler set about its body.
func (c *Context) httpError(status int) (bool, error) {
	for _, f := range bodyFields {
		c.RespHeader.Header.Del(f)
	}
	return false, StatusError{Status: status}
}

// bodyFields are the fields about a body that an error's answer drops.
var bodyFields = []string{"Content-Length", "Content-Type", "Etag", "Last-Modified", "Accept-Ranges", "Content-Encoding", "Content-Range"}

// humanizeValue is humanize "size" or "time[:LAYOUT]".
func humanizeValue(format, data string) (string, error) {
	kind, layout, hasLayout := strings.Cut(format, ":")
	switch kind {
	case "size":
		n, err := strconv.ParseUint(data, 10, 64)
		if err != nil {
			return "", fmt.Errorf("humanize: size cannot be parsed: %s", err.Error())
		}
		return humanize.Bytes(n), nil
	case "time":
		if !hasLayout {
			layout = time.RFC1123Z
		}
		t, err := time.Parse(layout, data)
		if err != nil {
			return "", fmt.Errorf("humanize: time cannot be parsed: %s", err.Error())
		}
		return humanize.Time(t), nil
	}
	return "", errors.New("no know function was given")
}

// maybe calls a plugin's function when it is there; pollproxy has no
// template plugins, so it prints nothing, as Caddy does for one missing.
func maybe(string, ...any) (any, error) { return "", nil }
