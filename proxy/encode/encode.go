package encode

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Config is one encode directive, compiled once per (re)load and shared
// read-only by every loop.
type Config struct {
	// Formats are the encodings offered, in the directive's order: when
	// the client's q-values tie, the first wins (Caddy's prefer).
	Formats []Format
	// MinLength: only a response longer than this is encoded (Caddy's
	// minimum_length; DefaultMinLength when the directive gives none).
	MinLength int64
	// Match picks the responses to encode (Caddy's match). Config's
	// reader fills it with Caddy's compressible types (DefaultTypes)
	// when the directive has no match.
	Match ResponseMatcher
}

// ResponseMatcher is a response matcher: route.ResponseMatch.
type ResponseMatcher interface {
	Matches(status int, fields []stream.Field) bool
}

// Format is one encoding and its settings.
type Format struct {
	// Name is the Accept-Encoding token: "gzip" or "zstd".
	Name string
	// Level is gzip's level (-3 to 9; 0 means DefaultGzipLevel) or zstd's
	// zstd.EncoderLevel (0 means zstd.SpeedDefault).
	Level int
	// NoChecksum leaves out zstd's frame checksum (disable_checksum).
	NoChecksum bool
}

// The encodings pollproxy has: stock Caddy's.
const (
	Gzip = "gzip"
	Zstd = "zstd"
)

// DefaultFormats are the encodings of a bare encode: Caddy's, zstd
// preferred.
var DefaultFormats = []string{Zstd, Gzip}

// DefaultMinLength is Caddy's minimum_length.
const DefaultMinLength = 512

// DefaultGzipLevel is Caddy's gzip level.
const DefaultGzipLevel = 5

// zstdWindow bounds a zstd stream's window, and with it what the
// encoder and every client's decoder hold: 64 KiB where the library's
// default is 8 MiB (Caddy lowers it to 128 KiB). A typical page fits in
// it whole; a long stream loses a little ratio.
const zstdWindow = 64 << 10

// DefaultTypes are the Content-Types encode compresses when the
// directive has no match: Caddy's list, as patterns of its header
// matcher.
var DefaultTypes = []string{
	"application/atom+xml*", "application/eot*", "application/font*", "application/geo+json*",
	"application/graphql+json*", "application/graphql-response+json*", "application/javascript*",
	"application/json*", "application/ld+json*", "application/manifest+json*", "application/opentype*",
	"application/otf*", "application/rss+xml*", "application/truetype*", "application/ttf*",
	"application/vnd.api+json*", "application/vnd.ms-fontobject*", "application/wasm*",
	"application/x-httpd-cgi*", "application/x-javascript*", "application/x-opentype*", "application/x-otf*",
	"application/x-perl*", "application/x-protobuf*", "application/x-ttf*", "application/xhtml+xml*",
	"application/xml*", "font/ttf*", "font/otf*", "image/svg+xml*", "image/vnd.microsoft.icon*",
	"image/x-icon*", "multipart/bag*", "multipart/mixed*", "text/*",
}

// ParseGzipLevel reads gzip's level as Caddy does: an integer from -3
// (stateless) to 9, 0 for the default.
func ParseGzipLevel(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("gzip level %q: want a number from -3 to 9", s)
	}
	if n < -3 || n > 9 {
		return 0, fmt.Errorf("gzip level %d: want -3 to 9", n)
	}
	return n, nil
}

// ParseZstdLevel reads zstd's level as Caddy does: fastest, default,
// better or best.
func ParseZstdLevel(s string) (int, error) {
	if ok, l := zstd.EncoderLevelFromString(s); ok {
		return int(l), nil
	}
	return 0, fmt.Errorf("zstd level %q: want fastest, default, better or best", s)
}

