package proxy

// The request side of the FastCGI transport: the CGI environment built
// as Caddy's transport builds it, the records the exchange sends
// (FCGI_BEGIN_REQUEST, FCGI_PARAMS, FCGI_STDIN), and the body of unknown
// length that is buffered, up to Caddy's 4 KiB, to learn the
// CONTENT_LENGTH php-fpm needs.

import (
	"crypto/tls"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/fastcgi"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// FastCGI is transport fastcgi: the upstreams are FastCGI responders
// (php-fpm), and each request becomes a CGI environment and records.
type FastCGI struct {
	// Root is the document root (root); "" is the site's root directive,
	// Caddy's default {http.vars.root}, else the working directory.
	Root string
	// Split cuts the path into SCRIPT_NAME and PATH_INFO (split).
	Split fastcgi.Split
	// Env are extra variables (env), set last: a client's field never
	// overrides one.
	Env []FastCGIEnv
	// ResolveRootSymlink resolves the root's symbolic links
	// (resolve_root_symlink).
	ResolveRootSymlink bool
	// Stderr, when set, gets what the application wrote on stderr for a
	// request, with the response's status (capture_stderr). It runs on
	// the loop and must not block.
	Stderr func(upstream string, status int, text []byte)
}

// FastCGIEnv is one env variable; its value may hold placeholders.
type FastCGIEnv struct {
	Name  string
	Value route.Template
}

// fcgiBufferLimit is how much of a body of unknown length is buffered to
// learn its length: Caddy's 4096 for this transport. A body that reaches
// it is refused (411), as Caddy refuses it.
const fcgiBufferLimit = 4096

// serverSoftware is SERVER_SOFTWARE.
const serverSoftware = "pollproxy"

// fcgiStart readies ex's FastCGI request for req: the records, unless the
// body's length is unknown, when they wait for the body to end
// (fcgiBodyEnd). It reports false when ex was answered instead.
func (h *Handler) fcgiStart(ex *exchange, req *stream.Request, trusted bool) bool {
	if _, ok := h.fcgiScript(req); !ok {
		ex.bodyEnded = !req.HasBody
		ex.end(answer(400, observe.ReasonBadPath, ""))
		return false
	}
	ex.trusted = trusted
	if req.HasBody && req.ContentLength < 0 {
		ex.fcgiHeld = true
		return true
	}
	ex.head = h.fcgiRecords(ex.head[:0], req, trusted, max(req.ContentLength, 0))
	if !req.HasBody {
		ex.head = fastcgi.AppendEnd(ex.head, fastcgi.TypeStdin, fcgiRequestID)
	}
	return true
}

// fcgiSendBody sends body bytes p (body of them the client's) as
// FCGI_STDIN records, or buffers them while the length is unknown.
func (ex *exchange) fcgiSendBody(p []byte, body int) {
	if ex.fcgiHeld {
		if len(ex.early)+len(p) >= fcgiBufferLimit {
			ex.end(answer(411, observe.ReasonLengthRequired, ""))
			return
		}
		ex.early = append(ex.early, p...)
		ex.earlyBody += body
		return
	}
	if ex.bc != nil && !ex.bc.comingUp() {
		ex.fcgiKeepStdin(p)
		ex.bc.sendStdin(p) // framed straight into the connection's output
		return
	}
	ex.fcgiSend(fastcgi.AppendStream(nil, fastcgi.TypeStdin, fcgiRequestID, p), body)
}

// stdinEnd is the empty FCGI_STDIN record that ends a request's body.
var stdinEnd = [8]byte(fastcgi.AppendEnd(nil, fastcgi.TypeStdin, fcgiRequestID))

// fcgiSend sends framed records carrying body bytes of the client's.
func (ex *exchange) fcgiSend(framed []byte, body int) {
	if ex.bc != nil && !ex.bc.comingUp() {
		ex.fcgiKeep(framed, body)
	}
	if ex.bc == nil || ex.bc.comingUp() {
		// Kept, as any body sent before the connection is up: a connect
		// that fails takes all of it to another connection (connected).
		ex.early = append(ex.early, framed...)
		ex.earlyBody += body
		if ex.bc == nil {
			return
		}
	}
	ex.bc.send(framed, body)
}

// fcgiBodyEnd ends FCGI_STDIN; a buffered body now has its length, and
// its request starts.
func (ex *exchange) fcgiBodyEnd() {
	if !ex.fcgiHeld {
		ex.fcgiSend(stdinEnd[:], 0)
		return
	}
	ex.fcgiHeld = false
	body, n := ex.early, ex.earlyBody
	ex.early, ex.earlyBody = nil, 0
	h := ex.h
	ex.head = h.fcgiRecords(ex.head[:0], ex.req, ex.trusted, int64(len(body)))
	ex.head = fastcgi.AppendStream(ex.head, fastcgi.TypeStdin, fcgiRequestID, body)
	ex.head = fastcgi.AppendEnd(ex.head, fastcgi.TypeStdin, fcgiRequestID)
	// The buffered bytes were the client's: they count as written with
	// the records.
	ex.w.Consumed(n)
	ex.begin(nil)
}

// fcgiPath is a request path cut for the CGI environment: DOCUMENT_URI,
// PATH_INFO and SCRIPT_NAME.
type fcgiPath struct {
	docURI, pathInfo, scriptName string
}

// fcgiScript cuts req's path as Caddy's transport does: the decoded path,
// cleaned, cut at the split. ok is false for a path that names a script
// unsafely: a NUL byte, or an escaped form ("%2e%2e", "%2f") that would
// name another script than the decoded one.
func (h *Handler) fcgiScript(req *stream.Request) (fcgiPath, bool) {
	raw := route.PathOnly(req.Path)
	decoded, err := url.PathUnescape(raw)
	if err != nil || strings.IndexByte(decoded, 0) >= 0 {
		return fcgiPath{}, false
	}
	split := h.cfg.FastCGI.Split
	fpath := cleanPath(decoded)
	p := fcgiPath{docURI: fpath, scriptName: fpath}
	if pos := split.Pos(fpath); pos > -1 {
		p.docURI, p.pathInfo = fpath[:pos], fpath[pos:]
		p.scriptName = strings.TrimSuffix(fpath, p.pathInfo)
	}
	if strings.IndexByte(raw, '%') >= 0 {
		escaped, err := url.PathUnescape(cleanPath(raw))
		if err != nil || split.Script(escaped) != p.docURI {
			return fcgiPath{}, false
		}
	}
	return p, true
}

// cleanPath is path.Clean keeping a trailing slash ("" stays "").
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c
}

