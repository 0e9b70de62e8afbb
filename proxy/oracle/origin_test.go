package oracle

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// received is one request as the origin read it off the wire: the
// request line, every field line in order with its name as sent, and
// the body (de-chunked).
type received struct {
	port           int
	upstream       string // the port's name, if it has one
	method, target string
	proto          string
	fields         [][2]string
	body           string
}

// origin is a recording HTTP/1.1 server on loopback: it listens on any
// number of ports (each stands for one upstream of the Caddyfile), keeps
// every request it reads, and answers deterministically with a response
// chosen by the request's path (see answer).
type origin struct {
	t     *testing.T
	mu    sync.Mutex
	log   []received
	names map[int]string // a port's name in its answers; "" answers anonymously
	skip  map[string]bool
	lns   []net.Listener
}

func newOrigin(t *testing.T) *origin {
	o := &origin{t: t, names: map[int]string{}, skip: map[string]bool{}}
	t.Cleanup(func() {
		for _, ln := range o.lns {
			ln.Close()
		}
	})
	return o
}

// listen opens one more port; name, when not empty, is put in every
// answer from that port, so a test can tell which upstream answered.
func (o *origin) listen(name string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		o.t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	o.mu.Lock()
	o.names[port] = name
	o.lns = append(o.lns, ln)
	o.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serve(c, port)
		}
	}()
	return port
}

// stickyValues maps the cookie value lb_policy cookie (without a secret)
// gives each anonymous port, hex HMAC-SHA256 of its address, to a
// stand-in: behind a random fallback which of a site's upstreams a
// server picks is chance, so for those ports only that the value names
// one of them is compared. A named port's value is compared as it is.
func (o *origin) stickyValues() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]string{}
	for port, name := range o.names {
		if name == "" {
			m := hmac.New(sha256.New, nil)
			fmt.Fprintf(m, "127.0.0.1:%d", port)
			out[hex.EncodeToString(m.Sum(nil))] = "HMAC(an anonymous upstream)"
		}
	}
	return out
}

// mark returns how many requests the origin has recorded so far; since
// takes those recorded after a mark.
func (o *origin) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.log)
}

func (o *origin) since(n int) []received {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]received(nil), o.log[n:]...)
}

func (o *origin) serve(c net.Conn, port int) {
	defer c.Close()
	br := bufio.NewReader(c)
	if b, err := br.Peek(len(http2.ClientPreface)); err == nil && string(b) == http2.ClientPreface {
		o.serveH2(bufConn{c, br}, port)
		return
	}
	for {
		r, ok := readRequest(br, c)
		if !ok {
			return
		}
		r.port = port
		name := o.record(&r)
		c.Write(answer(r, name))
		if strings.EqualFold(r.field("Connection"), "close") {
			return
		}
	}
}

// record names r's upstream (the name of the port it came to) and logs
// it unless its target is skipped; it returns the name, for the answer.
func (o *origin) record(r *received) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	r.upstream = o.names[r.port]
	if !o.skip[r.target] {
		o.log = append(o.log, *r)
	}
	return r.upstream
}

// serveH2 serves an HTTP/2 connection with prior knowledge (an h2c://
// upstream) with x/net's server: each request is recorded as serve
// records one, its fields (which Go's server keeps in a map) in name
// order after Host, and answered with answer's response.
func (o *origin) serveH2(c net.Conn, port int) {
	//lint:ignore SA1019 x/net's server takes one connection whose first bytes were peeked; net/http's takes only listeners
	(&http2.Server{}).ServeConn(c, &http2.ServeConnOpts{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r := received{port: port, method: req.Method, target: req.RequestURI, proto: req.Proto, body: string(body)}
		r.fields = append(r.fields, [2]string{"Host", req.Host})
		names := make([]string, 0, len(req.Header))
		for k := range req.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			for _, v := range req.Header[k] {
				r.fields = append(r.fields, [2]string{k, v})
			}
		}
		name := o.record(&r)
		res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(answer(r, name))), req)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		defer res.Body.Close()
		for k, vs := range res.Header {
			w.Header()[k] = vs
		}
		if res.ContentLength >= 0 && req.Method != "HEAD" {
			w.Header().Set("Content-Length", strconv.FormatInt(res.ContentLength, 10))
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	})})
}

