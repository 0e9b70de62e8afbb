package h2

import (
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

type streamField = stream.Field

var errHPACKStringLength = hpack.ErrStringLength

type blockKind uint8

const (
	blockDiscard  blockKind = iota // decoded only to keep the HPACK state
	blockRequest                   // opens a stream
	blockTrailers                  // ends an open stream
	blockRefuse                    // REFUSED_STREAM once decoded
	blockError                     // a stream error once decoded
)

const (
	hasMethod uint8 = 1 << iota
	hasScheme
	hasAuthority
	hasPath
	hasProtocol // RFC 8441's :protocol, only while extended CONNECT is on
)

// headerBlock is the header block being decoded (HEADERS and its
// CONTINUATION frames). Fields are validated as the decoder emits them; the
// verdict is given at END_HEADERS, since the block must be decoded in full
// to keep the connection's HPACK state.
type headerBlock struct {
	active    bool
	id        uint32
	endStream bool
	kind      blockKind
	s         *h2Stream

	bytes  int    // encoded bytes so far
	size   uint32 // decoded size (RFC 9113 §6.5.2)
	tooBig bool

	errCode   http2.ErrCode
	errReason string
	bad       string // why the request is malformed

	has                             uint8
	method, scheme, authority, path string
	protocol                        string
	sawRegular                      bool
	host                            string
	hasHost                         bool
	cookies                         int
	trailers                        []stream.Field
}

func (hb *headerBlock) reset(id uint32, endStream bool) {
	*hb = headerBlock{active: true, id: id, endStream: endStream}
}

func (hb *headerBlock) fail(code http2.ErrCode, reason string) {
	if hb.kind == blockError {
		return
	}
	hb.kind = blockError
	hb.s = nil
	hb.errCode = code
	hb.errReason = reason
}

func (hb *headerBlock) malformed(reason string) {
	if hb.bad == "" {
		hb.bad = reason
	}
}

// onField is the hpack.Decoder's emit function.
func (c *ServerConn) onField(hf hpack.HeaderField) {
	hb := &c.hdr
	hb.size += hf.Size()
	if hb.size > c.cfg.MaxHeaderListSize {
		// Keep decoding (the dynamic table must stay in sync), stop
		// collecting: the HPACK bomb costs us CPU bounded by
		// MaxHeaderBlockBytes, never memory.
		hb.tooBig = true
		c.dec.SetEmitEnabled(false)
		return
	}
	switch hb.kind {
	case blockRequest:
		c.requestField(hf)
	case blockTrailers:
		c.trailerField(hf)
	}
}

func (c *ServerConn) requestField(hf hpack.HeaderField) {
	hb := &c.hdr
	if hb.bad != "" {
		return
	}
	name, value := hf.Name, hf.Value
	if len(name) > 0 && name[0] == ':' {
		if hb.sawRegular {
			hb.malformed("pseudo-header after a regular field")
			return
		}
		var bit uint8
		switch name {
		case ":method":
			bit, hb.method = hasMethod, value
		case ":scheme":
			bit, hb.scheme = hasScheme, value
		case ":authority":
			bit, hb.authority = hasAuthority, value
		case ":path":
			bit, hb.path = hasPath, value
		case ":protocol":
			if c.cfg.NoExtendedConnect {
				hb.malformed(":protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL")
				return
			}
			bit, hb.protocol = hasProtocol, value
		default:
			hb.malformed("unknown or response pseudo-header " + name)
			return
		}
		if hb.has&bit != 0 {
			hb.malformed("duplicate " + name)
			return
		}
		hb.has |= bit
		return
	}
	hb.sawRegular = true
	if !field.ValidLowerName(name) {
		hb.malformed("invalid field name")
		return
	}
	if !field.ValidValue(value) {
		hb.malformed("invalid value for " + name)
		return
	}
	if field.Lookup(name).Has(field.ConnectionSpecific) {
		hb.malformed("connection-specific field " + name)
		return
	}
	s := hb.s
	switch name {
	case "te":
		if !strings.EqualFold(value, "trailers") {
			hb.malformed("te other than trailers")
			return
		}
		// A hop-by-hop field: kept apart from Header (stream.Request.Hop),
		// in one array shared read-only by every stream.
		s.req.Hop = teTrailers
		return
	case "host":
		if hb.hasHost && hb.host != value {
			hb.malformed("conflicting host fields")
			return
		}
		hb.host, hb.hasHost = value, true
		return
	case "cookie":
		hb.cookies++
	case "content-length":
		n, ok := field.ParseContentLength(value)
		if !ok || s.declared >= 0 && s.declared != n {
			hb.malformed("invalid content-length")
			return
		}
		if s.declared >= 0 {
			return // an identical repeat
		}
		s.declared = n
	}
	s.req.Header = append(s.req.Header, stream.Field{Name: name, Value: value})
}

func (c *ServerConn) trailerField(hf hpack.HeaderField) {
	hb := &c.hdr
	if hb.bad != "" {
		return
	}
	name, value := hf.Name, hf.Value
	switch {
	case len(name) > 0 && name[0] == ':':
		hb.malformed("pseudo-header in trailers")
	case !field.ValidLowerName(name):
		hb.malformed("invalid trailer name")
	case !field.ValidValue(value):
		hb.malformed("invalid trailer value")
	case field.Lookup(name).Has(field.HopByHop):
		hb.malformed("connection-specific field in trailers")
	default:
		hb.trailers = append(hb.trailers, stream.Field{Name: name, Value: value})
	}
}

// endHeaderBlock gives the verdict on a fully decoded header block.
func (c *ServerConn) endHeaderBlock() error {
	hb := &c.hdr
	switch hb.kind {
	case blockRefuse:
		c.framer().WriteRSTStream(hb.id, http2.ErrCodeRefusedStream)
		c.recordClosed(hb.id, closedByUs)
	case blockError:
		return streamErr{hb.id, hb.errCode, hb.errReason}
	case blockTrailers:
		s := hb.s
		hb.s = nil
		if s.closed {
			return nil
		}
		switch {
		case hb.tooBig:
			return streamErr{hb.id, http2.ErrCodeProtocol, "trailers too large"}
		case hb.bad != "":
			return streamErr{hb.id, http2.ErrCodeProtocol, hb.bad}
		case s.declared >= 0 && s.recv != s.declared:
			return streamErr{hb.id, http2.ErrCodeProtocol, "body length differs from content-length"}
		}
		tr := hb.trailers
		hb.trailers = nil
		c.remoteEnd(s, tr)
	case blockRequest:
		return c.startRequest()
	}
	return nil
}

// startRequest validates a request head (RFC 9113 §8.3) and serves it.
func (c *ServerConn) startRequest() error {
	hb := &c.hdr
	s := hb.s
	hb.s = nil
	if hb.tooBig {
		c.rejectRequest(hb.id, 431, hb.endStream)
		return nil
	}
	authority, bad := hb.checkRequest(s)
	if bad != "" {
		return streamErr{hb.id, http2.ErrCodeProtocol, bad}
	}
	if hb.method == "CONNECT" && hb.has&hasProtocol == 0 {
		// A reverse proxy is not a forward proxy: only extended CONNECT
		// (RFC 8441) tunnels, to the site's own upstream.
		c.rejectRequest(hb.id, 405, hb.endStream)
		return nil
	}
	req := &s.req
	req.Method = hb.method
	req.Scheme, req.TLS = c.cfg.Scheme, c.cfg.TLS
	req.Authority = authority
	req.Path = hb.path
	if hb.cookies > 1 {
		joinCookies(req)
	}
	req.ContentLength = s.declared
	req.HasBody = !hb.endStream
	req.Proto = "HTTP/2.0"
	req.RemoteAddr = c.remoteAddr
	req.Upgrade = hb.protocol
	req.Conn, _ = c.t.(stream.Abandoner) // a transport that can be abandoned after a panic
	s.tunnel = hb.has&hasProtocol != 0
	s.noContent = hb.method == "HEAD" // kept if a route changes the method
	s.remoteEnded = hb.endStream
	s.inflow.init(int32(c.win.streamWin))
	s.outWin = c.peerInitialWindow
	if c.streams == nil {
		c.streams = make(map[uint32]*h2Stream)
	}
	c.streams[s.id] = s
	c.serving = s.id
	ev := c.h.Serve(req, s)
	if !s.closed {
		s.events = ev
	} else if r, ok := ev.(stream.Releaser); ok {
		c.release(s, r) // answered within Serve
	}
	return nil
}

// checkRequest checks the pseudo-headers together and returns the
// authority, or why the request is malformed.
func (hb *headerBlock) checkRequest(s *h2Stream) (authority, bad string) {
	if hb.bad != "" {
		return "", hb.bad
	}
	if hb.has&hasMethod == 0 || !field.ValidMethod(hb.method) {
		return "", "missing or invalid :method"
	}
	authority = hb.authority
	if hb.has&hasAuthority != 0 {
		if hb.hasHost && hb.host != authority {
			return "", "host differs from :authority"
		}
	} else {
		authority = hb.host
	}
	if !field.ValidAuthority(authority) {
		return "", "invalid authority"
	}
	if hb.has&hasProtocol != 0 {
		// RFC 8441 §4: an extended CONNECT carries :scheme and :path, and
		// :protocol is allowed on nothing else.
		if hb.method != "CONNECT" || hb.has&hasAuthority == 0 || authority == "" {
			return "", "malformed extended CONNECT"
		}
		if !field.ValidName(hb.protocol) {
			return "", "invalid :protocol"
		}
	} else if hb.method == "CONNECT" {
		if hb.has&(hasScheme|hasPath) != 0 || authority == "" || hb.has&hasAuthority == 0 {
			return "", "malformed CONNECT"
		}
		return authority, ""
	}
	if hb.has&hasScheme == 0 || !validScheme(hb.scheme) {
		return "", "missing or invalid :scheme"
	}
	if hb.has&hasPath == 0 || hb.path == "" {
		return "", "missing or empty :path"
	}
	if hb.path[0] != '/' && !(hb.path == "*" && hb.method == "OPTIONS") {
		return "", "invalid :path"
	}
	if !field.ValidPath(hb.path) {
		return "", "invalid :path"
	}
	if hb.endStream && s.declared > 0 {
		return "", "content-length without a body"
	}
	return authority, ""
}

// joinCookies concatenates cookie crumbs with "; " (RFC 9113 §8.2.3) into
// the first cookie field.
func joinCookies(req *stream.Request) {
	var b strings.Builder
	first := -1
	out := req.Header[:0]
	for i, f := range req.Header {
		if f.Name != "cookie" {
			out = append(out, f)
			continue
		}
		if f.Value == "" {
			// An empty crumb would leave "; " at an end of the joined
			// value: a field value with trailing whitespace.
			continue
		}
		if first < 0 {
			first = len(out)
			out = append(out, f)
		} else {
			b.WriteString("; ")
		}
		_ = i
		b.WriteString(f.Value)
	}
	if first >= 0 {
		out[first].Value = b.String()
	}
	req.Header = out
}

// validScheme checks a :scheme value against RFC 3986 §3.1: a letter,
// then letters, digits, "+", "-" and ".".
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		alpha := b|0x20 >= 'a' && b|0x20 <= 'z'
		if !alpha && (i == 0 || !(b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.')) {
			return false
		}
	}
	return true
}

// teTrailers is the Hop of a request that sent "te: trailers", the only
// TE an h2 request may carry (RFC 9113 §8.2.2). Never written to.
var teTrailers = []stream.Field{{Name: "te", Value: "trailers"}}
