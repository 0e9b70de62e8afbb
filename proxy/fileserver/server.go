package fileserver

import (
	"errors"
	"html"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// defaultIndex is Caddy's list of index files.
var defaultIndex = []string{"index.html", "index.txt"}

// DefaultPrecompressed is the order of "precompressed" without names.
var DefaultPrecompressed = []string{"br", "zstd", "gzip"}

// suffixes are the sidecar file suffixes of the encodings Caddy knows.
var suffixes = map[string]string{"br": ".br", "zstd": ".zst", "gzip": ".gz"}

// Suffix is the sidecar suffix of a precompressed encoding, or "" for
// one Caddy does not have.
func Suffix(encoding string) string { return suffixes[encoding] }

// Options are one file_server directive's, as Caddy names them.
type Options struct {
	Hide          Hide
	Index         []string // nil: defaultIndex
	Precompressed []string // encodings, best first
	Status        int      // answer this instead of 200 or 206 (0: no)
	NoCanonical   bool     // disable_canonical_uris
	// PassThru: a file not found goes to the next handler, not 404
	// (the routes ask Finds first).
	PassThru bool
	// Browse lists a directory that has no index file (nil: 404).
	Browse *Browse
}

// Server is one file_server directive, built once per (re)load and only
// read afterwards, by every loop.
type Server struct {
	opt Options
}

// New returns the directive's server, on the Shared pool.
func New(opt Options) *Server {
	if opt.Index == nil {
		opt.Index = defaultIndex
	}
	return &Server{opt: opt}
}

// Browse is the directive's browse options, nil when it does not list
// directories.
func (s *Server) Browse() *Browse { return s.opt.Browse }

// PassThru reports whether the directive hands a request for a file
// that is not there to the next handler.
func (s *Server) PassThru() bool { return s.opt.PassThru }

// Serve answers req with the file its path names under root. orig is the
// request's target before any rewrite, for Caddy's canonical redirects.
// It runs on the loop; the disk work goes to the pool, and a full pool
// answers 503 at once.
func (s *Server) Serve(loop offload.Poster, root, orig string, req *stream.Request, w stream.ResponseWriter) stream.Events {
	cur := pathOnly(req.Path)
	rel, _, err := Clean(cur)
	if err != nil {
		return failure(400, nil).serveWith(req, w)
	}
	c := &conditions{method: req.Method}
	if req.Handoff != nil {
		c.errStatus = req.Handoff.ErrStatus
	}
	var ask *listAsk
	if s.opt.Browse != nil {
		ask = &listAsk{query: queryOnly(req.Path), secure: req.Scheme == "https", head: req.Method == "HEAD"}
	}
	for _, f := range req.Header {
		switch f.Name {
		case "accept":
			if ask != nil {
				ask.accept = joinField(ask.accept, f.Value)
			}
		case "cookie":
			if ask != nil {
				ask.cookies = append(ask.cookies, f.Value)
			}
		case "accept-encoding":
			c.acceptEncoding = joinField(c.acceptEncoding, f.Value)
		case "range":
			c.rng = f.Value
		case "if-range":
			c.ifRange = f.Value
		case "if-match":
			c.ifMatch, c.haveIfMatch = joinField(c.ifMatch, f.Value), true
		case "if-none-match":
			c.ifNoneMatch, c.haveIfNoneMatch = joinField(c.ifNoneMatch, f.Value), true
		case "if-modified-since":
			c.ifModified = f.Value
		case "if-unmodified-since":
			c.ifUnmodified = f.Value
		}
	}
	r := &response{w: w, loop: loop, pool: Shared(), head: req.Method == "HEAD"}
	t := target{root: root, rel: rel, orig: orig, cur: cur, list: ask}
	if offload.Do(r.pool, loop, func() *plan { return s.prepare(t, c) }, r.planned) != nil {
		return busy.serveWith(req, w)
	}
	return r
}

func joinField(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

func pathOnly(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}

func queryOnly(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[i+1:]
	}
	return ""
}

// target is where a request points: the root, the cleaned path under
// it, and the request's path before and after rewrites; what it asks of
// a listing, when the directive browses.
type target struct {
	root, rel string
	orig, cur string
	list      *listAsk
}

// plan is a response decided in the pool: its head, and a body read
// from file (or no file: only the segments' heads).
type plan struct {
	status int
	fields []stream.Field
	file   *os.File
	segs   []segment
	length int64
	failed bool   // an error for handle_errors (failure)
	set    int    // a failure: how many of fields its handler set (Caddy's header map), before content-length
	first  []byte // the body's first chunk, read with the plan
	at     int    // the segment fill reads next
	pos    int64  // how far into it (its head, then its file bytes)
}

// answer is a plan without a file: status and fields, an empty body.
func answer(status int, fields []stream.Field) *plan {
	return &plan{status: status, fields: append(fields, stream.Field{Name: "content-length", Value: "0"})}
}

// failure is answer for an error Caddy's file_server returns rather than
// writes (a file not there, one it may not read, a method it does not
// serve): the site's error routes render it when it has them.
func failure(status int, fields []stream.Field) *plan {
	p := answer(status, fields)
	p.failed, p.set = true, len(fields)
	return p
}

// textAnswer is a plan with a small body in memory, as Go's http.Error
// and http.Redirect write them for Caddy: text/plain for an error,
// text/html for a redirect's link.
func textAnswer(status int, fields []stream.Field, body string) *plan {
	ctype := "text/plain; charset=utf-8"
	if status/100 == 3 {
		ctype = "text/html; charset=utf-8"
	} else {
		fields = append(fields, stream.Field{Name: "x-content-type-options", Value: "nosniff"})
	}
	return &plan{status: status, first: []byte(body), fields: append(fields,
		stream.Field{Name: "content-type", Value: ctype},
		stream.Field{Name: "content-length", Value: strconv.Itoa(len(body))})}
}

// appendSet appends the fields that have a value.
func appendSet(fields []stream.Field, more ...stream.Field) []stream.Field {
	for _, f := range more {
		if f.Value != "" {
			fields = append(fields, f)
		}
	}
	return fields
}

var busy = failure(503, []stream.Field{{Name: "retry-after", Value: "1"}})

// prepare does a request's disk work, in the pool: open what the path
// names (an index file for a directory), refuse what is hidden or not a
// regular file, choose a precompressed sidecar, evaluate the
// conditional fields and ranges, and read the body's first chunk.
func (s *Server) prepare(t target, c *conditions) *plan {
	f, info, name, implicitIndex, p := s.locate(t.root, t.rel)
	if p != nil {
		return p
	}
	if info.IsDir() { // no index file, and the directive browses
		return s.list(t, c, f, info)
	}
	if p := s.canonical(t, implicitIndex, c.method); p != nil {
		f.Close()
		return p
	}
	vary := stream.Field{Name: "vary", Value: "Accept-Encoding"}
	etag, size, encoding := etagOf(info.ModTime(), info.Size()), info.Size(), ""
	for _, enc := range acceptedEncodings(c.acceptEncoding, s.opt.Precompressed) {
		g, gi, err := openFile(t.root, name+suffixes[enc])
		if err != nil {
			continue
		}
		if !gi.Mode().IsRegular() {
			g.Close()
			continue
		}
		f.Close()
		f, size, etag, encoding = g, gi.Size(), etagOf(gi.ModTime(), gi.Size()), enc
		break
	}
	if c.method != "GET" && c.method != "HEAD" && c.errStatus == 0 {
		f.Close()
		return failure(405, []stream.Field{{Name: "allow", Value: "GET, HEAD"}, vary})
	}
	// The fields as Go's http.ServeContent leaves them for Caddy: each
	// answer below keeps or drops some.
	mod, ctype := info.ModTime(), mime.TypeByExtension(filepath.Ext(name))
	lastModified := stream.Field{Name: "last-modified"}
	if usefulModTime(mod) {
		lastModified.Value = mod.UTC().Format(http.TimeFormat)
	}
	fields := []stream.Field{vary}
	if etag != "" {
		fields = append(fields, stream.Field{Name: "etag", Value: etag})
	}
	switch c.check(etag, mod) {
	case notModified: // no content fields; Last-Modified only without an ETag
		f.Close()
		if etag == "" && lastModified.Value != "" {
			fields = append(fields, lastModified)
		}
		return &plan{status: s.status(304, c), fields: fields}
	case preconditionFailed:
		f.Close()
		fields = appendSet(fields, lastModified, stream.Field{Name: "content-type", Value: ctype})
		return answer(s.status(412, c), fields)
	}
	if encoding != "" {
		fields = append(fields, stream.Field{Name: "content-encoding", Value: encoding})
	}
	p = &plan{status: 200, file: f, segs: []segment{{n: size}}, length: size}
	if c.rng != "" {
		spans, err := parseRanges(c.rng, size)
		switch {
		case err != nil: // net/http's error text, as Caddy answers
			f.Close()
			fields = fields[:1] // an error drops the validators
			if err == errNoOverlap {
				fields = append(fields, stream.Field{Name: "content-range", Value: "bytes */" + strconv.FormatInt(size, 10)})
			}
			return textAnswer(416, fields, err.Error()+"\n")
		case len(spans) == 1:
			p.status, p.segs, p.length = 206, []segment{{off: spans[0].start, n: spans[0].n}}, spans[0].n
			fields = append(fields, stream.Field{Name: "content-range", Value: contentRange(spans[0], size)})
		case len(spans) > 1:
			p.status = 206
			p.segs, p.length, ctype = multipart(spans, ctype, size)
		}
	}
	fields = appendSet(fields, lastModified, stream.Field{Name: "accept-ranges", Value: "bytes"},
		stream.Field{Name: "content-type", Value: ctype})
	p.status = s.status(p.status, c)
	p.fields = append(fields, stream.Field{Name: "content-length", Value: strconv.FormatInt(p.length, 10)})
	if c.method == "HEAD" || p.length == 0 {
		f.Close()
		p.file, p.segs = nil, nil
		return p
	}
	buf := getChunk()
	n, err := p.fill(buf)
	if err != nil {
		putChunk(buf)
		return failure(500, nil)
	}
	p.first = buf[:n]
	return p
}

// locate opens the file rel names under root: the file itself, or a
// directory's first index file that is there and not hidden, or else,
// when the directive browses, the directory (not hidden) to list. A plan
// instead when there is none to serve (404), or it cannot be opened.
func (s *Server) locate(root, rel string) (f *os.File, info os.FileInfo, name string, implicitIndex bool, p *plan) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, "", false, failure(500, nil)
	}
	f, info, err = openFile(root, rel)
	if err != nil {
		return nil, nil, "", false, openFailed(err)
	}
	name = rel
	if info.IsDir() {
		dir, dirInfo := f, info
		f = nil
		for _, idx := range s.opt.Index {
			cand := path.Join(rel, idx)
			if s.opt.Hide.hidden(path.Join(absRoot, cand)) {
				continue
			}
			if g, gi, err := openFile(root, cand); err == nil {
				if gi.Mode().IsRegular() {
					f, info, name, implicitIndex = g, gi, cand, true
					break
				}
				g.Close()
			}
		}
		if f == nil && s.opt.Browse != nil && !s.opt.Hide.hidden(path.Join(absRoot, rel)) {
			return dir, dirInfo, rel, false, nil
		}
		dir.Close()
		if f == nil {
			return nil, nil, "", false, failure(404, nil)
		}
	}
	if !info.Mode().IsRegular() || s.opt.Hide.hidden(path.Join(absRoot, name)) {
		f.Close()
		return nil, nil, "", false, failure(404, nil)
	}
	return f, info, name, implicitIndex, nil
}

