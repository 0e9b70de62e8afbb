package hardening

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// recorder is an origin that logs the exact bytes of every connection and
// answers each request it can frame with a fixed keep-alive 200. Its
// parser is strict on purpose: anything an HTTP/1.1 implementation could
// read two ways is an error, so it shows what pollproxy forwarded.
type recorder struct {
	address string
	mu      sync.Mutex
	conns   []*bytes.Buffer
}

func newRecorder(t testing.TB) *recorder {
	r := &recorder{}
	r.address = servertest.ServeConns(t, r.serve)
	return r
}

func (r *recorder) addr() string { return r.address }

// serve records one connection; ServeConns closes it afterwards.
func (r *recorder) serve(c net.Conn) {
	rec := &bytes.Buffer{}
	r.mu.Lock()
	r.conns = append(r.conns, rec)
	r.mu.Unlock()
	var pending []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			r.mu.Lock()
			rec.Write(buf[:n])
			r.mu.Unlock()
			pending = append(pending, buf[:n]...)
			for {
				_, used, perr := parseRequest(pending)
				if perr != nil {
					return
				}
				if used == 0 {
					break
				}
				pending = pending[used:]
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			}
		}
		if err != nil {
			return
		}
	}
}

// recReq is one request as the origin received it.
type recReq struct {
	method, target string
	fields         [][2]string // names as sent
	body           []byte
	conn, index    int
}

func (q recReq) get(name string) []string {
	var vs []string
	for _, f := range q.fields {
		if strings.EqualFold(f[0], name) {
			vs = append(vs, f[1])
		}
	}
	return vs
}

// requests parses everything received so far. A connection may end in
// an incomplete request (pollproxy gave up on it and closed); anything
// else that is not strictly valid HTTP/1.1 is an error.
func (r *recorder) requests() ([]recReq, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []recReq
	for ci, b := range r.conns {
		data := b.Bytes()
		for i := 0; len(data) > 0; i++ {
			q, used, err := parseRequest(data)
			if err != nil {
				return all, fmt.Errorf("connection %d, request %d: %v in %q", ci, i, err, trim(data))
			}
			if used == 0 {
				break // incomplete at the end of the connection
			}
			q.conn, q.index = ci, i
			all = append(all, q)
			data = data[used:]
		}
	}
	return all, nil
}

func trim(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

var errIncomplete = errors.New("incomplete")

// parseRequest parses one request; used == 0 means more bytes are needed.
func parseRequest(b []byte) (q recReq, used int, err error) {
	p := 0
	line := func() (string, error) {
		i := bytes.Index(b[p:], []byte("\r\n"))
		if i < 0 {
			if bytes.IndexByte(b[p:], '\n') >= 0 {
				return "", errors.New("bare LF")
			}
			return "", errIncomplete
		}
		l := string(b[p : p+i])
		if strings.ContainsAny(l, "\r\n") {
			return "", errors.New("bare CR or LF in a line")
		}
		p += i + 2
		return l, nil
	}
	wrap := func(e error) (recReq, int, error) {
		if e == errIncomplete {
			return recReq{}, 0, nil
		}
		return recReq{}, 0, e
	}
	rl, err := line()
	if err != nil {
		return wrap(err)
	}
	parts := strings.Split(rl, " ")
	if len(parts) != 3 || parts[2] != "HTTP/1.1" || !isToken(parts[0]) {
		return wrap(fmt.Errorf("bad request line %q", rl))
	}
	if !(strings.HasPrefix(parts[1], "/") || parts[1] == "*") || !validTarget(parts[1]) {
		return wrap(fmt.Errorf("bad target %q", parts[1]))
	}
	q.method, q.target = parts[0], parts[1]
	for {
		l, err := line()
		if err != nil {
			return wrap(err)
		}
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			return wrap(fmt.Errorf("obs-fold %q", l))
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || !isToken(name) {
			return wrap(fmt.Errorf("bad field line %q", l))
		}
		value = strings.Trim(value, " \t")
		for i := 0; i < len(value); i++ {
			if c := value[i]; (c < 0x20 && c != '\t') || c == 0x7f {
				return wrap(fmt.Errorf("control byte in %q", l))
			}
		}
		q.fields = append(q.fields, [2]string{name, value})
	}
	if h := q.get("host"); len(h) != 1 {
		return wrap(fmt.Errorf("%d host fields", len(h)))
	}
	te, cl := q.get("transfer-encoding"), q.get("content-length")
	switch {
	case len(te) > 0 && len(cl) > 0:
		return wrap(errors.New("both transfer-encoding and content-length"))
	case len(te) > 0:
		if len(te) != 1 || te[0] != "chunked" {
			return wrap(fmt.Errorf("transfer-encoding %q", te))
		}
		for {
			l, err := line()
			if err != nil {
				return wrap(err)
			}
			n, err := strconv.ParseUint(l, 16, 31)
			if err != nil {
				return wrap(fmt.Errorf("chunk size %q", l))
			}
			if n == 0 {
				for {
					l, err := line()
					if err != nil {
						return wrap(err)
					}
					if l == "" {
						return q, p, nil
					}
					name, _, ok := strings.Cut(l, ":")
					if !ok || !isToken(name) {
						return wrap(fmt.Errorf("bad trailer %q", l))
					}
					q.fields = append(q.fields, [2]string{"trailer:" + name, ""})
				}
			}
			if len(b)-p < int(n)+2 {
				return wrap(errIncomplete)
			}
			q.body = append(q.body, b[p:p+int(n)]...)
			p += int(n)
			if string(b[p:p+2]) != "\r\n" {
				return wrap(errors.New("chunk not followed by CRLF"))
			}
			p += 2
		}
	case len(cl) > 0:
		if len(cl) != 1 {
			return wrap(fmt.Errorf("content-length %q", cl))
		}
		n, err := strconv.ParseUint(cl[0], 10, 62)
		if err != nil || strings.TrimLeft(cl[0], "0123456789") != "" {
			return wrap(fmt.Errorf("content-length %q", cl[0]))
		}
		if uint64(len(b)-p) < n {
			return wrap(errIncomplete)
		}
		q.body = b[p : p+int(n)]
		p += int(n)
	}
	return q, p, nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func validTarget(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
