package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// h1Conn is a client's HTTP/1.1 connection that writes requests as raw
// bytes and reads each answer with a strict reader of its own (net/http's
// is lenient, and pollproxy's own parser cannot be the judge of
// pollproxy), so that a malformed answer is an error.
type h1Conn struct {
	c  net.Conn
	br *bufio.Reader
}

// errNoAnswer is an exchange that ended, with the connection closed or
// reset, before a byte of the answer: what abort does, and nothing else
// may.
var errNoAnswer = errors.New("connection closed before any answer")

// dialH1 connects to addr; every exchange on the connection must end by
// deadline: an answer that takes longer is a hang, whatever the
// configuration.
func dialH1(addr string, deadline time.Time) (*h1Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(deadline)
	return &h1Conn{c: c, br: bufio.NewReader(c)}, nil
}

func (h *h1Conn) Close() error { return h.c.Close() }

// h1Answer is what the strict reader took from one answer.
type h1Answer struct {
	status int
	last   bool // the connection ends with this answer
}

// roundTrip sends r and reads its answer. A malformed answer, or a
// connection that ends inside one, is an error naming what is wrong;
// errNoAnswer when it ended before the first byte.
func (h *h1Conn) roundTrip(r fuzzRequest, host string) (h1Answer, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.method, r.target, host)
	for _, f := range r.fields {
		fmt.Fprintf(&b, "%s: %s\r\n", f[0], f[1])
	}
	switch {
	case len(r.body) == 0:
		b.WriteString("\r\n")
	case r.chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := r.body; len(rest) > 0; {
			n := min(len(rest), 4000)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		b.WriteString("0\r\n\r\n")
	default:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.body))
		b.Write(r.body)
	}
	// The server may answer (and close) before it read everything, as
	// for a body over a limit: a failed write is judged by the answer.
	h.c.Write(b.Bytes())
	return h.readAnswer(r.method == "HEAD")
}

// readAnswer reads interim answers and the final one (RFC 9112).
func (h *h1Conn) readAnswer(head bool) (h1Answer, error) {
	first := true
	for {
		a, framing, err := h.readHead(first)
		if err != nil {
			return a, err
		}
		first = false
		if a.status == 101 {
			return h1Answer{status: 101, last: true}, nil
		}
		if a.status < 200 {
			if framing.cl >= 0 || framing.te != "" {
				return a, fmt.Errorf("interim %d answer with framing fields", a.status)
			}
			continue
		}
		return a, h.readBody(&a, framing, head)
	}
}

// h1Framing is what an answer's head says of its body.
type h1Framing struct {
	cl    int64 // -1: none
	te    string
	close bool
}

