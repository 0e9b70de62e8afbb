package h1

import (
	"bytes"
	"strings"
	"testing"
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
