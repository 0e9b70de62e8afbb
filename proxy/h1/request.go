package h1

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// parser states shared by RequestParser and ResponseParser.
const (
	stHead uint8 = iota
	stBody
	stDone
	stFailed
)

// RequestParser reads HTTP/1.0 and HTTP/1.1 requests incrementally. The
// zero value is ready to use with default Limits; set Limits before the
// first Feed to change them.
//
// One request at a time: Feed reports EventHead, then EventBody as body
// bytes arrive, then EventDone, after which it consumes nothing until
// Reset. That is exactly what a pipelining-safe server needs: bytes of the
// next request stay in the caller's buffer until it is ready for them.
//
// The Request, its Header and Trailers are reused by the next request after
// Reset. Their strings point into one string per head, the only allocation
// a request costs in steady state.
type RequestParser struct {
	// Limits bounds the head, fields, lines and chunk framing.
	Limits Limits

	lim    Limits
	inited bool
	state  uint8
	hr     headReader
	br     bodyReader
	tokens []string // Connection options naming hop-by-hop fields
	req    stream.Request
	body   []byte

	keepAlive bool
	expect    bool
}

func (p *RequestParser) init() {
	p.lim = p.Limits.withDefaults()
	p.hr.maxSize = p.lim.MaxHeadSize
	p.hr.maxLine = p.lim.MaxLineSize
	p.hr.maxLines = p.lim.MaxFields + 1
	p.hr.skipLeading = true
	p.hr.sizeErr = errHeadTooLarge
	p.hr.firstErr = errURITooLong
	p.hr.lineErr = errFieldTooLong
	p.inited = true
}

// Reset prepares the parser for the next request on the connection.
func (p *RequestParser) Reset() {
	if !p.inited {
		p.init()
	}
	p.state = stHead
	p.hr.reset()
	p.body = nil
}

// Feed consumes a prefix of b and reports at most one event. n is how many
// bytes of b were consumed; the caller keeps b[n:] for the next call. Head
// bytes are copied (bounded by Limits); body bytes are not: after
// EventBody, Body returns a sub-slice of b. An error is an *Error whose
// Status is what the server should answer; the parser is then unusable
// until Reset.
func (p *RequestParser) Feed(b []byte) (n int, ev Event, err error) {
	return p.feed(b, len(b))
}

// feed is Feed with at most maxBody body bytes reported, for a server
// honouring its handler's window.
func (p *RequestParser) feed(b []byte, maxBody int) (n int, ev Event, err error) {
	if !p.inited {
		p.init()
	}
	switch p.state {
	case stHead:
		n, done, herr := p.hr.feed(b)
		if herr == nil && done {
			herr = p.parseHead()
		}
		if herr != nil {
			p.state = stFailed
			return n, EventNone, herr
		}
		if !done {
			return n, EventNone, nil
		}
		p.state = stBody
		return n, EventHead, nil
	case stBody:
		n, body, done, berr := p.br.feed(b, maxBody)
		if berr != nil {
			p.state = stFailed
			return n, EventNone, berr
		}
		if len(body) > 0 {
			p.body = body
			return n, EventBody, nil
		}
		if done {
			p.state = stDone
			return n, EventDone, nil
		}
		return n, EventNone, nil
	}
	return 0, EventNone, nil
}

// EOF reports the end of the client's byte stream: nil when the parser
// stood between requests, ErrTruncated inside one.
func (p *RequestParser) EOF() error {
	switch p.state {
	case stHead:
		if !p.hr.started {
			return nil
		}
	case stBody:
		if p.br.eof() {
			return nil
		}
	case stDone, stFailed:
		return nil
	}
	return ErrTruncated
}

// Request returns the parsed head after EventHead. Scheme and RemoteAddr
// are left for the caller, which knows the connection.
func (p *RequestParser) Request() *stream.Request { return &p.req }

// Body returns the bytes reported by the last EventBody.
func (p *RequestParser) Body() []byte { return p.body }

// Trailers returns the chunked trailers after EventDone, with fields that
// may not appear in trailers removed.
func (p *RequestParser) Trailers() []stream.Field { return p.br.trailers }

// KeepAlive reports whether the client asked for the connection to stay
// open after this request (HTTP/1.1 unless "Connection: close", HTTP/1.0
// only with "Connection: keep-alive").
func (p *RequestParser) KeepAlive() bool { return p.keepAlive }

