package app

import (
	"strings"
)

// fuzzRequest is one request a fuzz input sends: over HTTP/1.1 (raw
// bytes on a TCP connection) or h2c (frames from x/net/http2).
type fuzzRequest struct {
	h2      bool
	method  string
	target  string // path and query; * for OPTIONS * over HTTP/1.1
	fields  [][2]string
	body    []byte
	chunked bool // HTTP/1.1: the body goes chunked, not with Content-Length
	noCL    bool // h2: the body goes without a content-length field
}

// maxFuzzRequests bounds the requests of one input.
const maxFuzzRequests = 3

// decodeRequests turns fuzz bytes into up to maxFuzzRequests requests,
// at least one; like siteGen, every byte string decodes to something.
func decodeRequests(in []byte) []fuzzRequest {
	g := &siteGen{in: in}
	var out []fuzzRequest
	for len(out) == 0 || len(out) < maxFuzzRequests && g.pos < len(g.in) {
		out = append(out, decodeRequest(g))
	}
	return out
}

func decodeRequest(g *siteGen) fuzzRequest {
	flags := g.next()
	r := fuzzRequest{h2: flags&1 != 0, chunked: flags&2 != 0, noCL: flags&4 != 0}
	r.method = pickFrom(g, reqMethods)
	r.target = pickFrom(g, reqTargets)
	if r.target == "*" && (r.method != "OPTIONS" || r.h2) {
		r.target = "/"
	}
	// A few bytes of the input itself as more path: what no table holds.
	if n := g.pick(4); n > 0 && r.target != "*" {
		var seg strings.Builder
		for range n * 2 {
			seg.WriteByte(pathChars[g.pick(len(pathChars))])
		}
		path, query, _ := strings.Cut(r.target, "?")
		r.target = path + seg.String()
		if query != "" {
			r.target += "?" + query
		}
	}
	for range g.pick(7) {
		name, value := pickFrom(g, reqNames), pickFrom(g, reqValues)
		if r.h2 {
			if h1Only[strings.ToLower(name)] {
				continue
			}
			// Lower case, and no whitespace around a value (RFC 9113
			// §8.2.1): what an h2 client sends.
			name, value = strings.ToLower(name), strings.Trim(value, " \t")
		}
		r.fields = append(r.fields, [2]string{name, value})
	}
	r.body = []byte(pickFrom(g, reqBodies))
	return r
}

// pathChars are what input bytes become in a path: valid request-target
// characters, percent and dot segments included.
const pathChars = "abcxyzAZ019/._-~%2e/?=&;+:@!$'()*,"

var (
	reqMethods = []string{"GET", "HEAD", "POST", "PUT", "OPTIONS", "DELETE", "PATCH", "TRACE", "get", "M-SEARCH", "PROPFIND"}
	reqTargets = []string{
		"/", "/api/users", "/api/", "/a/b/c", "/index.html", "/static/app.css", "/x.php", "/s/503", "/s/404",
		"/big", "/chunk", "/nobody", "/early", "//double", "/%2e%2e/etc", "/a%20b", "/API/x", "/s/500?q=1",
		"/?q=1&k=a%20b&k=a+b", "/a?n=3", "/x/", "*", "/s/", "/?to=/elsewhere", "/static/",
	}
	// reqNames are field names in odd spellings, with _ and ., and the
	// ones that change framing or routing.
	reqNames = []string{
		"X-A", "x_forwarded_for", "X.Dot", "oRiGiN", "Accept-Encoding", "Access-Control-Request-Method",
		"Cookie", "Content-Type", "X-Forwarded-For", "Cache-Control", "Range", "If-None-Match", "X_Under",
		"User-Agent", "Connection", "Upgrade", "Expect", "X-Huge", "TE", "Authorization", "Forwarded",
		"Keep-Alive", "Proxy-Connection",
	}
	reqValues = []string{
		"a", "*", "gzip", "gzip, zstd", "zstd", "OPTIONS", "https://example.com", "a=b; c=d", "text/html",
		"bytes=0-1", "1.2.3.4", "", " spaced ", strings.Repeat("v", 6000), "\xe9t\xe9", "close", "keep-alive",
		"Upgrade", "websocket", "100-continue", "trailers", "curl/8", "application/json",
	}
	reqBodies = []string{"", "", "hello", strings.Repeat("b", 1024), strings.Repeat("B", 20000), "{\"a\":1}"}
)

// h1Only are the fields HTTP/2 forbids (RFC 9113 §8.2.2): an h2 request
// leaves them out.
var h1Only = map[string]bool{"connection": true, "upgrade": true, "keep-alive": true,
	"proxy-connection": true, "transfer-encoding": true, "expect": true, "te": true}
