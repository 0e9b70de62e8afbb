package site

import (
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/encode"
	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/static"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Handler is one loop's evaluator of a Table.
type Handler struct {
	t        *Table
	proxies  []stream.Handler
	clientFn route.ClientIPFunc
	loop     offload.Poster // the loop the handler runs on: off-loop work posts its answers here
	ctx      route.Ctx
	resp     []Directive    // response edits and encodes matched for the request in progress (EditResponse, Encode)
	preset   []stream.Field // the fields its immediate edits set so far (preset.go)
	auths    []authStep     // basic_auth directives it matched, in order
	fields   []stream.Field
	checks   checks     // basic_auth's checks off the loop (basicauth.go)
	stack    []frame    // where evaluation stands (walk)
	icpt     *Intercept // the intercept the request matched, if any
	encoders encode.Pool
	memo     fileMemo // what file matchers ask in a request's first pass, reused
	scratch  []byte   // where file matchers expand their candidates

	shutdown *stream.Shutdown // the process's scheduled stop, for {http.shutting_down}; nil: never read

	obs        observe.Observer // the site's access logs, for the answers the routes make (answerlog.go)
	clock      LoopClock
	logHeaders bool
}

// NewHandler returns t's evaluator for loop, ending in that loop's
// reverse proxies (indexed by Proxy.Index and ForwardAuth.Proxy). clientIP derives the client
// address for client_ip matchers (nil: the peer's).
func NewHandler(t *Table, proxies []stream.Handler, clientIP route.ClientIPFunc, loop offload.Poster) *Handler {
	return &Handler{t: t, proxies: proxies, clientFn: clientIP, loop: loop}
}

// WatchShutdown makes the requests the handler serves read s: the stop
// their process schedules, which {http.shutting_down} and
// {http.time_until_shutdown} report.
func (h *Handler) WatchShutdown(s *stream.Shutdown) { h.shutdown = s }

// Serve runs the routes over one request. Without a terminal route that
// matches, the answer is an empty 200, as in Caddy.
func (h *Handler) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	req.OriginalPath, req.OriginalMethod = req.Path, req.Method
	req.Shutdown = h.shutdown
	if lc, ok := h.loop.(LoopClock); ok {
		req.Start = lc.Now()
	} else {
		req.Start = time.Now()
	}
	// Matchers and placeholders never see a CGI alias, as in Caddy.
	req.Header = field.DropCGIAliases(req.Header)
	if len(h.t.Errors) > 0 {
		return h.watch(req, w)
	}
	return h.serve(req, w)
}

func (h *Handler) serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	return h.serveFrom(h.t.Nodes, req, w)
}

// serveFrom runs the routes nodes over req from the start. When file
// matchers asked about the disk, the request waits for the pool's answer
// and the routes run again (lookFiles).
func (h *Handler) serveFrom(nodes []Node, req *stream.Request, w stream.ResponseWriter) stream.Events {
	path, header, user := req.Path, req.Header, req.AuthUser
	n, vars := h.evaluate(nodes, req, nil)
	if memo, _ := h.ctx.Files.(*fileMemo); memo != nil && len(memo.pending) > 0 {
		return h.lookFiles(nodes, req, w, path, header, user)
	}
	return h.finish(n, vars, req, w)
}

// evaluate runs the routes nodes over req, with what file matchers
// learned of the disk so far (memo, nil at first), and returns the
// terminal route (nil: none matched).
func (h *Handler) evaluate(nodes []Node, req *stream.Request, memo *fileMemo) (*Node, reqVars) {
	h.ctx.Reset(req, h.clientFn)
	if req.Handoff != nil { // the error routes start where the routes left the root
		h.ctx.Root = req.Handoff.Root
	}
	req.Root = h.ctx.Root
	req.ClientIP = h.ctx.ClientIP() // for {client_ip}
	req.Captures = req.Captures[:0] // a second pass (file matchers) saves them again
	if memo == nil {
		// The first pass: no answers yet, and what the matchers ask
		// is copied by lookFiles, so the loop's own memo serves.
		h.memo.found, h.memo.pending = nil, h.memo.pending[:0]
		memo = &h.memo
	}
	memo.scratch = &h.scratch
	h.ctx.Files = memo
	h.resp = h.resp[:0]
	h.preset = append(h.preset[:0], presetBase(req)...)
	h.auths = h.auths[:0]
	h.icpt = nil
	orig := req.Path
	n := h.run(nodes)
	return n, reqVars{root: h.ctx.Root, orig: orig, rem: h.ctx.FileRem}
}

