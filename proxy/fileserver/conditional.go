package fileserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// etagOf is Caddy's entity tag: the modification time in nanoseconds
// and the size, both base 36, quoted; none when the time is not useful.
func etagOf(mod time.Time, size int64) string {
	if !usefulModTime(mod) {
		return ""
	}
	return `"` + strconv.FormatInt(mod.UnixNano(), 36) + "-" + strconv.FormatInt(size, 36) + `"`
}

// usefulModTime is Caddy's: the epoch and the second after it are what
// reproducible builds and archives stamp, not a time anything changed.
func usefulModTime(t time.Time) bool {
	s := t.Unix()
	return s != 0 && s != 1
}

// conditions are the request fields a file response depends on, copied
// on the loop so that the pool reads no request memory.
type conditions struct {
	method          string
	acceptEncoding  string
	rng, ifRange    string
	ifMatch         string
	ifNoneMatch     string
	ifModified      string
	ifUnmodified    string
	haveIfMatch     bool
	haveIfNoneMatch bool
	// errStatus is the error a handle_errors route renders with this
	// file, whose status the file is served with, as in Caddy.
	errStatus int
}

// verdict is what the conditional fields decide before any range.
type verdict uint8

const (
	serve verdict = iota
	notModified
	preconditionFailed
)

// check evaluates the conditional fields in RFC 9110 §13.2.2's order, as
// Go's net/http does for Caddy: If-Match, else If-Unmodified-Since;
// If-None-Match, else If-Modified-Since (GET and HEAD only). It also
// drops the range when If-Range does not hold.
func (c *conditions) check(etag string, mod time.Time) verdict {
	get := c.method == "GET" || c.method == "HEAD"
	useful := usefulModTime(mod)
	switch {
	case c.haveIfMatch:
		if !matchAny(c.ifMatch, etag, true) {
			return preconditionFailed
		}
	case c.ifUnmodified != "" && useful:
		if t, err := http.ParseTime(c.ifUnmodified); err == nil && mod.Truncate(time.Second).After(t) {
			return preconditionFailed
		}
	}
	switch {
	case c.haveIfNoneMatch:
		if matchAny(c.ifNoneMatch, etag, false) {
			if get {
				return notModified
			}
			return preconditionFailed
		}
	case c.ifModified != "" && get && useful:
		if t, err := http.ParseTime(c.ifModified); err == nil && !mod.Truncate(time.Second).After(t) {
			return notModified
		}
	}
	if c.rng != "" && c.ifRange != "" && !c.ifRangeHolds(etag, mod) {
		c.rng = ""
	}
	return serve
}

// ifRangeHolds: an entity tag must match strongly; a date must be the
// modification time exactly.
func (c *conditions) ifRangeHolds(etag string, mod time.Time) bool {
	v := strings.TrimSpace(c.ifRange)
	if strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "W/") {
		return etag != "" && v == etag
	}
	t, err := http.ParseTime(v)
	return err == nil && usefulModTime(mod) && mod.Truncate(time.Second).Equal(t)
}

// matchAny reports whether list (an If-Match or If-None-Match value)
// holds "*" or etag: compared strongly (If-Match: neither may be weak) or
// weakly (If-None-Match: W/ is ignored).
func matchAny(list, etag string, strong bool) bool {
	list = strings.TrimSpace(list)
	if list == "*" {
		return true
	}
	if etag == "" {
		return false
	}
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if weak, ok := strings.CutPrefix(t, "W/"); ok {
			if strong {
				continue
			}
			t = weak
		}
		if t == etag {
			return true
		}
	}
	return false
}

// span is one byte range of a file: its first byte and length.
type span struct{ start, n int64 }

// The errors of a Range value, in net/http's words (Caddy answers 416
// with them).
var (
	errInvalidRange = errors.New("invalid range")
	errNoOverlap    = errors.New("invalid range: failed to overlap")
)

