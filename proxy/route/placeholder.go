package route

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/status"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// phKind is one placeholder pollproxy can fill from a request.
type phKind uint8

const (
	phLiteral phKind = iota
	phHost
	phHostport
	phPort
	phURI
	phPath
	phQuery
	phMethod
	phScheme
	phRemoteHost
	phRemotePort
	phRemote
	phClientIP
	phHeader // the request field named by part.text
	phLabel  // the host's label part.n, counted from the right
	phSegment
	phQueryArg // the query argument named by part.text, decoded
	phCookie   // the cookie named by part.text
	phAuthUser // the user basic_auth authenticated
	phRegexp   // a regexp matcher's capture group: part.text is "NAME.KEY" or "KEY"
	// The upstream's address, known only once one is picked: Append
	// writes a mark (UpstreamMark and a kind byte) that FillUpstream
	// replaces for each upstream a request tries.
	phUpstreamHostport
	phUpstreamHost
	phUpstreamPort
	// What a request re-entering its routes was handed (stream.Handoff):
	// the error handle_errors renders, the response handle_response
	// matched.
	phErrStatus
	phErrStatusText
	phErrMessage
	phErrID
	phRespStatus
	phRespHeader // the response field named by part.text
	// The rest of Caddy's placeholder table (placeholdertable.go).
	phProto
	phProtoName
	phURIEscaped
	phPathEscaped
	phFile
	phDir
	phFileBase
	phFileExt
	phQueryEscaped
	phPrefixedQuery
	phDuration
	phDurationMs
	phUUID
	phOrigMethod
	phOrigURI
	phOrigPath
	phOrigFile
	phOrigFileEscaped
	phOrigDir
	phOrigQuery
	phOrigPrefixedQuery
	phOrigSegment // the original path's segment part.n
	phRemoteMask  // the client address's prefix: part.text is "V4[,V6]"
	phTLS         // the connection's TLS: part.text is the field
	phSystem      // system.*: part.text, filled at load
	phTimeNow     // time.now*: part.text is the format's name
	phVar         // the variable part.text (vars)
	phMapped      // a name only a map directive can fill: part.text
	phFileMatch   // what a file matcher found: part.text is the field
	phLocal       // the address the client connected to
	phLocalHost
	phLocalPort
	phShuttingDown      // whether a stop is scheduled (stream.Shutdown)
	phTimeUntilShutdown // how long until the scheduled stop closes the servers
)

// upstream reports whether k is an upstream placeholder.
func (k phKind) upstream() bool { return k >= phUpstreamHostport && k <= phUpstreamPort }

// UpstreamMark starts the mark Append writes for an upstream placeholder.
// NUL can never be in a valid field value, so a mark cannot be confused
// with bytes a client sent.
const UpstreamMark = 0

// upstreamMarks is the kind byte after UpstreamMark for each upstream
// placeholder.
var upstreamMarks = [...]byte{phUpstreamHostport: 'a', phUpstreamHost: 'h', phUpstreamPort: 'p'}