// finish hands the request to n, the route where evaluation stopped,
// once the basic_auth directives it matched on the way have passed.
func (h *Handler) finish(n *Node, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	req.Root, req.FileRemainder = vars.root, vars.rem // for a FastCGI environment, whichever way it is proxied
	if h.icpt != nil {
		return h.intercept(n, vars, req, w)
	}
	var at *resumePoint
	if n != nil && relays(n) {
		at = h.savePoint(vars)
	}
	if len(h.auths) > 0 {
		return h.authenticate(n, at, vars, req, w)
	}
	return h.answer(n, at, h.edits(), vars, req, w)
}

// answer hands the request to the terminal route n (nil: none matched),
// with the response edits resp. A route that hands the request to another
// exchange first gets at, where the request re-enters the routes.
func (h *Handler) answer(n *Node, at *resumePoint, resp edits, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	proxied := false
	if n != nil {
		if req.Handoff != nil && req.Handoff.Depth >= maxDepth {
			return Responder(508, "").Serve(req, w)
		}
		switch d := n.Do.(type) {
		case *ForwardAuth:
			return h.forwardAuth(d, at, resp, req, w)
		case *Proxy:
			if len(d.Responses) > 0 {
				return h.proxyRouted(d, at, resp, req, w)
			}
			proxied = true
		}
	}
	if h.obs != nil && !proxied {
		// A reverse proxy observes its own requests.
		w, a := h.observed(req, w)
		return a.events(h.reply(n, resp, vars, req, w))
	}
	return h.reply(n, resp, vars, req, w)
}

// reply is answer's work, observed or not: the response edits and
// encodes resp wrap w, then the terminal route n answers.
func (h *Handler) reply(n *Node, resp edits, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	if len(resp.dirs) == 0 && len(resp.preset) == 0 {
		return h.terminal(n, vars, req, w)
	}
	var one [1]eventer
	w, encs := h.edit(w, req, resp, mergeFor(n), one[:0])
	return encoded(h.terminal(n, vars, req, w), encs)
}

// edit wraps w in the response edits and encodes resp: each matched
// directive wraps the writer of those before it, as Caddy's middleware
// chain does, and the handler writes to the last. The encode directives'
// Writers are appended to encs: the request's events must go through
// them (encoded). The fields the immediate edits set are the innermost
// writer (presetWriter), joined with the handler's as merge says.
func (h *Handler) edit(w stream.ResponseWriter, req *stream.Request, e edits, merge byte, encs []eventer) (stream.ResponseWriter, []eventer) {
	resp := e.dirs
	for i := 0; i < len(resp); {
		if tpl, ok := resp[i].(*Templates); ok {
			if req.Upgrade == "" {
				tw := h.wrapTemplates(tpl, req, w)
				w = tw
				encs = append(encs, tw)
			}
			i++
			continue
		}
		if enc, ok := resp[i].(*Encode); ok {
			// A tunnel's bytes are never encoded.
			if req.Upgrade == "" {
				ew := encode.Wrap(enc.Config, &h.encoders, req, w)
				if name := ew.Encoding(); name != "" {
					req.Header = encode.StripETags(req.Header, name)
				}
				w = ew
				encs = append(encs, ew)
			}
			i++
			continue
		}
		j := i + 1
		for j < len(resp) {
			if _, ok := resp[j].(*EditResponse); !ok {
				break
			}
			j++
		}
		if deferring(resp[i:j]) {
			w = h.wrap(w, req, resp[i:j])
		}
		i = j
	}
	if len(e.preset) > 0 {
		w = h.presetFields(w, e.preset, merge)
	}
	return w, encs
}

