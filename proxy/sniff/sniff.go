package sniff

import (
	"net/http"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Len is the most body bytes ContentType reads.
const Len = 512

// Needed reports whether a response head, followed by body bytes, gets a
// sniffed Content-Type: it has none, and no Content-Encoding (Go reads
// the first Content-Encoding value; a non-empty one forbids the sniff).
// Field names are lowercase.
func Needed(fields []stream.Field) bool {
	ce := false
	for _, f := range fields {
		switch f.Name {
		case "content-type":
			return false
		case "content-encoding":
			if !ce && f.Value != "" {
				return false
			}
			ce = true
		}
	}
	return true
}

// ContentType returns the Content-Type sniffed from a body's first bytes
// (up to Len of them count).
func ContentType(first []byte) string { return http.DetectContentType(first) }