// placeholders maps Caddy's names (short and long) to what they read.
var placeholders = map[string]phKind{
	"host": phHost, "http.request.host": phHost,
	"hostport": phHostport, "http.request.hostport": phHostport,
	"port": phPort, "http.request.port": phPort,
	"uri": phURI, "http.request.uri": phURI,
	"path": phPath, "http.request.uri.path": phPath,
	"query": phQuery, "http.request.uri.query": phQuery,
	"method": phMethod, "http.request.method": phMethod,
	"scheme": phScheme, "http.request.scheme": phScheme,
	"remote_host": phRemoteHost, "http.request.remote.host": phRemoteHost,
	"remote_port": phRemotePort, "http.request.remote.port": phRemotePort,
	"remote": phRemote, "http.request.remote": phRemote,
	"client_ip": phClientIP, "http.vars.client_ip": phClientIP,
	"http.auth.user.id": phAuthUser,
	"upstream_hostport": phUpstreamHostport, "http.reverse_proxy.upstream.hostport": phUpstreamHostport,
	"http.reverse_proxy.upstream.host": phUpstreamHost,
	"http.reverse_proxy.upstream.port": phUpstreamPort,
	// What a request re-entering its routes was handed (stream.Handoff).
	"err.status_code": phErrStatus, "http.error.status_code": phErrStatus,
	"err.status_text": phErrStatusText, "http.error.status_text": phErrStatusText,
	"err.message": phErrMessage, "http.error.message": phErrMessage,
	"err.id": phErrID, "http.error.id": phErrID,
	"rp.status_code": phRespStatus, "http.reverse_proxy.status_code": phRespStatus,
	"resp.status_code": phRespStatus, "http.intercept.status_code": phRespStatus,
	"http.request.proto": phProto, "http.request.proto_name": phProtoName,
	"%uri": phURIEscaped, "http.request.uri_escaped": phURIEscaped,
	"%path": phPathEscaped, "http.request.uri.path_escaped": phPathEscaped,
	"file": phFile, "http.request.uri.path.file": phFile,
	"dir": phDir, "http.request.uri.path.dir": phDir,
	"http.request.uri.path.file.base": phFileBase, "file.base": phFileBase,
	"http.request.uri.path.file.ext": phFileExt, "file.ext": phFileExt,
	"%query": phQueryEscaped, "http.request.uri.query_escaped": phQueryEscaped,
	"?query": phPrefixedQuery, "http.request.uri.prefixed_query": phPrefixedQuery,
	"http.request.duration": phDuration, "http.request.duration_ms": phDurationMs,
	"uuid": phUUID, "http.request.uuid": phUUID,
	"orig_method": phOrigMethod, "http.request.orig_method": phOrigMethod,
	"orig_uri": phOrigURI, "http.request.orig_uri": phOrigURI,
	"orig_path": phOrigPath, "http.request.orig_uri.path": phOrigPath,
	"orig_file": phOrigFile, "http.request.orig_uri.path.file": phOrigFile,
	"http.request.orig_uri.path.file_escaped": phOrigFileEscaped,
	"orig_dir": phOrigDir, "http.request.orig_uri.path.dir": phOrigDir,
	"orig_query": phOrigQuery, "http.request.orig_uri.query": phOrigQuery,
	"orig_?query": phOrigPrefixedQuery, "http.request.orig_uri.prefixed_query": phOrigPrefixedQuery,
	"http.shutting_down": phShuttingDown, "http.time_until_shutdown": phTimeUntilShutdown,
	"http.request.local": phLocal, "http.request.local.host": phLocalHost, "http.request.local.port": phLocalPort,
}

type part struct {
	kind phKind
	text string
	n    int
}

// Template is a value with Caddy placeholders ({host}, {uri},
// {header.X-Name} ...) compiled once; Append fills it from a request.
type Template struct {
	parts []part
	raw   string
}

// TemplateOptions says which placeholders a place in the Caddyfile allows.
type TemplateOptions struct {
	// NoRequestFields refuses {header.*}: response edits run after the
	// request's fields may be gone.
	NoRequestFields bool
	// Upstream allows the upstream placeholders ({upstream_hostport} ...):
	// only header_up runs once an upstream is picked.
	Upstream bool
	// KeepUnknown leaves a placeholder pollproxy cannot fill as written,
	// as Caddy's respond does with one it does not know, instead of
	// refusing it.
	KeepUnknown bool
	// ReplaceAll writes a name Caddy does not know ({server_port}) as
	// nothing, as Caddy's rewrite, uri, vars and map do; elsewhere it
	// stays as written, as Caddy's header and respond leave it. Either
	// way a map directive that defines the name fills it.
	ReplaceAll bool
}

