package h1

import (
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/status"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Body framing for AppendRequestHeadFramed, besides a length >= 0.
const (
	// LengthChunked frames the body with the chunked transfer coding.
	LengthChunked int64 = -1
	// LengthNone sends no framing field: the request has no body.
	LengthNone int64 = -2
)

// AppendRequestHeadFramed appends an HTTP/1.1 request head to dst: the
// request line, each field as given, the body framing and the empty line.
// It writes the fields it is given — Host and all — so the caller owns the
// field set; fields must already be valid (the front ends validate
// everything a client sends, and ValidField checks anything else). The
// framing is chosen here rather than by the fields: any content-length or
// transfer-encoding in fields (field.Framing) is skipped, and length adds
// "content-length: N" (length >= 0), "transfer-encoding: chunked"
// (LengthChunked) or nothing (LengthNone). Passing a front end's
// Request.Header with its ContentLength therefore re-frames the request
// for the origin in one call. Append-style so a backend connection can
// reuse one buffer for every request without allocating.
func AppendRequestHeadFramed(dst []byte, method, target string, fields []stream.Field, length int64) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, target...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	for _, f := range fields {
		if field.Lookup(f.Name).Has(field.Framing) {
			continue
		}
		dst = appendField(dst, f)
	}
	switch {
	case length >= 0:
		dst = append(dst, "content-length: "...)
		dst = strconv.AppendInt(dst, length, 10)
		dst = append(dst, '\r', '\n')
	case length == LengthChunked:
		dst = append(dst, "transfer-encoding: chunked\r\n"...)
	}
	return append(dst, '\r', '\n')
}

// AppendChunk appends p as one chunk of a chunked body. An empty p appends
// nothing, since an empty chunk would end the body.
func AppendChunk(dst, p []byte) []byte {
	if len(p) == 0 {
		return dst
	}
	dst = AppendChunkHeader(dst, len(p))
	dst = append(dst, p...)
	return append(dst, '\r', '\n')
}

// AppendChunkHeader appends the size line of an n-byte chunk (n > 0), for
// a caller that writes the n data bytes and the closing CRLF itself rather
// than copying them into dst.
func AppendChunkHeader(dst []byte, n int) []byte {
	dst = strconv.AppendUint(dst, uint64(n), 16)
	return append(dst, '\r', '\n')
}

// AppendLastChunk appends the last-chunk, the trailer fields (which must be
// valid and allowed in trailers) and the empty line that ends the body.
func AppendLastChunk(dst []byte, trailers []stream.Field) []byte {
	dst = append(dst, '0', '\r', '\n')
	dst = appendFields(dst, trailers)
	return append(dst, '\r', '\n')
}

// ValidField reports whether a field may be written to the wire: a
// non-empty token name and a value without CR, LF, NUL or other controls.
// Writing anything else would let one field become two, or a head end
// early: response splitting and request smuggling.
func ValidField(f stream.Field) bool {
	// Surrounding whitespace in a value would be stripped by the recipient;
	// refusing it keeps what pollproxy saw and what the origin sees
	// identical (field.ValidValue).
	return field.ValidName(f.Name) && field.ValidValue(f.Value)
}

func appendFields(dst []byte, fields []stream.Field) []byte {
	for _, f := range fields {
		dst = appendField(dst, f)
	}
	return dst
}

func appendField(dst []byte, f stream.Field) []byte {
	dst = append(dst, f.Name...)
	dst = append(dst, ':', ' ')
	dst = append(dst, f.Value...)
	return append(dst, '\r', '\n')
}

// appendStatusLine writes "HTTP/1.1 <code> <reason>\r\n". pollproxy
// answers HTTP/1.0 clients with HTTP/1.1 too, as RFC 9110 §2.5 asks.
func appendStatusLine(dst []byte, status int) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = append(dst, byte('0'+status/100), byte('0'+status/10%10), byte('0'+status%10), ' ')
	dst = append(dst, statusText(status)...)
	return append(dst, '\r', '\n')
}

// statusText is the reason phrase of the status line: the one table's
// (proxy/status), or, for a code it does not name, its class's, since
// clients ignore the phrase.
func statusText(code int) string {
	if t := status.Text(code); t != "" {
		return t
	}
	switch code / 100 {
	case 1:
		return "Informational"
	case 2:
		return "Success"
	case 3:
		return "Redirection"
	case 4:
		return "Client Error"
	}
	return "Server Error"
}
