package h1

import (
	"bytes"

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
	tokens []string // storage for the Connection options (framing.tokens)
	req    stream.Request
	body   []byte
	// method is this request's, once its head is read ("" before): a
	// refusal after that point (an expectation, a framing conflict) may
	// answer a HEAD, whose answer has no body.
	method string

	keepAlive bool
	expect    bool
}

// Method returns the method of the request being read, "" until its head
// is complete enough to tell.
func (p *RequestParser) Method() string { return p.method }

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
	p.method = ""
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
	*r = stream.Request{Header: r.Header[:0], Hop: r.Hop[:0], ContentLength: 0}
	r.Method = s[:sp1]
	p.method = r.Method
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

	// One pass over the fields decides framing and connection handling;
	// the second builds the handler's view.
	fr := newFraming(p.tokens)
	err := fr.scan(spans, s, proto10, true)
	p.tokens = fr.tokens
	if err != framingOK {
		return requestFramingErrs[err]
	}
	if fr.hosts > 1 {
		return errMultiHost
	}
	if fr.hosts == 0 && !proto10 {
		return errNoHost
	}
	if fr.hosts == 1 && !validHost(fr.host, !proto10) {
		return errBadHost
	}
	if authority == "" {
		authority = fr.host
	}
	r.Authority = authority

	switch mode := fr.body(true); mode {
	case bodyChunked:
		r.ContentLength = -1
		r.HasBody = true
		p.br.start(mode, 0, &p.lim)
	case bodyLength:
		r.ContentLength = fr.length
		r.HasBody = true
		p.br.start(mode, fr.length, &p.lim)
	default:
		p.br.start(bodyNone, 0, &p.lim)
	}
	p.expect = fr.expect && r.HasBody
	p.keepAlive = fr.persistent(proto10)
	if fr.upgrades == 1 && !proto10 && !r.HasBody && r.Method == "GET" &&
		fr.upgrade && field.UpgradeToken(fr.upgradeTo) {
		r.Upgrade = fr.upgradeTo
	}

	// The handler's view, without the fields the front end owns
	// (hop-by-hop ones, Host, Expect).
	r.Header = fr.appendForwarded(r.Header, spans, s, field.FrontEndOwned, true)
	r.Hop = fr.appendHop(r.Hop, spans, s)
	return nil
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