// bufConn is a connection whose first bytes were peeked into a reader.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (r received) field(name string) string {
	for _, f := range r.fields {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// readRequest reads one request; it answers Expect: 100-continue before
// reading the body.
func readRequest(br *bufio.Reader, w io.Writer) (received, bool) {
	var r received
	line, err := br.ReadString('\n')
	if err != nil {
		return r, false
	}
	parts := strings.SplitN(strings.TrimRight(line, "\r\n"), " ", 3)
	if len(parts) != 3 {
		return r, false
	}
	r.method, r.target, r.proto = parts[0], parts[1], parts[2]
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return r, false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		r.fields = append(r.fields, [2]string{name, strings.TrimSpace(value)})
	}
	if strings.EqualFold(r.field("Expect"), "100-continue") {
		io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	var body bytes.Buffer
	switch {
	case strings.Contains(strings.ToLower(r.field("Transfer-Encoding")), "chunked"):
		for {
			size, err := br.ReadString('\n')
			if err != nil {
				return r, false
			}
			size, _, _ = strings.Cut(strings.TrimSpace(size), ";")
			n, err := strconv.ParseInt(size, 16, 64)
			if err != nil {
				return r, false
			}
			if n == 0 {
				for { // trailers
					l, err := br.ReadString('\n')
					if err != nil {
						return r, false
					}
					if strings.TrimRight(l, "\r\n") == "" {
						break
					}
				}
				break
			}
			if _, err := io.CopyN(&body, br, n); err != nil {
				return r, false
			}
			br.ReadString('\n')
		}
	case r.field("Content-Length") != "":
		n, err := strconv.ParseInt(r.field("Content-Length"), 10, 64)
		if err != nil {
			return r, false
		}
		if _, err := io.CopyN(&body, br, n); err != nil {
			return r, false
		}
	}
	r.body = body.String()
	return r, true
}

// longText is a page long enough for encode's minimum_length.
var longText = strings.Repeat("pollproxy and Caddy give the same answers. ", 40)

// answer is the origin's response to r, chosen by r's path:
//
//	*status404*, *status500*: that status, a short text body
//	*redirect*: 302 to /elsewhere
//	*cookie*: a Set-Cookie
//	*.json: JSON, long enough to compress
//	*.css, *.js, *.txt, *text*: text, long enough to compress
//	*notype*: a long body with no Content-Type (encode sniffs it)
//	*chunked*: a long text body without Content-Length
//	*accel*: an X-Accel-Redirect to /accel-target
//	*nocache*: Cache-Control: no-cache
//	*health*: 200 "ok"
//	anything else: 200 text/html naming the request
//
// Every answer carries Server and X-Origin-Field (header_down and
// header -Field have something to remove); a named port puts its name in
// X-Upstream and the body.
func answer(r received, name string) []byte {
	path, _, _ := strings.Cut(r.target, "?")
	status, ctype, body := 200, "text/html; charset=utf-8", fmt.Sprintf("origin: %s %s\n", r.method, r.target)
	extra := ""
	chunked := false
	switch {
	case strings.Contains(path, "status404"):
		status, ctype, body = 404, "text/plain; charset=utf-8", "origin: not found\n"
	case strings.Contains(path, "status500"):
		status, ctype, body = 500, "text/plain; charset=utf-8", "origin: it broke\n"
	case strings.Contains(path, "redirect"):
		status, extra = 302, "Location: /elsewhere\r\n"
	case strings.Contains(path, "cookie"):
		extra = "Set-Cookie: session=abc123; Path=/; HttpOnly\r\n"
	case strings.HasSuffix(path, ".json"):
		ctype, body = "application/json", `{"items":[`+strings.Repeat(`{"name":"item","value":42},`, 30)+`{}]}`
	case strings.HasSuffix(path, ".css"):
		ctype, body = "text/css; charset=utf-8", "body { margin: 0 }\n/* "+longText+" */\n"
	case strings.HasSuffix(path, ".js"):
		ctype, body = "text/javascript; charset=utf-8", "// "+longText+"\n"
	case strings.HasSuffix(path, ".txt"), strings.Contains(path, "text"):
		ctype, body = "text/plain; charset=utf-8", longText
	case strings.Contains(path, "notype"):
		ctype, body = "", "<!doctype html><html><body>"+longText+"</body></html>"
	case strings.Contains(path, "chunked"):
		ctype, body, chunked = "text/plain; charset=utf-8", longText, true
	case strings.Contains(path, "accel"):
		extra = "X-Accel-Redirect: /accel-target\r\n"
	case strings.Contains(path, "nocache"):
		extra = "Cache-Control: no-cache\r\n"
	case strings.Contains(path, "health"):
		ctype, body = "text/plain; charset=utf-8", "ok"
	}
	if name != "" {
		extra += "X-Upstream: " + name + "\r\n"
		body = name + " " + body
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nServer: origin\r\nX-Origin-Field: origin\r\n%s", status, statusText(status), extra)
	if ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", ctype)
	}
	if r.method == "HEAD" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
		return b.Bytes()
	}
	if chunked {
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.Bytes()
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 302:
		return "Found"
	case 404:
		return "Not Found"
	}
	return "Internal Server Error"
}
