package h1

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/field"
)

// framingFields reports which framing field names appear, spelled exactly,
// in the raw head of a message: an oracle independent of the parser.
func framingFields(data []byte) (cl, te bool) {
	lines := bytes.Split(data, []byte("\n"))
	seenStart := false
	for _, line := range lines {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if seenStart {
				break
			}
			continue
		}
		seenStart = true
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		switch strings.ToLower(string(line[:i])) {
		case "content-length":
			cl = true
		case "transfer-encoding":
			te = true
		}
	}
	return
}

func seedRequests() []string {
	return []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
		"POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
		"GET http://a:1/p?q HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: h\r\nConnection: close, x\r\nX: y\r\n\r\nGET / HTTP/1.1\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0x10\r\n",
	}
}

func FuzzRequestParser(f *testing.F) {
	for i, s := range seedRequests() {
		f.Add([]byte(s), uint(i*7))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint) {
		var p RequestParser
		whole := parseRequestPieces(&p, []string{string(data)})
		if whole.status == 0 || whole.status == -1 && whole.method != "" {
			if cl, te := framingFields(data); cl && te {
				t.Fatalf("accepted a request with Content-Length and Transfer-Encoding: %q", data)
			}
			if whole.cl >= 0 && whole.hasBody && whole.cl == 0 {
				t.Fatalf("zero length with a body: %q", data)
			}
		}
		if len(data) > 0 {
			k := int(split % uint(len(data)+1))
			var q RequestParser
			if got := parseRequestPieces(&q, []string{string(data[:k]), string(data[k:])}); got != whole {
				t.Fatalf("split at %d differs:\n got %+v\nwant %+v", k, got, whole)
			}
		}
	})
}

func FuzzResponseParser(f *testing.F) {
	seeds := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: y\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nclose delimited",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint(i*5), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		var p ResponseParser
		whole := parseResponsePieces(&p, method, []string{string(data)}, true)
		// Every head is checked for CL+TE, 1xx included, so a first head
		// with both must never let the parse reach a final status.
		if cl, te := framingFields(data); cl && te && (whole.status >= 100 || whole.infos != "") {
			t.Fatalf("accepted a head with Content-Length and Transfer-Encoding: %q", data)
		}
		if len(data) > 0 {
			k := int(split % uint(len(data)+1))
			var q ResponseParser
			if got := parseResponsePieces(&q, method, []string{string(data[:k]), string(data[k:])}, true); got != whole {
				t.Fatalf("split at %d differs:\n got %+v\nwant %+v", k, got, whole)
			}
		}
	})
}

// scanSection reads data as a field section (no start line) the way the
// parsers read a head's fields, for FuzzFraming.
func scanSection(data []byte) (spans []span, s string, ok bool) {
	h := headReader{maxSize: DefaultMaxHeadSize, maxLine: DefaultMaxLineSize, maxLines: DefaultMaxFields,
		noStartLine: true, sizeErr: errHeadTooLarge, lineErr: errFieldTooLong}
	h.reset()
	if _, done, err := h.feed(data); err != nil || !done || h.fieldErr != nil {
		return nil, "", false
	}
	return h.spans, string(h.buf), true
}

// FuzzFraming runs the one framing scanner over arbitrary field sections
// and checks what the three users of it rely on: the request and the
// response side find the same defect (but for the request-only Expect
// rule), an accepted section never has both Content-Length and
// Transfer-Encoding (an oracle independent of the scanner), nothing
// hop-by-hop or named by Connection is forwarded, Content-Length is
// forwarded once and canonical, and the ResponseWriter's reading of a
// handler's Content-Length fields agrees with the parsers'.
func FuzzFraming(f *testing.F) {
	seeds := []string{
		"Content-Length: 5\r\n",
		"Transfer-Encoding: chunked\r\n",
		"Content-Length: 5, 5\r\nContent-Length: 005\r\n",
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: gzip, chunked\r\n",
		"Transfer-Encoding: chunked, gzip\r\nTransfer-Encoding: chunked\r\n",
		"Connection: close, x-a, Upgrade\r\nX-A: 1\r\nKeep-Alive: timeout=5\r\nUpgrade: h2c\r\n",
		"Transfer_Encoding: chunked\r\nContent_Length: 1\r\n",
		"Expect: 100-continue\r\nContent-Length: 0\r\nHost: h\r\n",
		"Expect: nope\r\nContent-Length: x\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, proto10 bool) {
		section := append(append([]byte(nil), data...), '\r', '\n')
		spans, s, ok := scanSection(section)
		if !ok {
			return
		}
		req, resp := newFraming(nil), newFraming(nil)
		reqErr := req.scan(spans, s, proto10, true)
		respErr := resp.scan(spans, s, proto10, false)
		if reqErr != respErr && reqErr != badExpectation {
			t.Fatalf("request side %d, response side %d: %q", reqErr, respErr, data)
		}
		if reqErr != framingOK {
			if e := requestFramingErrs[reqErr]; e == nil || e.Status < 400 || e.Status > 599 {
				t.Fatalf("request defect %d has no answer", reqErr)
			}
		}
		if respErr != framingOK {
			if e := responseFramingErrs[respErr]; e == nil || e.Status != 502 {
				t.Fatalf("response defect %d is not a 502", respErr)
			}
		}

		// The ResponseWriter reads only the Content-Length fields.
		w := newFraming(nil)
		wErr := framingOK
		for _, sp := range spans {
			if s[sp.ns:sp.ne] == "content-length" {
				if wErr = w.addLength(s[sp.vs:sp.ve]); wErr != framingOK {
					break
				}
			}
		}
		switch respErr {
		case framingOK:
			if wErr != framingOK || w.length != resp.length {
				t.Fatalf("writer reads length %d (%d), parsers %d: %q", w.length, wErr, resp.length, data)
			}
		case badLength, conflictingLength:
			if wErr != respErr {
				t.Fatalf("writer %d, parsers %d: %q", wErr, respErr, data)
			}
		}
		if respErr != framingOK {
			return
		}

		if cl, te := framingFields(section); cl && te {
			t.Fatalf("accepted Content-Length and Transfer-Encoding: %q", data)
		}
		if resp.te && (!resp.chunked || resp.codings != 1) {
			t.Fatalf("accepted a coding other than a lone chunked: %q", data)
		}
		mode := resp.body(false)
		switch {
		case resp.te && mode != bodyChunked,
			!resp.te && resp.length > 0 && mode != bodyLength,
			!resp.te && resp.length == 0 && mode != bodyNone,
			!resp.te && resp.length < 0 && mode != bodyClose:
			t.Fatalf("body mode %d for length %d, te %v", mode, resp.length, resp.te)
		}
		lengths := 0
		for _, fl := range resp.appendForwarded(nil, spans, s, field.HopByHop, true) {
			if field.Lookup(fl.Name).Has(field.HopByHop) {
				t.Fatalf("forwarded hop-by-hop %q: %q", fl.Name, data)
			}
			if fl.Name != "content-length" {
				if namedBy(resp.tokens, fl.Name) {
					t.Fatalf("forwarded %q, named by Connection: %q", fl.Name, data)
				}
				continue
			}
			lengths++
			if n, ok := field.ParseContentLength(fl.Value); !ok || n != resp.length || !canonicalDigits(fl.Value) {
				t.Fatalf("forwarded content-length %q for %d", fl.Value, resp.length)
			}
		}
		if lengths > 1 || lengths == 1 != (resp.length >= 0) {
			t.Fatalf("forwarded %d content-length fields for %d: %q", lengths, resp.length, data)
		}
	})
}