// ParseTemplate compiles s. A placeholder pollproxy cannot fill is an
// error naming it, never a literal left in the output.
func ParseTemplate(s string, opt TemplateOptions) (Template, error) {
	t := Template{raw: s}
	lit := strings.Builder{}
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{kind: phLiteral, text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '}') {
			lit.WriteByte(s[i+1])
			i++
			continue
		}
		if c != '{' {
			lit.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			lit.WriteString(s[i:])
			break
		}
		name := s[i+1 : i+end]
		i += end
		var p part
		if v, ok := strings.CutPrefix(name, "env."); ok {
			// Read once, at load: the environment does not change under
			// a running process.
			lit.WriteString(os.Getenv(v))
			continue
		}
		if v, ok := systemValue(name); ok {
			lit.WriteString(v) // read once, at load, as env
			continue
		}
		if k, ok := placeholders[name]; ok && !k.upstream() {
			flush()
			t.parts = append(t.parts, part{kind: k})
			continue
		}
		if p, ok := tablePart(name, opt); ok {
			flush()
			t.parts = append(t.parts, p)
			continue
		}
		if k, arg, ok := prefixed(name); ok {
			if opt.NoRequestFields {
				return t, fmt.Errorf("placeholder {%s}: request fields in response edits are not supported by pollproxy", name)
			}
			p = part{kind: k, text: arg}
			if k == phHeader || k == phRespHeader {
				p.text = strings.ToLower(arg)
			}
			if k == phRegexp && opt.KeepUnknown {
				p.n = 1 // a capture no match saved stays written, as respond's other unknowns
			}
			if k == phLabel || k == phSegment {
				n, err := strconv.Atoi(arg)
				if err != nil || n < 0 {
					return t, fmt.Errorf("placeholder {%s}: want a whole number after the dot", name)
				}
				p = part{kind: k, n: n}
			}
			flush()
			t.parts = append(t.parts, p)
			continue
		}
		switch {
		default:
			k, ok := placeholders[name]
			if !ok && !reserved(name) && userName(name) {
				// A name outside Caddy's namespaces: a map directive
				// may define it; otherwise Caddy leaves it or drops it.
				p = part{kind: phMapped, text: name}
				if !opt.ReplaceAll {
					p.n = 1
				}
				break
			}
			if opt.KeepUnknown && (!ok || k.upstream()) {
				// As Caddy's replacer: the brace stays, and the scan goes
				// on right after it, so {"a": "{host}"} fills {host}.
				lit.WriteByte('{')
				i -= end
				continue
			}
			if !ok {
				return t, fmt.Errorf("placeholder {%s} is not supported by pollproxy", name)
			}
			if k.upstream() && !opt.Upstream {
				return t, fmt.Errorf("placeholder {%s} outside header_up is not supported by pollproxy", name)
			}
			p = part{kind: k}
		}
		flush()
		t.parts = append(t.parts, p)
	}
	flush()
	return t, nil
}

// prefixes are Caddy's placeholders that take an argument after a dot,
// short and long forms.
var prefixes = []struct {
	prefix string
	kind   phKind
}{
	{"header.", phHeader}, {"http.request.header.", phHeader},
	{"labels.", phLabel}, {"http.request.host.labels.", phLabel},
	{"path.", phSegment}, {"http.request.uri.path.", phSegment},
	{"query.", phQueryArg}, {"http.request.uri.query.", phQueryArg},
	{"cookie.", phCookie}, {"http.request.cookie.", phCookie},
	{"re.", phRegexp}, {"http.regexp.", phRegexp},
	{"rp.header.", phRespHeader}, {"http.reverse_proxy.header.", phRespHeader},
	{"resp.header.", phRespHeader}, {"http.intercept.header.", phRespHeader},
}

// prefixed reads a placeholder with an argument ({header.X-Name},
// {labels.1}, {query.page} ...).
func prefixed(name string) (phKind, string, bool) {
	for _, p := range prefixes {
		if arg, ok := strings.CutPrefix(name, p.prefix); ok && arg != "" {
			return p.kind, arg, true
		}
	}
	return 0, "", false
}

// Literal returns the template's text when it has no placeholder.
func (t Template) Literal() (string, bool) {
	switch len(t.parts) {
	case 0:
		return "", true
	case 1:
		if t.parts[0].kind == phLiteral {
			return t.parts[0].text, true
		}
	}
	return "", false
}

// String is the template as written.
func (t Template) String() string { return t.raw }

// IsZero reports whether t was never parsed: a template a directive
// left unset.
func (t Template) IsZero() bool { return t.parts == nil }

// Append appends the template filled from r to dst.
func (t Template) Append(dst []byte, r *stream.Request) []byte {
	for _, p := range t.parts {
		dst = p.append(dst, r)
	}
	return dst
}

