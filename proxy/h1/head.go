package h1

import (
	"bytes"
	"encoding/binary"

	"github.com/pollproxy/pollproxy/proxy/field"
)

// headReader accumulates one header (or trailer) section, line by line,
// across Feed calls, and validates each field line as it completes. It
// copies only the bytes of the section itself, so a read that holds a head
// and half a body costs one small copy, and it checks every limit as bytes
// arrive: a peer cannot make it buffer more than the limit by withholding
// the end of a line.
//
// A field line that arrives whole in one read is scanned once: name, value
// and line end in the same pass (scanFieldLine). Any other line (a start
// line, one split across reads, one with a defect) takes the general path:
// find its end, then validate it in the buffer (parseFieldLine), which
// decides which error a defect is.
type headReader struct {
	buf       []byte
	lineStart int // offset in buf of the line being read
	lines     int // complete non-empty lines so far
	startEnd  int // offset in buf of the first line's CR, once complete
	started   bool

	// spans locates the field lines validated so far, names lowercased
	// in buf. fieldErr is the first field line's defect: it is kept, not
	// returned, until the parser has checked the start line, so that a
	// head with several defects reports the same one whatever the reads.
	spans    []span
	fieldErr *Error

	maxSize  int
	maxLine  int
	maxLines int
	// skipLeading drops empty lines before the start line (RFC 9112 §2.2:
	// a server SHOULD ignore at least one; clients send them after bodies).
	skipLeading bool
	// noStartLine makes every line a field line (a trailer section).
	noStartLine bool
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
	h.startEnd = 0
	h.started = false
	h.spans = h.spans[:0]
	h.fieldErr = nil
}

// feed consumes bytes of b up to and including the empty line that ends
// the section. done reports that the section is complete in h.buf.
func (h *headReader) feed(b []byte) (n int, done bool, err *Error) {
	i := 0
	for i < len(b) {
		if h.lineStart == len(h.buf) && h.fieldsNext() {
			// Field lines start at b[i]: take those that arrived whole.
			m, err := h.feedFields(b[i:])
			i += m
			if err != nil {
				return i, false, err
			}
			if i == len(b) {
				break
			}
		}
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
		ls := h.lineStart
		isField := h.fieldsNext()
		if err := h.countLine(lineLen); err != nil {
			return i, false, err
		}
		h.lineStart = l
		switch {
		case !isField:
			h.startEnd = l - 2
		case h.fieldErr == nil:
			var sp span
			if sp, h.fieldErr = parseFieldLine(h.buf, ls, l-2); h.fieldErr == nil {
				h.spans = append(h.spans, sp)
			}
		}
	}
	return i, false, nil
}

// feedFields consumes the well-formed field lines that b begins with and
// holds whole, each scanned once, and copies them to h.buf together. It
// stops at the first line it cannot take so (the section's empty line, a
// line cut short, a defect), which the general path then reads; it checks
// the limits line by line, as the general path does.
func (h *headReader) feedFields(b []byte) (n int, err *Error) {
	base, first := len(h.buf), len(h.spans)
	for err == nil {
		sc, ok := scanFieldLine(b[n:])
		if !ok {
			break
		}
		end := n + int(sc.end)
		if base+end > h.maxSize {
			err = h.sizeErr
			break
		}
		err = h.countLine(int(sc.end) - 2)
		h.spans = append(h.spans, sc.at(int32(base+n)))
		n = end
	}
	h.buf = append(h.buf, b[:n]...)
	h.lineStart = len(h.buf)
	for _, sp := range h.spans[first:] {
		lowerInPlace(h.buf[sp.ns:sp.ne])
	}
	return n, err
}

// fieldsNext reports whether the next line is a field line: the start
// line is read, or the section has none (trailers).
func (h *headReader) fieldsNext() bool { return h.lines > 0 || h.noStartLine }

