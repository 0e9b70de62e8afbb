package h1

import (
	"cmp"
	"encoding/binary"
	"strconv"
)

// Limits bounds what a parser buffers for one message. The zero value of
// each field selects its default, so a zero Limits is ready to use.
type Limits struct {
	// MaxHeadSize bounds the start line plus all header fields, CRLFs
	// included (default 64 KiB). Larger heads get 431.
	MaxHeadSize int
	// MaxFields bounds the number of header fields (default 100), and
	// separately the number of trailer fields.
	MaxFields int
	// MaxLineSize bounds one start line or field line (default 16 KiB). A
	// longer request line gets 414, a longer field line 431.
	MaxLineSize int
	// MaxTrailerSize bounds the trailer section of a chunked body
	// (default 16 KiB).
	MaxTrailerSize int
	// MaxChunkLine bounds a chunk-size line including extensions, which
	// pollproxy tolerates but discards (default 4 KiB).
	MaxChunkLine int
}

// Default limits, chosen to admit every real browser and API client while
// keeping a stalled connection's buffers small.
const (
	DefaultMaxHeadSize    = 64 << 10
	DefaultMaxFields      = 100
	DefaultMaxLineSize    = 16 << 10
	DefaultMaxTrailerSize = 16 << 10
	DefaultMaxChunkLine   = 4 << 10
)

// withDefaults fills zero fields so the hot paths never test for zero;
// cmp.Or(max(v, 0), d) gives a zero or negative setting its default.
func (l Limits) withDefaults() Limits {
	l.MaxHeadSize = cmp.Or(max(l.MaxHeadSize, 0), DefaultMaxHeadSize)
	l.MaxFields = cmp.Or(max(l.MaxFields, 0), DefaultMaxFields)
	l.MaxLineSize = cmp.Or(max(l.MaxLineSize, 0), DefaultMaxLineSize)
	if l.MaxLineSize > l.MaxHeadSize {
		l.MaxLineSize = l.MaxHeadSize
	}
	l.MaxTrailerSize = cmp.Or(max(l.MaxTrailerSize, 0), DefaultMaxTrailerSize)
	l.MaxChunkLine = cmp.Or(max(l.MaxChunkLine, 0), DefaultMaxChunkLine)
	return l
}

// Event is what one Feed call produced. Each call reports at most one event
// so that a caller can act on it (and stop feeding, for backpressure) before
// the parser goes further.
type Event uint8

const (
	// EventNone means the parser consumed what it could and needs more
	// input (or, after EventDone, a Reset) before anything else happens.
	EventNone Event = iota
	// EventHead means a complete request or final response head was parsed.
	EventHead
	// EventInfo means a complete 1xx informational response head was parsed
	// (response parser only); parsing continues with the next head.
	EventInfo
	// EventBody means body bytes are available from Body: a sub-slice of
	// the input, valid until the input buffer is reused.
	EventBody
	// EventDone means the message ended; trailers, if any, are available.
	EventDone
)

