package proxy

// A FastCGI connection is a backend connection like any other (pool,
// phases, wire, timers are the same); what differs is what its bytes
// mean. Requests go out as records the exchange framed (fcgirequest.go).
// The application's records are cut apart in the read buffer itself
// (fastcgi.Decoder): FCGI_STDOUT content is moved to the front, so the
// HTTP/1.1 response parser reads it as if the application had spoken
// HTTP, once the CGI head is complete and pollproxy has put a status line
// in front of it carrying the status that head asks for. The response
// parser then checks the fields, Content-Length and chunked bodies as for
// any origin. FCGI_END_REQUEST ends the response.

import (
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/fastcgi"
	"github.com/pollproxy/pollproxy/proxy/h1"
)

// fcgiRequestID is the one request id pollproxy uses: a connection
// carries one request at a time (php-fpm does not multiplex).
const fcgiRequestID = 1

// maxStderr bounds what a request's FCGI_STDERR keeps for the log.
const maxStderr = 8 << 10

// maxCGIHead bounds a CGI response head: with the status line put in
// front of it, it and the body bytes read with it fit the read buffer
// (fcgiReadSize reads no more than that while the head is incomplete).
const maxCGIHead = backendBufSize - 64

// fcgiState is a FastCGI connection's per-request state.
type fcgiState struct {
	dec    fastcgi.Decoder
	head   []byte // the CGI head so far, until it is complete
	inBody bool   // the head went to the parser
	parsed bool   // the parser saw the whole response; records go on to FCGI_END_REQUEST
	extra  bool   // bytes came after FCGI_END_REQUEST: the connection is not reused
	stderr []byte
}

// reset readies the state for the next request.
func (f *fcgiState) reset() {
	f.dec.Reset(fcgiRequestID)
	f.head = f.head[:0]
	f.inBody, f.parsed, f.extra = false, false, false
	f.stderr = f.stderr[:0]
}

// sendStdin queues body bytes p as FCGI_STDIN records, framed in the
// output itself, as sendChunk frames a chunk: copied once.
func (bc *backendConn) sendStdin(p []byte) {
	bc.reserve(len(p) + fastcgi.StreamFraming(len(p)))
	bc.out = fastcgi.AppendStream(bc.out, fastcgi.TypeStdin, fcgiRequestID, p)
	bc.queued(len(p))
}

// fcgiReadSize is how much of the read buffer a read may fill: all of it
// once the CGI head went to the parser; before, no more than lets the
// head gathered so far, the bytes read now and the status line put in
// front of them fit the buffer (fcgiHead).
func (bc *backendConn) fcgiReadSize() int {
	f := bc.fcgi
	if f.inBody {
		return len(bc.in)
	}
	return max(len(bc.in)-statusLineMax-len(f.head), 1)
}

// statusLineMax is the longest status line fcgiHead writes.
const statusLineMax = len("HTTP/1.1 999 CGI\r\n")

// idleHeadCap is the most CGI-head capacity an idle connection keeps.
const idleHeadCap = 2 << 10

// idle lets go of what a request's response left large: an idle
// connection holds no buffer of a response's size.
func (f *fcgiState) idle() {
	if cap(f.head) > idleHeadCap {
		f.head = nil
	}
	f.stderr = nil
}

// fcgiDecode takes the n bytes just read into bc.in: records are cut
// apart, and what is left in bc.in[:inEnd] is for the response parser. It
// reports false when the connection failed (and the exchange was told).
func (bc *backendConn) fcgiDecode(n int) bool {
	f := bc.fcgi
	out, used, err := f.dec.Decode(bc.in[:n], &f.stderr, maxStderr)
	if err != nil {
		ex := bc.ex
		bc.close()
		ex.badResponse()
		return false
	}
	if used < n {
		f.extra = true
	}
	bc.inStart, bc.inEnd = 0, out
	switch {
	case f.parsed:
		bc.inEnd = 0 // past the declared length: dropped, as Caddy drops it
	case !f.inBody:
		return bc.fcgiHead(out)
	}
	return true
}

// fcgiHead gathers the CGI head from the stdout bytes at bc.in[:out] and,
// once it is complete (or the response ended without its blank line),
// puts it in bc.in behind a status line, with the body bytes that came
// with it.
func (bc *backendConn) fcgiHead(out int) bool {
	f := bc.fcgi
	f.head = append(f.head, bc.in[:out]...)
	bc.inEnd = 0
	end := fastcgi.HeadEnd(f.head)
	if end < 0 && !f.dec.Ended {
		if len(f.head) >= maxCGIHead {
			ex := bc.ex
			bc.close()
			ex.badResponse()
			return false
		}
		return true
	}
	if end < 0 {
		// The response ended inside its head: what came is the head, as
		// Caddy reads it (its header reader stops at the end).
		if len(f.head) > 0 && f.head[len(f.head)-1] != '\n' {
			f.head = append(f.head, '\r', '\n')
		}
		f.head = append(f.head, '\r', '\n')
		end = len(f.head)
	}
	status, ok := fastcgi.Status(f.head[:end])
	if !ok || len(f.head)+statusLineMax > len(bc.in) {
		ex := bc.ex
		bc.close()
		ex.badResponse()
		return false
	}
	b := append(bc.in[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, " CGI\r\n"...)
	b = append(b, f.head...)
	bc.inStart, bc.inEnd = 0, len(b)
	f.inBody = true
	return true
}

// fcgiParsed: the response parser saw the whole response (a declared
// Content-Length, or a status without a body). Stdout beyond it is
// dropped, as Caddy drops it; it reports whether FCGI_END_REQUEST came
// too, so that the response ends now (fcgiEnded) rather than once the
// records are read on to it.
func (bc *backendConn) fcgiParsed() bool {
	f := bc.fcgi
	f.parsed = true
	bc.inStart = bc.inEnd
	return f.dec.Ended
}

// fcgiEnded: FCGI_END_REQUEST arrived and every stdout byte before it was
// parsed. The response ends, its length the stream's unless it declared
// one; the connection is reused when the application completed the
// request and sent nothing after it.
func (bc *backendConn) fcgiEnded() {
	f := bc.fcgi
	keep := f.dec.ProtocolStatus == fastcgi.RequestComplete && !f.extra
	ex := bc.ex
	bc.fcgiStderr(ex)
	if f.parsed {
		ex.responseDone(keep, bc.parser.Trailers())
		return
	}
	if ev, err := bc.parser.EOF(); ev != h1.EventDone {
		bc.broken(err)
		return
	}
	ex.responseDone(keep, nil)
}

// fcgiStderr hands what the application wrote on stderr to the
// transport's log (capture_stderr), once per request.
func (bc *backendConn) fcgiStderr(ex *exchange) {
	f := bc.fcgi
	if len(f.stderr) == 0 {
		return
	}
	if fc := bc.pool.h.cfg.FastCGI; fc != nil && fc.Stderr != nil && ex != nil {
		fc.Stderr(bc.pool.up.Name, ex.status, f.stderr)
	}
	f.stderr = f.stderr[:0]
}