// eventer is a writer that edit wraps whose request's events must pass
// through it (encode's, templates'): encoded puts it in front.
type eventer interface {
	Events(inner stream.Events) stream.Events
}

// encoded returns the Events of a request whose handler returned ev and
// whose writer edit wrapped in the encoders encs: each encoder sees the
// events first, so that what it holds goes out before its handler hears
// OnWritable.
func encoded(ev stream.Events, encs []eventer) stream.Events {
	for i := len(encs) - 1; i >= 0; i-- {
		ev = encs[i].Events(ev)
	}
	return ev
}

// terminal hands the request to the terminal route n (nil: none matched).
func (h *Handler) terminal(n *Node, vars reqVars, req *stream.Request, w stream.ResponseWriter) stream.Events {
	if n == nil {
		return unanswered(req).Serve(req, w)
	}
	switch d := n.Do.(type) {
	case *Proxy:
		return h.proxies[d.Index].Serve(req, w)
	case *Respond:
		if d.Close {
			stream.CloseConnection(w)
		}
		if status, ok := respondStatus(d, req); ok {
			return Responder(status, d.Body.Expand(req)).Serve(req, w)
		}
		if d.Static == nil { // a body with placeholders
			return Responder(d.Status, d.Body.Expand(req)).Serve(req, w)
		}
		return d.Static.Serve(req, w)
	case *Redirect:
		return h.redirect(d, req, w)
	case *Abort:
		w.Reset(stream.CodeInternal)
		return nil
	case *BasicAuth:
		return h.unauthorized(d, req, w)
	case *FileServer:
		root := d.Root
		if root == "" {
			root = vars.root
		}
		if root == "" {
			root = "." // Caddy's default: the working directory
		}
		return d.Files.Serve(h.loop, root, vars.orig, req, w)
	case *Error:
		return h.raise(d, req, w)
	case *CopyResponse:
		return h.copyResponse(d, req, w)
	}
	return unanswered(req).Serve(req, w)
}

// run evaluates a list of routes from the start and returns the terminal
// route that answers, or nil.
func (h *Handler) run(nodes []Node) *Node {
	h.stack = append(h.stack[:0], frame{nodes: nodes})
	return h.walk()
}

// walk evaluates the routes on h.stack from where it stands and returns
// the terminal route that answers, or nil. A route that hands the request
// to another exchange first (forward_auth) is returned like a terminal
// one, with h.stack just past it: the request re-enters the table there
// (reenter.go). The stack is the handler's, reused, so evaluating
// allocates nothing once it has grown to the table's depth.
func (h *Handler) walk() *Node {
	for len(h.stack) > 0 {
		f := &h.stack[len(h.stack)-1]
		if f.i >= len(f.nodes) {
			h.stack = h.stack[:len(h.stack)-1]
			continue
		}
		n := &f.nodes[f.i]
		f.i++
		bit := uint64(0)
		if n.Exclusive > 0 {
			// Exclusive groups that already ran, at most 64 per list.
			bit = 1 << (uint(n.Exclusive-1) & 63)
			if f.done&bit != 0 {
				continue
			}
		}
		if n.Match != nil && !n.Match.Match(&h.ctx) {
			continue
		}
		if h.ctx.FailStatus != 0 { // a file matcher reached "=NNN"
			return statusNode(h.ctx.FailStatus)
		}
		f.done |= bit
		switch d := n.Do.(type) {
		case *EditResponse:
			h.resp = append(h.resp, d)
			if d.Immediate {
				h.preset = applyImmediate(h.preset, d, h.ctx.Req)
			}
		case *Encode, *Templates:
			h.resp = append(h.resp, d)
		case *EditRequest:
			r := h.ctx.Req
			r.Header = route.ApplyHeaderOps(append([]stream.Field(nil), r.Header...), d.Ops, r)
		case *Rewrite:
			h.rewrite(d)
		case *URI:
			h.uri(d)
		case *BasicAuth:
			h.matchedAuth(n, d)
		case *SetRoot:
			h.ctx.Root, h.ctx.Req.Root = d.Root, d.Root
		case *FileServer:
			if d.Files.PassThru() && !h.fileServerFinds(d) {
				continue
			}
			return n
		case *LogSkip:
			h.ctx.Req.LogSkip = true
		case *RequestBody:
			h.ctx.Req.MaxBodySize = d.MaxBody
		case *SetMethod:
			h.ctx.Req.Method = d.Method
		case *SetVars:
			route.ApplyVars(d.Ops, h.ctx.Req)
		case *MapVars:
			route.PassMap(d.Map, h.ctx.Req)
		case *Intercept:
			if h.icpt == nil {
				h.icpt = d
			}
		case *Group:
			if d.Strip != "" {
				h.setPath(stripPrefix(h.ctx.Req.Path, d.Strip))
			}
			h.stack = append(h.stack, frame{nodes: d.Children})
		default:
			return n
		}
	}
	return nil
}