// Finds reports whether a request for rel under root would be served
// rather than answered 404: what pass_thru asks, in the pool.
func (s *Server) Finds(root, rel string) bool {
	f, _, _, _, p := s.locate(root, rel)
	if f != nil {
		f.Close()
	}
	return p == nil || p.status != 404
}

// status is the answer's status: the directive's, when it has one, or
// else the error's it renders.
func (s *Server) status(st int, c *conditions) int {
	if s.opt.Status != 0 {
		return s.opt.Status
	}
	if c.errStatus != 0 {
		return c.errStatus
	}
	return st
}

// canonical is Caddy's canonical redirect: a directory's index asked for
// without the trailing slash, or a file with one, is redirected (308) to
// the path as it should be, unless a rewrite changed the path's last
// element (then the rewrite meant it).
func (s *Server) canonical(t target, implicitIndex bool, method string) *plan {
	if s.opt.NoCanonical {
		return nil
	}
	origPath, err := url.PathUnescape(pathOnly(t.orig))
	od, err1 := url2path(pathOnly(t.orig))
	cd, err2 := url2path(t.cur)
	if err != nil || err1 != nil || err2 != nil || path.Base(od) != path.Base(cd) {
		return nil
	}
	var to string
	switch {
	case implicitIndex && !strings.HasSuffix(od, "/"):
		to = origPath + "/"
	case !implicitIndex && strings.HasSuffix(od, "/"):
		to = strings.TrimSuffix(origPath, "/")
	default:
		return nil
	}
	return redirect(t, to, method)
}