// sanitizedJoin joins a request path to root as Caddy's
// SanitizedPathJoin: cleaned, never above root, a trailing slash kept.
func sanitizedJoin(root, reqPath string) string {
	if root == "" {
		root = "."
	}
	var rel string
	if strings.HasPrefix(reqPath, "/") {
		rel = path.Clean(reqPath)[1:] // no copy when it is clean already
	} else {
		rel = path.Clean("/" + reqPath)[1:]
	}
	if rel != "" && !filepath.IsLocal(rel) {
		return root
	}
	var p string
	switch rel = filepath.FromSlash(rel); {
	case rel == "":
		p = filepath.Clean(root)
	case filepath.IsAbs(root) && filepath.Clean(root) == root:
		// filepath.Join's answer, without its second copy: a clean
		// root joined to a clean local path is clean ("/" is the one
		// root that ends in a separator).
		p = strings.TrimSuffix(root, string(filepath.Separator)) + string(filepath.Separator) + rel
	default:
		p = filepath.Join(root, rel)
	}
	if strings.HasSuffix(reqPath, "/") && len(reqPath) > 1 {
		p += string(filepath.Separator)
	}
	return p
}

// fcgiRoot is the absolute document root for the root the routes set
// (or the transport's own), symbolic links resolved when asked. Each is
// worked out once per loop: the answer is the same for every request.
func (h *Handler) fcgiRoot(varsRoot string) string {
	r := h.cfg.FastCGI.Root
	if r == "" {
		r = varsRoot
	}
	if r == "" {
		r = "."
	}
	if abs, ok := h.fcgiRoots[r]; ok {
		return abs
	}
	abs, err := filepath.Abs(r)
	if err != nil {
		abs = r
	}
	if h.cfg.FastCGI.ResolveRootSymlink {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	if h.fcgiRoots == nil {
		h.fcgiRoots = map[string]string{}
	}
	if len(h.fcgiRoots) < 64 {
		h.fcgiRoots[r] = abs
	}
	return abs
}

var tlsVersions = map[uint16]string{
	tls.VersionTLS10: "TLSv1",
	tls.VersionTLS11: "TLSv1.1",
	tls.VersionTLS12: "TLSv1.2",
	tls.VersionTLS13: "TLSv1.3",
}

// fcgiRecords appends FCGI_BEGIN_REQUEST and the FCGI_PARAMS stream of
// req's CGI environment to dst, as Caddy's transport builds it, for a
// body of length bytes.
func (h *Handler) fcgiRecords(dst []byte, req *stream.Request, trusted bool, length int64) []byte {
	fc := h.cfg.FastCGI
	sp, _ := h.fcgiScript(req)
	if sp.pathInfo == "" {
		sp.pathInfo = req.FileRemainder
	}
	root := h.fcgiRoot(req.Root)
	scriptFilename := sanitizedJoin(root, sp.scriptName)
	if sp.scriptName != "" && !strings.HasPrefix(sp.scriptName, "/") {
		sp.scriptName = "/" + sp.scriptName
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(req.Authority)
	if err != nil {
		host, port = req.Authority, ""
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	uri := req.OriginalPath
	if uri == "" {
		uri = req.Path
	}
	ip := h.clientIP(req.RemoteAddr.Addr())
	fields := h.requestFields(req, trusted)
	contentType := lastValue(fields, "content-type")
	method := req.Method
	cl := length
	switch method {
	case "HEAD", "OPTIONS":
		cl = 0
	case "GET":
	default:
		if contentType == "" {
			contentType = "application/x-www-form-urlencoded"
		}
	}

	dst = fastcgi.AppendBegin(dst, fcgiRequestID, true)
	p := &h.params
	p.Begin(dst, fcgiRequestID)
	p.Add("AUTH_TYPE", "")
	p.AddInt("CONTENT_LENGTH", cl)
	p.Add("CONTENT_TYPE", contentType)
	p.Add("GATEWAY_INTERFACE", "CGI/1.1")
	p.Add("PATH_INFO", sp.pathInfo)
	p.Add("QUERY_STRING", route.QueryOnly(req.Path))
	p.Add("REMOTE_ADDR", ip)
	p.Add("REMOTE_HOST", ip)
	p.AddInt("REMOTE_PORT", int64(req.RemoteAddr.Port()))
	p.Add("REMOTE_IDENT", "")
	p.Add("REMOTE_USER", req.AuthUser)
	p.Add("REQUEST_METHOD", method)
	p.Add("REQUEST_SCHEME", scheme)
	p.Add("SERVER_NAME", host)
	p.Add("SERVER_PORT", port)
	p.Add("SERVER_PROTOCOL", req.Proto)
	p.Add("SERVER_SOFTWARE", serverSoftware)
	p.Add("DOCUMENT_ROOT", root)
	p.Add("DOCUMENT_URI", sp.docURI)
	p.Add("HTTP_HOST", req.Authority)
	p.Add("REQUEST_URI", uri)
	p.Add("SCRIPT_FILENAME", scriptFilename)
	p.Add("SCRIPT_NAME", sp.scriptName)
	if sp.pathInfo != "" {
		p.Add("PATH_TRANSLATED", sanitizedJoin(root, sp.pathInfo))
	}
	if t := req.TLS; t != nil {
		p.Add("HTTPS", "on")
		if v, ok := tlsVersions[t.Version]; ok {
			p.Add("SSL_PROTOCOL", v)
		}
		if name := tls.CipherSuiteName(t.CipherSuite); !strings.HasPrefix(name, "0x") {
			p.Add("SSL_CIPHER", name)
		}
	}
	h.fcgiFields(fields, length)
	for _, e := range fc.Env {
		p.Add(e.Name, string(e.Value.Append(h.scratch[:0], req)))
	}
	return p.Finish()
}

// fcgiFields adds HTTP_* for every request field as Caddy's transport
// does: one variable per name, repeated fields joined with ", ", Host
// (HTTP_HOST is the request's authority) and Proxy (httpoxy) left out,
// User-Agent present even when empty, Content-Length always (the
// body's length, "0" without one). Names holding '_' never get here (routing drops them), so no two
// fields fold to one variable.
func (h *Handler) fcgiFields(fields []stream.Field, length int64) {
	p := &h.params
	ua := false
	for i, f := range fields {
		switch f.Name {
		case "host", "proxy", "content-length":
			continue
		case "user-agent":
			ua = true
		}
		seen := false
		for _, g := range fields[:i] {
			if g.Name == f.Name {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		val := f.Value
		for _, g := range fields[i+1:] {
			if g.Name == f.Name {
				val += ", " + g.Value
			}
		}
		p.Add(h.cgiName(f.Name), val)
	}
	if !ua {
		p.Add("HTTP_USER_AGENT", "")
	}
	// Caddy's proxy buffers the start of every body, an empty one too,
	// and writes the length it learned into the request's fields.
	p.AddInt("HTTP_CONTENT_LENGTH", length)
}

// maxCGINames bounds a loop's memo of HTTP_* names.
const maxCGINames = 256

// cgiName is HTTP_ and the field name upper-cased, '-' made '_',
// remembered per loop: requests name the same few fields.
func (h *Handler) cgiName(name string) string {
	if n, ok := h.cgiNames[name]; ok {
		return n
	}
	n := cgiNameOf(name)
	if h.cgiNames == nil {
		h.cgiNames = map[string]string{}
	}
	if len(h.cgiNames) < maxCGINames {
		h.cgiNames[name] = n
	}
	return n
}

// cgiNameOf is cgiName's work.
func cgiNameOf(name string) string {
	b := make([]byte, 0, 5+len(name))
	b = append(b, "HTTP_"...)
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '-':
			c = '_'
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}