func (h *Handler) setPath(p string) {
	if p != h.ctx.Req.Path {
		h.ctx.Req.Path = p
		h.ctx.PathChanged()
	}
}

// stripPrefix removes prefix from target's path as Caddy's strip_prefix
// (and handle_path) does; see stripPath.
func stripPrefix(target, prefix string) string { return stripPath(target, prefix, true) }

// stripPath removes prefix (or, !atStart, a suffix) from target's path as
// Caddy's uri strip_prefix and strip_suffix do: the path is cleaned first
// (dot segments resolved, repeated slashes merged unless the text itself
// holds "//"), even when nothing is then removed; the text is compared
// without case for ASCII letters; and what remains is anchored at "/" and
// cleaned again, so stripping the whole path leaves "/", never an empty
// request target. The query is kept.
func stripPath(target, text string, atStart bool) string {
	p, q := route.PathOnly(target), route.QueryOnly(target)
	hasQuery := len(p) < len(target)
	if p == "" || p == "*" {
		return target
	}
	p = cleanPath(p, !strings.Contains(text, "//"))
	stripped := false
	switch {
	case atStart && len(p) >= len(text) && equalFoldASCII(p[:len(text)], text):
		p, stripped = p[len(text):], true
	case !atStart && len(p) >= len(text) && equalFoldASCII(p[len(p)-len(text):], text):
		p, stripped = p[:len(p)-len(text)], true
	}
	if stripped {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		p = cleanPath(p, false)
	}
	if hasQuery {
		return p + "?" + q
	}
	return p
}

// cleanPath is Caddy's CleanPath: path.Clean that keeps a trailing slash
// and merges repeated slashes only when merge is set.
func cleanPath(p string, merge bool) string {
	if !merge && strings.Contains(p, "//") {
		// Each empty segment gets a placeholder byte that no request
		// path holds (0xff is not valid in a target), so Clean keeps it.
		var b strings.Builder
		b.Grow(len(p) + 4)
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && i > 0 && p[i-1] == '/' {
				b.WriteByte(0xff)
			}
			b.WriteByte(p[i])
		}
		return strings.ReplaceAll(cleanKeepSlash(b.String()), "\xff", "")
	}
	return cleanKeepSlash(p)
}

func cleanKeepSlash(p string) string {
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c
}