func (h *h1Conn) readHead(first bool) (h1Answer, h1Framing, error) {
	fr := h1Framing{cl: -1}
	line, err := h.line()
	if err != nil {
		if first && len(line) == 0 && (err == io.EOF || isReset(err)) {
			return h1Answer{}, fr, errNoAnswer
		}
		return h1Answer{}, fr, fmt.Errorf("status line %q: %w", line, err)
	}
	var a h1Answer
	if len(line) < 13 || (line[:9] != "HTTP/1.1 " && line[:9] != "HTTP/1.0 ") || line[12] != ' ' {
		return a, fr, fmt.Errorf("malformed status line %q", line)
	}
	a.status, err = strconv.Atoi(line[9:12])
	if err != nil || a.status < 100 || a.status > 599 {
		return a, fr, fmt.Errorf("status %q: want 100-599", line[9:12])
	}
	if strings.ContainsAny(line[13:], "\r\x00") {
		return a, fr, fmt.Errorf("reason phrase %q has a CR or NUL", line[13:])
	}
	fr.close = line[:9] == "HTTP/1.0 "
	for {
		line, err := h.line()
		if err != nil {
			return a, fr, fmt.Errorf("field line %q: %w", line, err)
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validToken(name) {
			return a, fr, fmt.Errorf("malformed field line %q", line)
		}
		if strings.ContainsAny(value, "\r\x00") {
			return a, fr, fmt.Errorf("field %s: value %q has a CR or NUL", name, value)
		}
		value = strings.Trim(value, " \t")
		switch strings.ToLower(name) {
		case "content-length":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 || value[0] == '+' {
				return a, fr, fmt.Errorf("Content-Length %q", value)
			}
			if fr.cl >= 0 && fr.cl != n {
				return a, fr, fmt.Errorf("two Content-Lengths: %d and %d", fr.cl, n)
			}
			fr.cl = n
		case "transfer-encoding":
			if fr.te != "" {
				fr.te += ", "
			}
			fr.te += strings.ToLower(value)
		case "connection":
			for _, o := range strings.Split(value, ",") {
				if strings.EqualFold(strings.TrimSpace(o), "close") {
					fr.close = true
				}
			}
		}
	}
	if fr.cl >= 0 && fr.te != "" {
		return a, fr, fmt.Errorf("both Content-Length and Transfer-Encoding (RFC 9112 §6.2)")
	}
	if a.status == 204 && (fr.cl >= 0 || fr.te != "") {
		return a, fr, fmt.Errorf("204 with framing fields (RFC 9110 §8.6, RFC 9112 §6.1)")
	}
	return a, fr, nil
}

// readBody reads the final answer's body as its framing says (RFC 9112
// §6.3) and checks that the connection holds nothing more.
func (h *h1Conn) readBody(a *h1Answer, fr h1Framing, head bool) error {
	a.last = fr.close
	switch {
	case head || a.status == 204 || a.status == 304:
		// No body, whatever the fields say.
	case fr.te != "":
		if fr.te != "chunked" {
			return fmt.Errorf("Transfer-Encoding %q: a response to this client is chunked or not encoded", fr.te)
		}
		if err := h.readChunked(); err != nil {
			return err
		}
	case fr.cl >= 0:
		if n, err := io.CopyN(io.Discard, h.br, fr.cl); err != nil {
			return fmt.Errorf("Content-Length %d, body ended after %d bytes: %w", fr.cl, n, err)
		}
	default:
		a.last = true
		_, err := io.Copy(io.Discard, h.br)
		if err != nil && !isReset(err) {
			return fmt.Errorf("close-delimited body: %w", err)
		}
		return nil
	}
	if h.br.Buffered() > 0 {
		more, _ := h.br.Peek(min(h.br.Buffered(), 64))
		return fmt.Errorf("%d bytes after the answer's body: %q", h.br.Buffered(), more)
	}
	if a.last {
		// Whatever follows a last answer is bytes the framing did not
		// account for.
		n, err := io.Copy(io.Discard, h.br)
		if n > 0 {
			return fmt.Errorf("%d bytes after the last answer", n)
		}
		if err != nil && !isReset(err) {
			return fmt.Errorf("after the last answer: %w", err)
		}
	}
	return nil
}

func (h *h1Conn) readChunked() error {
	for {
		line, err := h.line()
		if err != nil {
			return fmt.Errorf("chunk size line %q: %w", line, err)
		}
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimRight(size, " \t"), 16, 64)
		if err != nil || n < 0 || size == "" || size[0] == '+' || size[0] == '-' {
			return fmt.Errorf("chunk size %q", line)
		}
		if n == 0 {
			for {
				t, err := h.line()
				if err != nil {
					return fmt.Errorf("trailer %q: %w", t, err)
				}
				if t == "" {
					return nil
				}
				if name, _, ok := strings.Cut(t, ":"); !ok || !validToken(name) {
					return fmt.Errorf("malformed trailer line %q", t)
				}
			}
		}
		if _, err := io.CopyN(io.Discard, h.br, n); err != nil {
			return fmt.Errorf("chunk of %d bytes: %w", n, err)
		}
		if crlf, err := h.line(); err != nil || crlf != "" {
			return fmt.Errorf("chunk of %d bytes not followed by CRLF: %q %v", n, crlf, err)
		}
	}
}

// line reads one CRLF-terminated line without its CRLF; a bare LF is an
// error, as is a line over 64 KiB.
func (h *h1Conn) line() (string, error) {
	var b []byte
	for {
		chunk, err := h.br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > 64<<10 {
			return string(b[:64]), errors.New("line over 64 KiB")
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(b) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return string(b), err
		}
		if len(b) < 2 || b[len(b)-2] != '\r' {
			return string(b), errors.New("line ends in a bare LF")
		}
		return string(b[:len(b)-2]), nil
	}
}

// validToken reports whether s is an RFC 9110 token (a field name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// isReset reports whether err is the peer resetting the connection.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