// append appends the part filled from r to dst.
func (p part) append(dst []byte, r *stream.Request) []byte {
	switch p.kind {
	case phLiteral:
		dst = append(dst, p.text...)
	case phHost:
		dst = append(dst, HostOnly(r.Authority)...)
	case phHostport:
		dst = append(dst, r.Authority...)
	case phPort:
		if i := strings.LastIndexByte(r.Authority, ':'); i >= 0 && !strings.HasSuffix(r.Authority, "]") {
			dst = append(dst, r.Authority[i+1:]...)
		} else if r.Scheme == "http" {
			dst = append(dst, "80"...)
		} else {
			dst = append(dst, "443"...)
		}
	case phURI:
		dst = append(dst, r.Path...)
	case phOrigFileEscaped:
		p := PathOnly(origTarget(r))
		dst = append(dst, p[strings.LastIndexByte(p, '/')+1:]...)
	case phOrigPrefixedQuery:
		if q := QueryOnly(origTarget(r)); q != "" {
			dst = append(append(dst, '?'), q...)
		}
	case phPath:
		dst = append(dst, PathOnly(r.Path)...)
	case phQuery:
		dst = append(dst, QueryOnly(r.Path)...)
	case phMethod:
		dst = append(dst, r.Method...)
	case phScheme:
		dst = append(dst, r.Scheme...)
	case phRemoteHost:
		dst = r.RemoteAddr.Addr().AppendTo(dst)
	case phClientIP:
		if r.ClientIP.IsValid() {
			dst = r.ClientIP.AppendTo(dst)
		} else {
			dst = r.RemoteAddr.Addr().AppendTo(dst)
		}
	case phRemotePort:
		dst = strconv.AppendUint(dst, uint64(r.RemoteAddr.Port()), 10)
	case phRemote:
		dst = r.RemoteAddr.AppendTo(dst)
	case phHeader:
		dst, _ = r.ClientValues(dst, p.text)
	case phLabel:
		dst = append(dst, hostLabel(HostOnly(r.Authority), p.n)...)
	case phSegment:
		dst = append(dst, pathSegment(PathOnly(r.Path), p.n)...)
	case phQueryArg:
		dst, _ = AppendQueryValues(dst, QueryOnly(r.Path), p.text)
	case phCookie:
		v, _ := Cookie(r, p.text, true)
		dst = append(dst, v...)
	case phAuthUser:
		dst = append(dst, r.AuthUser...)
	case phRegexp:
		if v, ok := captured(r, p.text); ok {
			dst = append(dst, v...)
		} else if p.n == 1 {
			// Caddy's replacer writes it back in its long form.
			dst = append(append(append(dst, "{http.regexp."...), p.text...), '}')
		}
	case phUpstreamHostport, phUpstreamHost, phUpstreamPort:
		dst = append(dst, UpstreamMark, upstreamMarks[p.kind])
	case phErrStatus, phErrStatusText, phErrMessage, phErrID, phRespStatus, phRespHeader:
		dst = appendHandoff(dst, p, r.Handoff)
	default:
		dst = p.appendTable(dst, r)
	}
	return dst
}

// captured is the capture group {re.KEY} or {re.NAME.KEY} names: the
// latest match that has it, as the later of two matches overwrites
// Caddy's placeholder; ok is false when none has.
func captured(r *stream.Request, key string) (v string, ok bool) {
	name, group := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		name, group = key[:i], key[i+1:]
	}
	for i := len(r.Captures) - 1; i >= 0; i-- {
		c := &r.Captures[i]
		if name != "" && c.Name != name {
			continue
		}
		if v, ok := c.Group(group); ok {
			return v, true
		}
	}
	return "", false
}

// MappedNames appends to dst the names the template reads that only a
// map directive can fill.
func (t Template) MappedNames(dst []string) []string {
	for _, p := range t.parts {
		if p.kind == phMapped {
			dst = append(dst, p.text)
		}
	}
	return dst
}

// UsesUpstream reports whether the template has an upstream placeholder.
func (t Template) UsesUpstream() bool {
	for _, p := range t.parts {
		if p.kind.upstream() {
			return true
		}
	}
	return false
}

// RequestHostMark is the Host value an origin gets when header_up removed
// Host or left it empty: FillUpstream writes the upstream's address
// there, without the port when it is the scheme's default, as Caddy's
// transport does for a request whose host is empty.
const RequestHostMark = string(rune(UpstreamMark)) + "r"