// equalFoldASCII compares a and b, of equal length, byte by byte with
// ASCII letters folded, as Caddy's strip comparisons do.
func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (h *Handler) uri(n *URI) {
	target := h.ctx.Req.Path
	p, q := route.PathOnly(target), target[len(route.PathOnly(target)):]
	switch n.Op {
	case StripPrefix:
		h.setPath(stripPath(target, n.Find, true))
	case StripSuffix:
		h.setPath(stripPath(target, n.Find, false))
	case Replace:
		// Caddy's uri replace cleans the path as strip does (merging
		// slashes unless the text holds "//") and replaces in the query
		// too, each up to the limit.
		limit := n.Limit
		if limit == 0 {
			limit = -1
		}
		if n.Find == "" {
			return
		}
		if p != "" && p != "*" {
			p = cleanPath(p, !strings.Contains(n.Find, "//"))
		}
		p = strings.Replace(p, n.Find, n.ReplBy, limit)
		if q != "" {
			q = "?" + strings.Replace(q[1:], n.Find, n.ReplBy, limit)
		}
		h.setPath(p + q)
	case RegexpPath:
		h.setPath(n.Regexp.ReplaceAllString(p, n.ReplBy) + q)
	case EditQuery:
		if nq := n.Query.Apply(strings.TrimPrefix(q, "?"), h.ctx.Req); nq != "" {
			h.setPath(p + "?" + nq)
		} else {
			h.setPath(p)
		}
	}
}

// rewrite replaces the request target (Caddy's rewrite).
func (h *Handler) rewrite(n *Rewrite) {
	prefix := ""
	if n.FileTarget {
		prefix = h.ctx.FileRel
	}
	if to := route.RewriteTarget(n.To, prefix, h.ctx.Req); to != "" {
		h.setPath(to)
	}
}

func (h *Handler) redirect(n *Redirect, req *stream.Request, w stream.ResponseWriter) stream.Events {
	if n.Static != nil {
		return n.Static.Serve(req, w)
	}
	return Redirector(n.Status, n.To.Expand(req), n.HTML).Serve(req, w)
}

// Redirector is a response redirecting to loc with status (or, html, a
// page that redirects in the browser, as Caddy's "redir ... html": its
// page byte for byte, loc HTML-escaped in all four places, the script's
// string too, where the escapes are not decoded and so cannot end it).
func Redirector(status int, loc string, html bool) *static.Handler {
	if html {
		safe := htmlEscape(loc)
		body := []byte("<!DOCTYPE html>\n<html>\n\t<head>\n\t\t<title>Redirecting...</title>\n" +
			"\t\t<script>window.location.replace(\"" + safe + "\");</script>\n" +
			"\t\t<meta http-equiv=\"refresh\" content=\"0; URL='" + safe + "'\">\n\t</head>\n" +
			"\t<body>Redirecting to <a href=\"" + safe + "\">" + safe + "</a>...</body>\n</html>\n")
		return static.NewResponse(200, []stream.Field{
			{Name: "content-type", Value: "text/html; charset=utf-8"},
			{Name: "content-length", Value: strconv.Itoa(len(body))},
		}, body)
	}
	return static.NewResponse(status, []stream.Field{
		{Name: "location", Value: loc},
		{Name: "content-length", Value: "0"},
	}, nil)
}

// respondStatus is respond's status when it is not the one compiled: a
// placeholder's, or the error's in an error route when respond named
// none (an invalid number: 500).
func respondStatus(n *Respond, req *stream.Request) (int, bool) {
	if !n.StatusT.IsZero() {
		s, err := strconv.Atoi(n.StatusT.Expand(req))
		if err != nil || s < 100 || s > 599 {
			s = 500
		}
		return s, true
	}
	if n.StatusUnset && req.Handoff != nil && req.Handoff.ErrStatus > 0 {
		return req.Handoff.ErrStatus, true
	}
	return 0, false
}

