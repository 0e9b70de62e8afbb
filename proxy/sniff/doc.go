// Package sniff gives a response without a Content-Type the one Go's
// HTTP server gives it, and so Caddy's: http.DetectContentType of its
// first body bytes (net/http's chunkWriter.writeHeader, and the same rule
// in its HTTP/2 server), for a response with body bytes and no non-empty
// Content-Encoding. A Content-Type that is present, even empty, is left
// alone.
//
// sniff.go holds it all: Needed, ContentType and Len.
package sniff
