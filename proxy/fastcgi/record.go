package fastcgi

import "encoding/binary"

// Record types (FastCGI 1.0, section 8).
const (
	TypeBeginRequest uint8 = 1
	TypeAbortRequest uint8 = 2
	TypeEndRequest   uint8 = 3
	TypeParams       uint8 = 4
	TypeStdin        uint8 = 5
	TypeStdout       uint8 = 6
	TypeStderr       uint8 = 7
)

// Protocol statuses of an FCGI_END_REQUEST record.
const (
	RequestComplete    uint8 = 0
	CantMultiplexConns uint8 = 1
	Overloaded         uint8 = 2
	UnknownRole        uint8 = 3
)

const (
	version      = 1
	headerLen    = 8
	roleResponse = 1 // FCGI_RESPONDER
	flagKeepConn = 1 // FCGI_KEEP_CONN

	// maxContent is the most content one record carries. Caddy writes at
	// most 65500 bytes a record "for compatibility"; the same bound here
	// keeps every record a php-fpm that Caddy talks to accepts.
	maxContent = 65500
)

// appendHeader appends a record header for n content bytes of type t,
// padded to a multiple of eight as FastCGI recommends (and Caddy does).
func appendHeader(dst []byte, t uint8, id uint16, n int) []byte {
	return append(dst, version, t, byte(id>>8), byte(id), byte(n>>8), byte(n), byte(-n&7), 0)
}

var zeros [8]byte

// AppendBegin appends an FCGI_BEGIN_REQUEST record for request id in the
// responder role; keepConn asks the application to keep the connection
// open after the request (FCGI_KEEP_CONN), so that it can be reused.
func AppendBegin(dst []byte, id uint16, keepConn bool) []byte {
	var flags byte
	if keepConn {
		flags = flagKeepConn
	}
	dst = appendHeader(dst, TypeBeginRequest, id, 8)
	return append(dst, 0, roleResponse, flags, 0, 0, 0, 0, 0)
}

// AppendStream appends p as the records of stream t (TypeParams,
// TypeStdin) of request id, at most maxContent bytes each. An empty p
// appends nothing: the empty record ends a stream (AppendEnd).
func AppendStream(dst []byte, t uint8, id uint16, p []byte) []byte {
	for len(p) > 0 {
		n := min(len(p), maxContent)
		dst = appendHeader(dst, t, id, n)
		dst = append(dst, p[:n]...)
		dst = append(dst, zeros[:-n&7]...)
		p = p[n:]
	}
	return dst
}

// StreamFraming is how many bytes AppendStream adds to n content bytes.
func StreamFraming(n int) int {
	records := (n + maxContent - 1) / maxContent
	return records*headerLen + records*8
}

// AppendEnd appends the empty record that ends stream t of request id.
func AppendEnd(dst []byte, t uint8, id uint16) []byte {
	return appendHeader(dst, t, id, 0)
}

// AppendPair appends one name-value pair in FastCGI's encoding: each
// length in one byte below 128, else in four with the high bit set.
func AppendPair(dst []byte, name, value string) []byte {
	dst = appendLength(dst, len(name))
	dst = appendLength(dst, len(value))
	return append(append(dst, name...), value...)
}

func appendLength(dst []byte, n int) []byte {
	if n < 128 {
		return append(dst, byte(n))
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n)|1<<31)
}