// String names the event for test failures and logs.
func (e Event) String() string {
	switch e {
	case EventNone:
		return "none"
	case EventHead:
		return "head"
	case EventInfo:
		return "info"
	case EventBody:
		return "body"
	case EventDone:
		return "done"
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// Error is a protocol violation by the peer. Status is the HTTP status a
// server answers with (400, 413, 414, 431, 501, 505); the backend side
// treats every Error as a bad gateway.
type Error struct {
	Status int
	Reason string
}

// Error implements error.
func (e *Error) Error() string { return "h1: " + e.Reason }

// The errors are preallocated so that rejecting garbage costs nothing.
var (
	errBareLF          = &Error{400, "line ends in a bare LF"}
	errBareCR          = &Error{400, "bare CR"}
	errObsFold         = &Error{400, "obsolete line folding"}
	errSpaceBeforeCol  = &Error{400, "whitespace between field name and colon"}
	errFieldName       = &Error{400, "invalid field name"}
	errFieldValue      = &Error{400, "invalid character in field value"}
	errNoColon         = &Error{400, "field line without colon"}
	errHeadTooLarge    = &Error{431, "header section too large"}
	errTooManyFields   = &Error{431, "too many header fields"}
	errFieldTooLong    = &Error{431, "field line too long"}
	errURITooLong      = &Error{414, "request line too long"}
	errRequestLine     = &Error{400, "malformed request line"}
	errMethod          = &Error{400, "invalid method"}
	errTarget          = &Error{400, "invalid request target"}
	errVersion         = &Error{400, "malformed HTTP version"}
	errVersionUnsupp   = &Error{505, "HTTP version not supported"}
	errConnect         = &Error{501, "CONNECT is not supported"}
	errNoHost          = &Error{400, "missing Host"}
	errMultiHost       = &Error{400, "multiple Host fields"}
	errBadHost         = &Error{400, "invalid Host"}
	errCLTE            = &Error{400, "Content-Length with Transfer-Encoding"}
	errBadCL           = &Error{400, "invalid Content-Length"}
	errMultiCL         = &Error{400, "conflicting Content-Length values"}
	errBadTE           = &Error{400, "invalid Transfer-Encoding"}
	errUnknownTE       = &Error{501, "unsupported transfer coding"}
	errTE10            = &Error{400, "Transfer-Encoding in an HTTP/1.0 message"}
	errUnderscoreFrame = &Error{400, "framing field spelled with an underscore"}
	errExpect          = &Error{417, "unsupported expectation"}
	errChunkSize       = &Error{400, "invalid chunk size"}
	errChunkLine       = &Error{400, "chunk size line too long"}
	errChunkExt        = &Error{400, "invalid chunk extension"}
	errChunkCRLF       = &Error{400, "chunk data not followed by CRLF"}
	errTrailerTooLarge = &Error{431, "trailer section too large"}
	errStatusLine      = &Error{502, "malformed status line"}
	errSwitching       = &Error{502, "unexpected 101 Switching Protocols"}
)

// ErrTruncated reports that the connection ended inside a message.
var ErrTruncated = &Error{400, "connection closed inside a message"}

// ErrNoResponse reports that an origin closed the connection before sending
// any byte of a response: the one case where a pooled connection's request
// may be retried safely.
var ErrNoResponse = &Error{502, "connection closed before any response byte"}

// lowerInPlace lowercases ASCII letters in b, a validated token (every
// byte below 0x80); field names are lowercased in the head buffer itself
// so that no second copy is needed. A name of eight bytes or more goes a
// word at a time, its last word overlapping the one before (lowercasing
// twice changes nothing); a shorter one a table store per byte, not a
// branch: names mix cases unpredictably.
func lowerInPlace(b []byte) {
	if len(b) < 8 {
		for i, c := range b {
			b[i] = toLower[c]
		}
		return
	}
	for i := 0; i < len(b); i += 8 {
		i = min(i, len(b)-8)
		binary.LittleEndian.PutUint64(b[i:], lowerWord(binary.LittleEndian.Uint64(b[i:])))
	}
}

// lowerWord lowercases the eight ASCII bytes of w at once: a byte's high
// bit, after adding 0x80-'A' and 0x80-'Z'-1, says whether it is at least
// 'A' and above 'Z'; no byte below 0x80 carries into the next one.
func lowerWord(w uint64) uint64 {
	upper := (w + (0x80-'A')*byteOnes) &^ (w + (0x80-'Z'-1)*byteOnes) & byteHighs
	return w | upper>>2
}

// byteOnes and byteHighs are the lowest and the highest bit of every byte
// of a word, for the scans that look at eight bytes at once.
const byteOnes, byteHighs = 0x0101010101010101, 0x8080808080808080

// toLower maps every byte to itself but ASCII uppercase letters.
var toLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

// equalFoldASCII compares a token with a lowercase constant.
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// trimOWS strips optional whitespace (SP, HTAB) from both ends.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// nextListItem splits a comma-separated field value (RFC 9110 §5.6.1),
// returning the next trimmed element, the rest, and whether a comma
// followed (so "chunked," is seen to end in an empty element).
func nextListItem(s string) (item, rest string, more bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return trimOWS(s[:i]), s[i+1:], true
		}
	}
	return trimOWS(s), "", false
}