// Responder is respond's answer: status and body, as plain text.
func Responder(status int, body string) *static.Handler {
	fields := []stream.Field{{Name: "content-length", Value: strconv.Itoa(len(body))}}
	if body != "" {
		fields = append([]stream.Field{{Name: "content-type", Value: "text/plain; charset=utf-8"}}, fields...)
	}
	return static.NewResponse(status, fields, []byte(body))
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

func htmlEscape(s string) string { return htmlEscaper.Replace(s) }

// empty is the answer when no terminal route matched.
var empty = static.NewResponse(200, []stream.Field{{Name: "content-length", Value: "0"}}, nil)

// unanswered is the answer to req when no terminal route matched: the
// empty 200, or, in the error routes, the error's status with an empty
// body, as Caddy's error routes end in a handler that writes it (a site
// whose handle_errors blocks all name statuses other than this error's).
func unanswered(req *stream.Request) *static.Handler {
	if req.Handoff != nil && req.Handoff.ErrStatus > 0 {
		return ErrorResponse(req.Handoff.ErrStatus)
	}
	return empty
}

// respWriter applies the deferred response edits when the head is
// written: a run of header directives, the later wrapped inside the
// earlier in Caddy, so the later apply first; each one's ?Field defaults
// before its other edits, and an immediate one's defaults alone (its
// other edits are preset's).
type respWriter struct {
	stream.ResponseWriter
	h     *Handler
	ops   [4]*EditResponse
	more  []*EditResponse
	n     int
	req   stream.Request // the request's scalars, for placeholders
	wrote bool
}

// wrap wraps w in a respWriter of resp, a run of header directives.
func (h *Handler) wrap(w stream.ResponseWriter, req *stream.Request, resp []Directive) stream.ResponseWriter {
	rw := &respWriter{ResponseWriter: w, h: h, n: len(resp)}
	ops := rw.ops[:0]
	if len(resp) > len(rw.ops) {
		ops = make([]*EditResponse, 0, len(resp))
	}
	for _, d := range resp {
		ops = append(ops, d.(*EditResponse))
	}
	if len(resp) > len(rw.ops) {
		rw.more = ops
	}
	rw.req = *req
	rw.req.Header = nil
	return rw
}

// nodes returns the directives rw applies. More of them than ops holds
// live in more alone (wrap), and ops[:n] would slice past the array.
func (rw *respWriter) nodes() []*EditResponse {
	if rw.more != nil {
		return rw.more
	}
	return rw.ops[:rw.n]
}

// deferring reports whether any of the header directives resp has edits
// for the head (deferred ones, or ?Field defaults).
func deferring(resp []Directive) bool {
	for _, d := range resp {
		if n := d.(*EditResponse); !n.Immediate || hasDefaults(n.Ops) {
			return true
		}
	}
	return false
}

func hasDefaults(ops []route.HeaderOp) bool {
	for i := range ops {
		if ops[i].Op == '?' {
			return true
		}
	}
	return false
}

// Unwrap implements stream.Unwrapper.
func (rw *respWriter) Unwrap() stream.ResponseWriter { return rw.ResponseWriter }

// RouteError implements stream.ErrorRouter: the error goes on to the
// error routes. When they do not take it, the handler's own error answer
// passes unedited: Caddy writes it to the response writer its deferred
// edits never wrapped.
func (rw *respWriter) RouteError(status int, message string, fields []stream.Field) bool {
	if stream.RouteErrorFields(rw.ResponseWriter, status, message, fields) {
		return true
	}
	rw.wrote = true
	return false
}

var (
	_ stream.Unwrapper   = (*respWriter)(nil)
	_ stream.ErrorRouter = (*respWriter)(nil)
	_ stream.Unwrapper   = (*answerLog)(nil)
)

// WriteHeader applies the matched header directives to a final head.
func (rw *respWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status < 200 || rw.wrote {
		return rw.ResponseWriter.WriteHeader(status, fields, end)
	}
	rw.wrote = true
	fs := append(rw.h.fields[:0], fields...)
	nodes := rw.nodes()
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.Match == nil || n.Match.Matches(status, fs) {
			fs = route.ApplyDefaultOps(fs, n.Ops, &rw.req)
		}
		if n.Immediate || n.Match != nil && !n.Match.Matches(status, fs) {
			continue
		}
		if n.CopyFrom != nil {
			fs = n.CopyFrom.appendCopied(fs, rw.req.Handoff)
		}
		fs = route.ApplyMainOps(fs, n.Ops, &rw.req)
	}
	rw.h.fields = fs[:0]
	return rw.ResponseWriter.WriteHeader(status, fs, end)
}
