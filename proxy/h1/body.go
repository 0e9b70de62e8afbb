package h1

import (
	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// bodyMode is how a message's body is delimited (RFC 9112 §6.3).
type bodyMode uint8

const (
	bodyNone    bodyMode = iota // the message ends with its head
	bodyLength                  // Content-Length bytes follow
	bodyChunked                 // chunked transfer coding
	bodyClose                   // everything until the connection closes
)

// chunkState is where the chunked decoder stands between two bytes.
type chunkState uint8

const (
	csSize    chunkState = iota // hex digits of chunk-size
	csSizeBWS                   // whitespace after the size: only ';' may follow
	csExt                       // chunk extensions, tolerated and dropped
	csSizeLF                    // the LF of the chunk-size line
	csData                      // chunk data
	csDataCR                    // the CRLF after chunk data
	csDataLF
	csTrailer // trailer section up to its empty line
	csDone
)

// maxChunkDigits bounds the significant hex digits of a chunk size: 2^60
// bytes is more than anyone sends, and the bound keeps the arithmetic far
// from overflow.
const maxChunkDigits = 15

// bodyReader removes body framing. It never copies body bytes: what it
// returns is a sub-slice of its input, so a caller can forward straight
// from its read buffer, or stop and resume from the same buffer later.
type bodyReader struct {
	mode      bodyMode
	remaining int64 // bodyLength: bytes left; bodyChunked: bytes left in chunk
	cs        chunkState
	size      int64
	digits    int
	lineLen   int
	maxLine   int

	tr       headReader
	trailers []stream.Field
}

func (r *bodyReader) start(mode bodyMode, length int64, lim *Limits) {
	r.mode = mode
	r.remaining = 0
	if mode == bodyLength {
		r.remaining = length
	}
	r.cs = csSize
	r.size, r.digits, r.lineLen = 0, 0, 0
	r.maxLine = lim.MaxChunkLine
	r.trailers = r.trailers[:0]
	if mode == bodyChunked {
		r.tr.maxSize = lim.MaxTrailerSize
		r.tr.maxLine = min(lim.MaxLineSize, lim.MaxTrailerSize)
		r.tr.maxLines = lim.MaxFields
		r.tr.sizeErr = errTrailerTooLarge
		r.tr.lineErr = errTrailerTooLarge
		r.tr.noStartLine = true
		r.tr.reset()
	}
}

// feed consumes framing and at most one run of up to maxBody body bytes
// from b. body is a sub-slice of b; done reports the end of the body
// (trailers parsed). With maxBody 0 it still consumes framing, so the end
// of a body is seen even while the consumer's window is full — the h1
// analogue of an END_STREAM flag, which costs no window either.
func (r *bodyReader) feed(b []byte, maxBody int) (n int, body []byte, done bool, err *Error) {
	switch r.mode {
	case bodyNone:
		return 0, nil, true, nil
	case bodyLength:
		if r.remaining == 0 {
			return 0, nil, true, nil
		}
		k := min(len(b), maxBody)
		if int64(k) > r.remaining {
			k = int(r.remaining)
		}
		r.remaining -= int64(k)
		return k, b[:k:k], false, nil
	case bodyClose:
		k := min(len(b), maxBody)
		return k, b[:k:k], false, nil
	}
	i := 0
	for i < len(b) {
		c := b[i]
		switch r.cs {
		case csSize:
			if v := unhex(c); v >= 0 {
				if r.size != 0 || v != 0 {
					if r.digits == maxChunkDigits {
						return i, nil, false, errChunkSize
					}
					r.digits++
				}
				r.size = r.size<<4 | int64(v)
			} else {
				if r.lineLen == 0 {
					return i, nil, false, errChunkSize
				}
				switch c {
				case ';':
					r.cs = csExt
				case ' ', '\t':
					r.cs = csSizeBWS
				case '\r':
					r.cs = csSizeLF
				default:
					return i, nil, false, errChunkSize
				}
			}
		case csSizeBWS:
			switch c {
			case ' ', '\t':
			case ';':
				r.cs = csExt
			default:
				return i, nil, false, errChunkExt
			}
		case csExt:
			if c == '\r' {
				r.cs = csSizeLF
			} else if !field.IsValueByte(c) {
				return i, nil, false, errChunkExt
			}
		case csSizeLF:
			if c != '\n' {
				return i, nil, false, errBareCR
			}
			i++
			if r.size == 0 {
				r.cs = csTrailer
				continue
			}
			r.remaining = r.size
			r.cs = csData
			continue
		case csData:
			k := min(len(b)-i, maxBody)
			if int64(k) > r.remaining {
				k = int(r.remaining)
			}
			if k == 0 {
				return i, nil, false, nil
			}
			r.remaining -= int64(k)
			if r.remaining == 0 {
				r.cs = csDataCR
			}
			return i + k, b[i : i+k : i+k], false, nil
		case csDataCR:
			if c != '\r' {
				return i, nil, false, errChunkCRLF
			}
			r.cs = csDataLF
			i++
			continue
		case csDataLF:
			if c != '\n' {
				return i, nil, false, errChunkCRLF
			}
			r.cs = csSize
			r.size, r.digits, r.lineLen = 0, 0, 0
			i++
			continue
		case csTrailer:
			m, fin, herr := r.tr.feed(b[i:])
			i += m
			if herr != nil {
				return i, nil, false, herr
			}
			if !fin {
				return i, nil, false, nil
			}
			if herr := r.parseTrailers(); herr != nil {
				return i, nil, false, herr
			}
			r.cs = csDone
			return i, nil, true, nil
		case csDone:
			return i, nil, true, nil
		}
		// Every byte of a chunk-size line lands here.
		r.lineLen++
		if r.lineLen > r.maxLine {
			return i, nil, false, errChunkLine
		}
		i++
	}
	if r.cs == csDone {
		return i, nil, true, nil
	}
	return i, nil, false, nil
}

// eof reports whether the body is complete when the peer closes.
func (r *bodyReader) eof() bool {
	switch r.mode {
	case bodyNone, bodyClose:
		return true
	case bodyLength:
		return r.remaining == 0
	}
	return r.cs == csDone
}

func (r *bodyReader) parseTrailers() *Error {
	buf := r.tr.buf
	if len(buf) == 2 {
		return nil // "0\r\n\r\n": the usual case costs nothing
	}
	if r.tr.fieldErr != nil {
		return r.tr.fieldErr
	}
	s := string(buf)
	for _, sp := range r.tr.spans {
		name := s[sp.ns:sp.ne]
		if field.Lookup(name).Has(field.NotInTrailer) {
			continue
		}
		r.trailers = append(r.trailers, stream.Field{Name: name, Value: s[sp.vs:sp.ve]})
	}
	return nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