// countLine checks a complete, non-empty line of lineLen bytes (CRLF not
// counted) against the line limits and counts it.
func (h *headReader) countLine(lineLen int) *Error {
	if lineLen > h.maxLine {
		return h.longLine()
	}
	h.started = true
	h.lines++
	if h.lines > h.maxLines {
		return errTooManyFields
	}
	return nil
}

func (h *headReader) longLine() *Error {
	if h.lines == 0 && h.firstErr != nil {
		return h.firstErr
	}
	return h.lineErr
}

// span locates one field's name and value inside a head buffer; offsets
// rather than strings so that the whole head becomes one string (one
// allocation) only after it has been validated. rule is the name's
// field.Lookup, filled in by the parser's first pass over the fields.
type span struct {
	ns, ne, vs, ve int32
	rule           field.Rule
}

// parseFieldLine validates the field line buf[ls:le] (le is its CR),
// lowercases its name in place, and returns its span.
func parseFieldLine(buf []byte, ls, le int) (span, *Error) {
	c := buf[ls]
	if c == ' ' || c == '\t' {
		return span{}, errObsFold
	}
	i := ls
	for i < le && field.IsTchar(buf[i]) {
		i++
	}
	switch {
	case i == le:
		return span{}, errNoColon
	case buf[i] != ':':
		switch buf[i] {
		case ' ', '\t':
			return span{}, errSpaceBeforeCol
		case '\r':
			return span{}, errBareCR
		}
		return span{}, errFieldName
	case i == ls:
		return span{}, errFieldName
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
				return span{}, errBareCR
			}
			return span{}, errFieldValue
		}
	}
	return span{ns: int32(ls), ne: int32(i), vs: int32(vs), ve: int32(ve)}, nil
}

// scanned is a field line found whole by scanFieldLine, its offsets
// relative to the line's start.
type scanned struct {
	ne, vs, ve, end int32
}

// at returns the span of a scanned line copied to offset base.
func (s scanned) at(base int32) span {
	return span{ns: base, ne: base + s.ne, vs: base + s.vs, ve: base + s.ve}
}

// scanFieldLine reads one field line at the start of p in a single pass:
// a token, a colon, optional whitespace, value bytes, CRLF. ok is false
// when p does not hold such a line whole (it is cut short, or it has any
// defect at all); the general path then decides what it is, so this one
// never has to know which error a defect is.
func scanFieldLine(p []byte) (sc scanned, ok bool) {
	i := 0
	for i < len(p) && field.IsTchar(p[i]) {
		i++
	}
	if i == 0 || i == len(p) || p[i] != ':' {
		return sc, false
	}
	ne := i
	i++
	for i < len(p) && (p[i] == ' ' || p[i] == '\t') {
		i++
	}
	vs := i
	i = valueRun(p, i)
	// A value byte run ends at the line's CR, or the line is not simple.
	if i+1 >= len(p) || p[i] != '\r' || p[i+1] != '\n' {
		return sc, false
	}
	ve := i
	for ve > vs && (p[ve-1] == ' ' || p[ve-1] == '\t') {
		ve--
	}
	return scanned{int32(ne), int32(vs), int32(ve), int32(i + 2)}, true
}

// valueRun returns the offset of the first byte of p from i on that may not
// appear in a field value (field.IsValueByte), or len(p). It tests eight
// bytes at a time for a control byte or DEL and looks at single bytes only
// in a word that has one: HTAB, which is allowed, or the line's CR.
func valueRun(p []byte, i int) int {
	for ; i+8 <= len(p); i += 8 {
		w := binary.LittleEndian.Uint64(p[i:])
		d := w ^ (0x7f * byteOnes)
		// Exact as a yes/no: some byte is below 0x20, or equals 0x7f.
		if (w-0x20*byteOnes)&^w&byteHighs|(d-byteOnes)&^d&byteHighs != 0 {
			break
		}
	}
	for i < len(p) && field.IsValueByte(p[i]) {
		i++
	}
	return i
}