// parseRanges reads a Range value against a file of size bytes as Go's
// net/http does (and so Caddy): an error means 416; no spans and no
// error, the whole file.
func parseRanges(v string, size int64) (spans []span, err error) {
	specs, found := strings.CutPrefix(v, "bytes=")
	if !found {
		return nil, errInvalidRange
	}
	unsatisfiable := false
	for _, spec := range strings.Split(specs, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		first, last, found := strings.Cut(spec, "-")
		if !found {
			return nil, errInvalidRange
		}
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if first == "" { // the last N bytes
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 || last == "" || last[0] == '-' {
				return nil, errInvalidRange
			}
			if n == 0 || size == 0 {
				unsatisfiable = true
				continue
			}
			n = min(n, size)
			spans = append(spans, span{size - n, n})
			continue
		}
		a, err := strconv.ParseInt(first, 10, 64)
		if err != nil || a < 0 {
			return nil, errInvalidRange
		}
		if a >= size {
			unsatisfiable = true
			continue
		}
		b := size - 1
		if last != "" {
			if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
				return nil, errInvalidRange
			}
			b = min(b, size-1)
		}
		spans = append(spans, span{a, b - a + 1})
	}
	if len(spans) == 0 && unsatisfiable {
		return nil, errNoOverlap
	}
	var sum int64
	for _, s := range spans {
		sum += s.n
	}
	// Overlapping ranges asking more than the file, or more ranges than
	// any client needs (each costs a part head, and Apache's "killer"
	// sent thousands): the whole file, as RFC 9110 lets a server do.
	if sum > size || len(spans) > maxRanges {
		return nil, nil
	}
	return spans, nil
}

// maxRanges bounds the ranges of one request.
const maxRanges = 64

// segment is a piece of a response body: head bytes, then n bytes of
// the file from off.
type segment struct {
	head []byte
	off  int64
	n    int64
}

// multipart lays spans out as a multipart/byteranges body, as net/http
// writes it, and returns its segments, length and content type.
func multipart(spans []span, contentType string, size int64) ([]segment, int64, string) {
	var b [12]byte
	rand.Read(b[:])
	boundary := hex.EncodeToString(b[:])
	segs := make([]segment, 0, len(spans)+1)
	var total int64
	for i, s := range spans {
		var h strings.Builder
		if i > 0 {
			h.WriteString("\r\n")
		}
		h.WriteString("--" + boundary + "\r\n")
		if contentType != "" {
			h.WriteString("Content-Type: " + contentType + "\r\n")
		}
		h.WriteString("Content-Range: " + contentRange(s, size) + "\r\n\r\n")
		segs = append(segs, segment{head: []byte(h.String()), off: s.start, n: s.n})
		total += int64(h.Len()) + s.n
	}
	end := []byte("\r\n--" + boundary + "--\r\n")
	segs = append(segs, segment{head: end})
	total += int64(len(end))
	return segs, total, "multipart/byteranges; boundary=" + boundary
}

func contentRange(s span, size int64) string {
	return "bytes " + strconv.FormatInt(s.start, 10) + "-" + strconv.FormatInt(s.start+s.n-1, 10) + "/" + strconv.FormatInt(size, 10)
}

// acceptedEncodings returns the encodings of order (the server's, best
// first) the client accepts, by the client's preference (q) first and
// the server's order among equals. identity and * are not sidecars.
func acceptedEncodings(acceptEncoding string, order []string) []string {
	if acceptEncoding == "" || len(order) == 0 {
		return nil
	}
	type pref struct {
		enc string
		q   float64
		at  int
	}
	var prefs []pref
	for _, item := range strings.Split(acceptEncoding, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			q = f
		}
		for i, o := range order {
			if o == name && q > 0 {
				prefs = append(prefs, pref{name, q, i})
			}
		}
	}
	for i := 1; i < len(prefs); i++ { // insertion sort: a handful at most
		for j := i; j > 0 && (prefs[j].q > prefs[j-1].q || prefs[j].q == prefs[j-1].q && prefs[j].at < prefs[j-1].at); j-- {
			prefs[j], prefs[j-1] = prefs[j-1], prefs[j]
		}
	}
	out := make([]string, len(prefs))
	for i, p := range prefs {
		out[i] = p.enc
	}
	return out
}