// FillUpstream appends head to dst with every upstream mark replaced by
// the upstream's address: hostport as Caddy's dial address ("host:port",
// or a Unix socket's path), host and port its halves. defaultPort is the
// upstream scheme's ("80" or "443"), which RequestHostMark leaves out.
func FillUpstream(dst, head []byte, hostport, defaultPort string) []byte {
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	for {
		i := bytes.IndexByte(head, UpstreamMark)
		if i < 0 || i+1 >= len(head) {
			return append(dst, head...)
		}
		dst = append(dst, head[:i]...)
		switch head[i+1] {
		case upstreamMarks[phUpstreamHostport]:
			dst = append(dst, hostport...)
		case upstreamMarks[phUpstreamHost]:
			dst = append(dst, host...)
		case upstreamMarks[phUpstreamPort]:
			dst = append(dst, port...)
		case RequestHostMark[1]:
			switch {
			case port != defaultPort:
				dst = append(dst, hostport...)
			case strings.IndexByte(host, ':') >= 0: // IPv6 keeps its brackets
				dst = append(append(append(dst, '['), host...), ']')
			default:
				dst = append(dst, host...)
			}
		}
		head = head[i+2:]
	}
}

// Expand returns the template filled from r: the literal itself, without
// allocating, when it has no placeholder.
func (t Template) Expand(r *stream.Request) string {
	if s, ok := t.Literal(); ok {
		return s
	}
	return string(t.Append(nil, r))
}

// origTarget is the request target before any rewrite.
func origTarget(r *stream.Request) string {
	if r.OriginalPath != "" {
		return r.OriginalPath
	}
	return r.Path
}

// PathOnly is the path of a request target, without its query.
func PathOnly(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}

// QueryOnly is the query of a request target, without the '?'.
func QueryOnly(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[i+1:]
	}
	return ""
}

// HostOnly strips the port and brackets of an authority, lowercases it and
// drops a trailing dot, allocating only when it is not already in that
// form.
func HostOnly(a string) string {
	if n := len(a); n > 0 && a[0] == '[' {
		if i := strings.IndexByte(a, ']'); i > 0 {
			a = a[1:i]
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 && strings.IndexByte(a, ':') == i {
		a = a[:i]
	}
	a = strings.TrimSuffix(a, ".")
	for i := 0; i < len(a); i++ {
		if c := a[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(a)
		}
	}
	return a
}

// hostLabel is the host's label n counted from the right, as Caddy's
// {labels.N}: in sub.example.com, 0 is com and 2 is sub; "" past the
// last.
func hostLabel(host string, n int) string {
	for i := len(host); i >= 0; {
		j := strings.LastIndexByte(host[:i], '.')
		if n == 0 {
			return host[j+1 : i]
		}
		if j < 0 {
			return ""
		}
		n--
		i = j
	}
	return ""
}

// pathSegment is the path's segment n counted from the left, as Caddy's
// {path.N}: in /a/b/c, 0 is a; "" past the last.
func pathSegment(path string, n int) string {
	path = strings.TrimPrefix(path, "/")
	for ; n > 0; n-- {
		i := strings.IndexByte(path, '/')
		if i < 0 {
			return ""
		}
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return path
}

// appendHandoff fills a placeholder of what the request was handed; each
// is empty when it was handed nothing of the kind.
func appendHandoff(dst []byte, p part, h *stream.Handoff) []byte {
	if h == nil {
		return dst
	}
	switch p.kind {
	case phErrStatus:
		if h.ErrStatus > 0 {
			dst = strconv.AppendInt(dst, int64(h.ErrStatus), 10)
		}
	case phErrStatusText:
		if h.ErrStatus > 0 {
			dst = append(dst, StatusText(h.ErrStatus)...)
		}
	case phErrMessage:
		dst = append(dst, h.ErrMessage...)
	case phErrID:
		dst = append(dst, h.ErrID...)
	case phRespStatus:
		if h.Status > 0 {
			dst = strconv.AppendInt(dst, int64(h.Status), 10)
		}
	case phRespHeader:
		first := true
		for _, f := range h.Header {
			if f.Name == p.text {
				if !first {
					dst = append(dst, ',')
				}
				dst, first = append(dst, f.Value...), false
			}
		}
	}
	return dst
}

// StatusText is {err.status_text}: the status's reason phrase, or its
// number when it has none.
func StatusText(code int) string {
	if t := status.Text(code); t != "" {
		return t
	}
	return strconv.Itoa(code)
}
