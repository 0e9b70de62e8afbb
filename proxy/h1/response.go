package h1

import (
	"time"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// ResponseParser reads an origin's HTTP/1.x responses incrementally, for
// the reverse proxy's backend connections. Reset before each response with
// the request's method, because a HEAD response's framing depends on it.
//
// Feed reports, in order: EventInfo for each 1xx response (100 Continue,
// 103 Early Hints; Status and Header describe it), EventHead for the final
// response, EventBody for each run of body bytes, EventDone at the end.
// Body bytes are never copied: they are a sub-slice of what was fed, so a
// caller that can forward only k bytes feeds only k bytes, keeps the rest
// in its own buffer, and feeds it again when it may continue. The parser
// holds nothing of the body but its framing state.
//
// The zero value is ready to use with default Limits.
type ResponseParser struct {
	// Limits bounds the head, fields, lines and chunk framing.
	Limits Limits

	lim     Limits
	inited  bool
	state   uint8
	isHead  bool
	sawByte bool
	hr      headReader
	br      bodyReader
	tokens  []string // storage for the Connection options (framing.tokens)
	header  []stream.Field
	body    []byte

	upgrade       bool // the request asked to switch protocols: 101 is its answer
	status        int
	reason        string
	proto10       bool
	keepAlive     bool
	hasBody       bool
	contentLength int64
	kaTimeout     time.Duration
}

func (p *ResponseParser) init() {
	p.lim = p.Limits.withDefaults()
	p.hr.maxSize = p.lim.MaxHeadSize
	p.hr.maxLine = p.lim.MaxLineSize
	p.hr.maxLines = p.lim.MaxFields + 1
	p.hr.sizeErr = errHeadTooLarge
	p.hr.lineErr = errFieldTooLong
	p.inited = true
}

// Reset prepares the parser for the response to a request with the given
// method (only "HEAD" changes anything).
func (p *ResponseParser) Reset(method string) {
	if !p.inited {
		p.init()
	}
	p.state = stHead
	p.isHead = method == "HEAD"
	p.sawByte = false
	p.hr.reset()
	p.body = nil
	p.status = 0
	p.upgrade = false
}

// ExpectUpgrade, after Reset, tells the parser that the request asked to
// switch protocols: a 101 is then its final head (EventHead, no body),
// after which the parser consumes nothing, and every byte that follows is
// the tunnel's. Without it a 101 is an error.
func (p *ResponseParser) ExpectUpgrade() { p.upgrade = true }

// Switched reports, after EventHead, that the origin switched protocols.
func (p *ResponseParser) Switched() bool { return p.upgrade && p.status == 101 }

// Feed consumes a prefix of b and reports at most one event; the caller
// keeps b[n:] for the next call. Call it again after every event: an event
// may have consumed nothing of what follows it. An error (always an *Error)
// means the origin's response cannot be framed safely and the connection
// must be closed; the client should get a 502 if it has not yet had a head.
func (p *ResponseParser) Feed(b []byte) (n int, ev Event, err error) {
	if !p.inited {
		p.init()
	}
	switch p.state {
	case stHead:
		if len(b) > 0 {
			p.sawByte = true
		}
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
		if p.Switched() {
			p.state, p.hasBody = stDone, false
			return n, EventHead, nil
		}
		if p.status < 200 {
			p.hr.reset() // the head is copied into strings already
			return n, EventInfo, nil
		}
		p.state = stBody
		return n, EventHead, nil
	case stBody:
		n, body, done, berr := p.br.feed(b, len(b))
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

// EOF reports that the origin closed the connection. It returns EventDone
// when that ends the response (a close-delimited body, or a body already
// complete), ErrNoResponse when not a byte of a response had arrived, and
// ErrTruncated when the close cut a response short.
func (p *ResponseParser) EOF() (Event, error) {
	switch p.state {
	case stHead:
		if !p.sawByte {
			return EventNone, ErrNoResponse
		}
	case stBody:
		if p.br.eof() {
			p.state = stDone
			p.keepAlive = false
			return EventDone, nil
		}
	case stDone:
		return EventNone, nil
	}
	return EventNone, ErrTruncated
}

// Status returns the status code of the head just reported.
func (p *ResponseParser) Status() int { return p.status }

// Reason returns the reason phrase of the head just reported.
func (p *ResponseParser) Reason() string { return p.reason }

// Proto10 reports a response in HTTP/1.0 ("HTTP/1.0" in its status line).
func (p *ResponseParser) Proto10() bool { return p.proto10 }

// Header returns the fields of the head just reported, names lowercase,
// with hop-by-hop fields (Connection and what it names, Keep-Alive,
// Proxy-Connection, TE, Transfer-Encoding, Upgrade) removed. Content-Length
// stays, canonical and single, except on 1xx and 204 responses, where it is
// meaningless. The slice is reused by the next head; copy what must outlive
// the next Feed.
func (p *ResponseParser) Header() []stream.Field { return p.header }

// HasBody reports whether body bytes (possibly none, for a chunked body)
// follow the final head: false for HEAD requests, 204, 304 and a zero
// Content-Length.
func (p *ResponseParser) HasBody() bool { return p.hasBody }

// ContentLength returns the declared Content-Length, or -1 without one.
// On a HEAD or 304 response it describes the representation, not a body.
func (p *ResponseParser) ContentLength() int64 { return p.contentLength }

// Body returns the bytes reported by the last EventBody.
func (p *ResponseParser) Body() []byte { return p.body }

// Trailers returns the chunked trailers after EventDone, with fields that
// may not appear in trailers removed.
func (p *ResponseParser) Trailers() []stream.Field { return p.br.trailers }

// KeepAlive reports, after EventDone, whether the connection may carry
// another request: HTTP/1.1 without "Connection: close", HTTP/1.0 only with
// "Connection: keep-alive", and never after a close-delimited body.
func (p *ResponseParser) KeepAlive() bool { return p.keepAlive && p.state == stDone }

// KeepAliveTimeout returns the origin's "Keep-Alive: timeout=N" hint, or 0.
// A pool should drop an idle connection before the origin does: reusing
// one the origin is closing is the classic source of spurious 502s.
func (p *ResponseParser) KeepAliveTimeout() time.Duration { return p.kaTimeout }

// parseHead validates the buffered status line and fields.
func (p *ResponseParser) parseHead() *Error {
	buf := p.hr.buf
	le := p.hr.startEnd
	line := buf[:le]
	// "HTTP/1.1 200 OK"; the SP before an empty reason is often omitted.
	if len(line) < 12 || line[8] != ' ' || len(line) > 12 && line[12] != ' ' {
		return errStatusLine
	}
	switch string(line[:8]) {
	case "HTTP/1.1":
		p.proto10 = false
	case "HTTP/1.0":
		p.proto10 = true
	default:
		return errStatusLine
	}
	c0, c1, c2 := line[9], line[10], line[11]
	if c0 < '1' || c0 > '5' || !isDigit(c1) || !isDigit(c2) {
		return errStatusLine
	}
	p.status = int(c0-'0')*100 + int(c1-'0')*10 + int(c2-'0')
	if p.status == 101 && !p.upgrade {
		return errSwitching // only an upgrade request may be answered with 101
	}
	reasonStart := min(13, len(line))
	for _, c := range line[reasonStart:] {
		if !field.IsValueByte(c) {
			return errStatusLine
		}
	}

	if p.hr.fieldErr != nil {
		return p.hr.fieldErr
	}
	spans := p.hr.spans
	s := string(buf)
	p.reason = s[reasonStart:le]

	fr := newFraming(p.tokens)
	err := fr.scan(spans, s, p.proto10, false)
	p.tokens = fr.tokens
	if err != framingOK {
		return responseFramingErrs[err]
	}
	p.kaTimeout = 0
	if fr.keepAliveP != "" {
		p.kaTimeout = parseKeepAliveTimeout(fr.keepAliveP)
	}
	p.keepAlive = fr.persistent(p.proto10)
	p.contentLength = fr.length
	if p.status < 200 || p.status == 204 {
		p.contentLength = -1 // meaningless here (RFC 9110 §8.6)
	}
	mode := responseBody(p.status, p.isHead, fr.body(false))
	p.hasBody = mode != bodyNone
	if mode == bodyClose {
		p.keepAlive = false
	}
	p.br.start(mode, fr.length, &p.lim)

	p.header = fr.appendForwarded(p.header[:0], spans, s, field.HopByHop, p.contentLength >= 0)
	return nil
}

// parseKeepAliveTimeout reads "timeout=N" from a Keep-Alive value.
func parseKeepAliveTimeout(v string) time.Duration {
	for rest := v; rest != ""; {
		var item string
		item, rest, _ = nextListItem(rest)
		if len(item) > 8 && equalFoldASCII(item[:8], "timeout=") {
			if n, ok := field.ParseContentLength(trimOWS(item[8:])); ok && n < 1<<20 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}