// ExpectContinue reports an HTTP/1.1 request with a body that carried
// "Expect: 100-continue" (removed from Header: it is answered hop by hop).
func (p *RequestParser) ExpectContinue() bool { return p.expect }

// Started reports whether any byte of a request head (beyond the empty
// lines a client may send between requests) has arrived, which is what
// separates a slow client (408) from an idle one (silent close).
func (p *RequestParser) Started() bool { return p.state != stHead || p.hr.started }

// parseHead validates the buffered head and fills p.req.
func (p *RequestParser) parseHead() *Error {
	buf := p.hr.buf
	le := p.hr.startEnd
	line := buf[:le]

	sp1 := bytes.IndexByte(line, ' ')
	if sp1 < 0 {
		return errRequestLine
	}
	for _, c := range line[:sp1] {
		if !field.IsTchar(c) {
			return errMethod
		}
	}
	if sp1 == 0 {
		return errMethod
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 <= 0 {
		return errRequestLine
	}
	sp2 += sp1 + 1
	for _, c := range line[sp1+1 : sp2] {
		if !field.IsPathByte(c) {
			if c == '\r' {
				return errBareCR
			}
			return errTarget
		}
	}
	proto10 := false
	switch v := line[sp2+1:]; {
	case string(v) == "HTTP/1.1":
	case string(v) == "HTTP/1.0":
		proto10 = true
	case len(v) == 8 && string(v[:5]) == "HTTP/" && isDigit(v[5]) && v[6] == '.' && isDigit(v[7]):
		return errVersionUnsupp
	default:
		return errVersion
	}

	if p.hr.fieldErr != nil {
		return p.hr.fieldErr
	}
	spans := p.hr.spans

	// One allocation for the whole head; every string below slices it.
	s := string(buf)
	r := &p.req
	*r = stream.Request{Header: r.Header[:0], ContentLength: 0}
	r.Method = s[:sp1]
	if proto10 {
		r.Proto = "HTTP/1.0"
	} else {
		r.Proto = "HTTP/1.1"
	}
	if r.Method == "CONNECT" {
		return errConnect
	}
	target := s[sp1+1 : sp2]
	authority := ""
	switch {
	case target[0] == '/':
		r.Path = target
	case target == "*":
		if r.Method != "OPTIONS" {
			return errTarget
		}
		r.Path = target
	default:
		var ok bool
		authority, r.Path, ok = splitAbsolute(target, r.Method)
		if !ok {
			return errTarget
		}
	}

	// First pass: the fields that decide framing and connection handling.
	var (
		hosts, cls     int
		host           string
		cl             int64 = -1
		clFirst        string
		hasTE, chunked bool
		connClose      bool
		connKeep       bool
		upgrades       int
		upgrade        string
	)
	p.tokens = p.tokens[:0]
	p.expect = false
	for k := range spans {
		sp := &spans[k]
		name := s[sp.ns:sp.ne]
		// One table lookup per field, kept for the second pass; a field
		// without a rule (most of them) is none of the cases below.
		if sp.rule = field.Lookup(name); sp.rule == 0 {
			continue
		}
		val := s[sp.vs:sp.ve]
		switch name {
		case "host":
			hosts++
			host = val
		case "content-length":
			cls++
			if cls == 1 {
				clFirst = val
			}
			var err *Error
			if cl, err = mergeContentLength(cl, val); err != nil {
				return err
			}
		case "transfer-encoding":
			hasTE = true
			var err *Error
			if chunked, err = mergeTransferEncoding(chunked, val); err != nil {
				return err
			}
		case "connection":
			p.tokens = connectionOptions(val, p.tokens, &connClose, &connKeep)
		case "upgrade":
			upgrades++
			upgrade = val
		case "expect":
			if proto10 {
				break // RFC 9110 §10.1.1: ignore in HTTP/1.0 requests
			}
			if !equalFoldASCII(val, "100-continue") {
				return errExpect
			}
			p.expect = true
		default:
			if sp.rule.Has(field.FramingLookalike) {
				return errUnderscoreFrame
			}
		}
	}

	switch {
	case hasTE && cls > 0:
		return errCLTE
	case hasTE && proto10:
		return errTE10
	case hasTE && !chunked:
		return errBadTE
	case hasTE && !isOnlyChunked(spans, s):
		return errUnknownTE
	}
	if hosts > 1 {
		return errMultiHost
	}
	if hosts == 0 && !proto10 {
		return errNoHost
	}
	if hosts == 1 && !validHost(host, !proto10) {
		return errBadHost
	}
	if authority == "" {
		authority = host
	}
	r.Authority = authority

	switch {
	case hasTE:
		r.ContentLength = -1
		r.HasBody = true
		p.br.start(bodyChunked, 0, &p.lim)
	case cl > 0:
		r.ContentLength = cl
		r.HasBody = true
		p.br.start(bodyLength, cl, &p.lim)
	default:
		p.br.start(bodyNone, 0, &p.lim)
	}
	if !r.HasBody {
		p.expect = false
	}
	if proto10 {
		p.keepAlive = connKeep && !connClose
	} else {
		p.keepAlive = !connClose
	}
	if upgrades == 1 && !proto10 && !r.HasBody && r.Method == "GET" &&
		namedBy(p.tokens, "upgrade") && upgradeToken(upgrade) {
		r.Upgrade = upgrade
	}

	// Second pass: the handler's view, without the fields the front end
	// owns (hop-by-hop ones, Host, Expect).
	clDone := false
	for _, sp := range spans {
		if sp.rule.Has(field.FrontEndOwned) {
			continue
		}
		name := s[sp.ns:sp.ne]
		switch {
		case sp.rule == 0:
		case name == "content-length":
			if clDone {
				continue // identical duplicates collapse into one
			}
			clDone = true
			// Forward the value in canonical form, so that an origin
			// never sees "5, 5" or "007" and has to interpret it.
			v := clFirst
			if !canonicalDigits(v) {
				v = strconv.FormatInt(cl, 10)
			}
			r.Header = append(r.Header, stream.Field{Name: name, Value: v})
			continue
		}
		if namedBy(p.tokens, name) {
			continue
		}
		r.Header = append(r.Header, stream.Field{Name: name, Value: s[sp.vs:sp.ve]})
	}
	return nil
}

// upgradeToken reports whether an Upgrade value names one protocol that
// pollproxy can tunnel: a token with an optional "/version" (RFC 9110
// §7.8). A list is not offered on: the origin would pick one and the
// client could not tell which was tunnelled. h2c is refused because it
// asks the origin to speak HTTP/2 in cleartext, which pollproxy's
// backend connections do not (and RFC 9113 §3.1 forbids over TLS).
func upgradeToken(v string) bool {
	name, version, slash := strings.Cut(v, "/")
	if !field.ValidName(name) || slash && !field.ValidName(version) {
		return false
	}
	return !equalFoldASCII(name, "h2c")
}

// isOnlyChunked reports whether every Transfer-Encoding element is
// "chunked" — i.e. no other coding was listed before it, which pollproxy
// cannot undo when it re-frames the body for the origin.
func isOnlyChunked(spans []span, s string) bool {
	n := 0
	for _, sp := range spans {
		if s[sp.ns:sp.ne] != "transfer-encoding" {
			continue
		}
		for rest := s[sp.vs:sp.ve]; ; {
			var item string
			var more bool
			item, rest, more = nextListItem(rest)
			n++
			if !equalFoldASCII(item, "chunked") {
				return false
			}
			if !more {
				break
			}
		}
	}
	return n == 1
}

// splitAbsolute turns an absolute-form target (RFC 9112 §3.2.2) into its
// authority and an origin-form path. userinfo is refused: it is
// deprecated and a classic way to confuse authority parsing downstream.
func splitAbsolute(target, method string) (authority, path string, ok bool) {
	var rest string
	switch {
	case len(target) > 7 && equalFoldASCII(target[:7], "http://"):
		rest = target[7:]
	case len(target) > 8 && equalFoldASCII(target[:8], "https://"):
		rest = target[8:]
	default:
		return "", "", false
	}
	i := 0
	for i < len(rest) && rest[i] != '/' && rest[i] != '?' {
		i++
	}
	authority, path = rest[:i], rest[i:]
	if !validHost(authority, true) {
		return "", "", false
	}
	switch {
	case path == "" && method == "OPTIONS":
		path = "*"
	case path == "":
		path = "/"
	case path[0] == '?':
		path = "/" + path
	}
	return authority, path, true
}

// validHost checks a Host value or URI authority: reg-name, IP literal and
// port characters only; no userinfo.
func validHost(h string, required bool) bool {
	if h == "" {
		return !required
	}
	return field.ValidAuthority(h)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// canonicalDigits reports a decimal without leading zeros or separators.
func canonicalDigits(v string) bool {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return false
		}
	}
	return true
}