// Choose returns the index in c.Formats of the encoding for a request,
// or -1: the client's highest q-value among the formats offered, ties to
// the directive's order, as Caddy's AcceptedEncodings. A WebSocket
// handshake (Sec-WebSocket-Key) is never encoded. It allocates nothing.
func (c *Config) Choose(req *stream.Request) int {
	best, bestQ := -1, 0.0
	for _, f := range req.Header {
		switch f.Name {
		case "sec-websocket-key":
			return -1
		case "accept-encoding":
		default:
			continue
		}
		for item := range strings.SplitSeq(f.Value, ",") {
			name, params, hasParams := strings.Cut(item, ";")
			name = strings.TrimSpace(name)
			i := c.index(name)
			if i < 0 {
				continue
			}
			q := 1.0
			if hasParams {
				q = qValue(params)
			}
			if q < 0.00001 {
				continue
			}
			switch {
			case best < 0 || q > bestQ+0.00001:
			case q > bestQ-0.00001 && i < best:
			default:
				continue
			}
			best, bestQ = i, q
		}
	}
	return best
}

// index is the position of the named format (compared without case),
// or -1.
func (c *Config) index(name string) int {
	for i := range c.Formats {
		if strings.EqualFold(c.Formats[i].Name, name) {
			return i
		}
	}
	return -1
}

// qValue reads an item's first parameter as Caddy does: a q outside 0-1,
// or none, is 1.
func qValue(params string) float64 {
	p, _, _ := strings.Cut(params, ";")
	p = strings.TrimSpace(p)
	if len(p) < 2 || !strings.EqualFold(p[:2], "q=") {
		return 1
	}
	q, err := strconv.ParseFloat(p[2:], 32)
	if err != nil || q < 0 || q > 1 {
		return 1
	}
	return q
}

// StripETags removes the encoding's mark from the request's
// If-None-Match (several lines become one, as in Caddy), so that the
// handler that made the ETag recognises it. It returns the fields
// unchanged when there is nothing to strip, else a copy.
func StripETags(fields []stream.Field, name string) []stream.Field {
	lines, marked := 0, false
	mark := "-" + name + `"`
	for _, f := range fields {
		if f.Name == "if-none-match" {
			lines++
			marked = marked || strings.Contains(f.Value, mark)
		}
	}
	if !marked && lines < 2 {
		return fields
	}
	out := make([]stream.Field, 0, len(fields))
	var joined strings.Builder
	at := -1
	for _, f := range fields {
		if f.Name != "if-none-match" {
			out = append(out, f)
			continue
		}
		if at < 0 {
			at = len(out)
			out = append(out, f)
		} else {
			joined.WriteString(", ")
		}
		joined.WriteString(f.Value)
	}
	out[at].Value = strings.ReplaceAll(joined.String(), mark, `"`)
	return out
}

// markETag is a strong ETag marked with the encoding, as Caddy marks it
// (RFC 9110 §8.8.3.3: the encoded representation is another one).
func markETag(etag, name string) string {
	if etag == "" || strings.HasPrefix(etag, "W/") {
		return etag
	}
	return strings.TrimSuffix(etag, `"`) + "-" + name + `"`
}

// get returns the first value of the named field.
func get(fields []stream.Field, name string) (string, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// isStreaming reports a response whose events must reach the client as
// they are written, so it is decided on at its head, as Caddy does:
// server-sent events, or Incremental: ?1 (RFC 10036).
func isStreaming(fields []stream.Field) bool {
	if ct, ok := get(fields, "content-type"); ok && isSSE(ct) {
		return true
	}
	v, ok := get(fields, "incremental")
	if !ok {
		return false
	}
	v, _, _ = strings.Cut(v, ";")
	return strings.TrimSpace(v) == "?1"
}

const sseType = "text/event-stream"

// isSSE: the media type text/event-stream, with parameters or none.
func isSSE(ct string) bool {
	if len(ct) < len(sseType) || !strings.EqualFold(ct[:len(sseType)], sseType) {
		return false
	}
	rest := strings.TrimLeft(ct[len(sseType):], " \t")
	return rest == "" || rest[0] == ';'
}
