package h1

import (
	"bytes"

	"github.com/pollproxy/pollproxy/proxy/field"
)

// headReader accumulates one header (or trailer) section, line by line,
// across Feed calls. It copies only the bytes of the section itself, so a
// read that holds a head and half a body costs one small copy, and it
// checks every limit as bytes arrive: a peer cannot make it buffer more
// than the limit by withholding the end of a line.
type headReader struct {
	buf       []byte
	lineStart int // offset in buf of the line being read
	lines     int // complete non-empty lines so far
	started   bool

	maxSize  int
	maxLine  int
	maxLines int
	// skipLeading drops empty lines before the start line (RFC 9112 §2.2:
	// a server SHOULD ignore at least one; clients send them after bodies).
	skipLeading bool
	sizeErr     *Error // what exceeding maxSize means
	firstErr    *Error // what an over-long first line means
	lineErr     *Error // what an over-long later line means
}

// headBufKeep is the largest head buffer kept across messages: a peer that
// once sent a huge head must not pin that much memory for a whole idle
// keep-alive connection.
const headBufKeep = 8 << 10

func (h *headReader) reset() {
	if cap(h.buf) > headBufKeep {
		h.buf = nil
	}
	h.buf = h.buf[:0]
	h.lineStart = 0
	h.lines = 0
	h.started = false
}

// feed consumes bytes of b up to and including the empty line that ends
// the section. done reports that the section is complete in h.buf.
func (h *headReader) feed(b []byte) (n int, done bool, err *Error) {
	i := 0
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			rest := len(b) - i
			if len(h.buf)+rest > h.maxSize {
				return i, false, h.sizeErr
			}
			// +1: the line's CR may already be here, waiting for its LF.
			if len(h.buf)-h.lineStart+rest > h.maxLine+1 {
				return i, false, h.longLine()
			}
			h.buf = append(h.buf, b[i:]...)
			h.started = true
			return len(b), false, nil
		}
		end := i + j + 1
		if len(h.buf)+end-i > h.maxSize {
			return i, false, h.sizeErr
		}
		h.buf = append(h.buf, b[i:end]...)
		i = end
		l := len(h.buf)
		if l-2 < h.lineStart || h.buf[l-2] != '\r' {
			return i, false, errBareLF
		}
		lineLen := l - 2 - h.lineStart
		if lineLen == 0 {
			if h.lines == 0 && h.skipLeading {
				h.buf = h.buf[:0]
				h.lineStart = 0
				continue
			}
			return i, true, nil
		}
		if lineLen > h.maxLine {
			return i, false, h.longLine()
		}
		h.started = true
		h.lines++
		if h.lines > h.maxLines {
			return i, false, errTooManyFields
		}
		h.lineStart = l
	}
	return i, false, nil
}

func (h *headReader) longLine() *Error {
	if h.lines == 0 && h.firstErr != nil {
		return h.firstErr
	}
	return h.lineErr
}

// span locates one field's name and value inside a head buffer; offsets
// rather than strings so that the whole head becomes one string (one
// allocation) only after it has been validated.
type span struct {
	ns, ne, vs, ve int32
}

// parseFieldLines validates the field lines of buf starting at offset from
// (each ends in CRLF, the last line of buf is the empty one), lowercases
// the names in place, and appends their spans.
func parseFieldLines(buf []byte, from int, spans []span) ([]span, *Error) {
	end := len(buf) - 2 // the final empty line
	for ls := from; ls < end; {
		le := ls + bytes.IndexByte(buf[ls:], '\n') - 1 // the CR
		c := buf[ls]
		if c == ' ' || c == '\t' {
			return spans, errObsFold
		}
		i := ls
		for i < le && field.IsTchar(buf[i]) {
			i++
		}
		switch {
		case i == le:
			return spans, errNoColon
		case buf[i] != ':':
			switch buf[i] {
			case ' ', '\t':
				return spans, errSpaceBeforeCol
			case '\r':
				return spans, errBareCR
			}
			return spans, errFieldName
		case i == ls:
			return spans, errFieldName
		}
		lowerInPlace(buf[ls:i])
		vs, ve := i+1, le
		for vs < ve && (buf[vs] == ' ' || buf[vs] == '\t') {
			vs++
		}
		for ve > vs && (buf[ve-1] == ' ' || buf[ve-1] == '\t') {
			ve--
		}
		for k := vs; k < ve; k++ {
			if !field.IsValueByte(buf[k]) {
				if buf[k] == '\r' {
					return spans, errBareCR
				}
				return spans, errFieldValue
			}
		}
		spans = append(spans, span{int32(ls), int32(i), int32(vs), int32(ve)})
		ls = le + 2
	}
	return spans, nil
}