// redirect is Caddy's redirect (308) to the path to (decoded, as
// Caddy's request path), with the request's query, through Go's
// http.Redirect as Caddy's: the path is cleaned (a trailing slash kept)
// when the target parses as a URL, and non-ASCII bytes are escaped in
// Location, not in the link of the body.
func redirect(t target, to, method string) *plan {
	for strings.HasPrefix(to, "//") { // never a redirect to another host
		to = to[1:]
	}
	if q := queryOnly(t.orig); q != "" {
		to += "?" + q
	}
	if u, err := url.Parse(to); err == nil && u.Scheme == "" && u.Host == "" {
		p, query := to, ""
		if i := strings.IndexByte(to, '?'); i >= 0 {
			p, query = to[:i], to[i:]
		}
		trailing := strings.HasSuffix(p, "/")
		if p = path.Clean(p); trailing && !strings.HasSuffix(p, "/") {
			p += "/"
		}
		to = p + query
	}
	loc := stream.Field{Name: "location", Value: escapeNonASCII(to)}
	if method != "GET" && method != "HEAD" {
		return answer(308, []stream.Field{loc})
	}
	// Go's http.Redirect, which Caddy answers with, adds a link.
	return textAnswer(308, []stream.Field{loc}, "<a href=\""+html.EscapeString(to)+"\">Permanent Redirect</a>.\n\n")
}

// escapeNonASCII writes each byte of s outside ASCII as "%" and its hex
// digits, lower case and without a leading zero (none is needed: each
// is 0x80 or more), as Go's http.Redirect does for Location.
func escapeNonASCII(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf {
			if b.Len() == 0 && i > 0 {
				b.WriteString(s[:i])
			}
			b.WriteByte('%')
			b.WriteString(strconv.FormatInt(int64(c), 16))
		} else if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

func url2path(p string) (string, error) {
	rel, dir, err := Clean(p)
	if err != nil {
		return "", err
	}
	if dir {
		return "/" + rel + "/", nil
	}
	return "/" + rel, nil
}

// openFile opens rel under root and reads its metadata.
func openFile(root, rel string) (*os.File, os.FileInfo, error) {
	f, err := openBeneath(root, rel)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// openFailed maps a failed open to Caddy's answer: 404 for what is not
// there (or not under the root), 403 for what may not be read, 503
// otherwise (out of descriptors, most likely), with a Retry-After.
func openFailed(err error) *plan {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errEscape), errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.ENAMETOOLONG):
		return failure(404, nil)
	case errors.Is(err, fs.ErrPermission):
		return failure(403, nil)
	}
	return busy
}
