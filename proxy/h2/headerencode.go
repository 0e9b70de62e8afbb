package h2

import (
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// rejectRequest answers a request no handler sees with an empty response,
// then resets the stream if the client is still sending.
func (c *ServerConn) rejectRequest(id uint32, status int, remoteEnded bool) {
	c.hbuf.Reset()
	enc := c.encoder()
	c.writeField(enc, ":status", statusText(status))
	c.writeField(enc, "content-length", "0")
	c.writeBlock(id, c.hbuf.Bytes(), true)
	if remoteEnded {
		c.recordClosed(id, closedDone)
		return
	}
	c.framer().WriteRSTStream(id, http2.ErrCodeNo)
	c.recordClosed(id, closedByUs)
}

// encodeHead HPACK-encodes a response head or trailers into c.hbuf, or
// returns the block of the last head when this one is the same (see
// headCache). The block is valid until the next encodeHead.
func (c *ServerConn) encodeHead(status int, fields []stream.Field) []byte {
	h := c.lastHead
	if h != nil && h.valid && h.status == status && sameFields(h.fields, fields) {
		return h.block
	}
	c.hbuf.Reset()
	enc := c.encoder()
	indexed := true
	if status != 0 {
		indexed = c.writeField(enc, ":status", statusText(status))
	}
	// A 1xx or 204 carries no content-length (RFC 9110 §8.6), whatever
	// the handler gave it (respond 204 says 0).
	noLength := status != 0 && (status < 200 || status == 204)
	for _, f := range fields {
		if field.Lookup(f.Name).Has(field.ConnectionSpecific) || noLength && f.Name == "content-length" {
			continue
		}
		indexed = c.writeField(enc, f.Name, f.Value) && indexed
	}
	b := c.hbuf.Bytes()
	if indexed {
		if h == nil {
			h = new(headCache)
			c.lastHead = h
		}
		h.valid, h.status = true, status
		h.fields = append(h.fields[:0], fields...)
		h.block = append(h.block[:0], b...)
	}
	return b
}

// headCache is the last head whose header block was table indices alone.
// Such a block changed nothing in the encoder's dynamic table, so as long
// as nothing else changes it (a field added to it, a size update, a new
// encoder) the same head encodes to the same bytes, and encodeHead reuses
// them instead of asking x/net's encoder to look every field up again: it
// hashes each name and each name-value pair into its maps, a visible share
// of the CPU under load (docs/performance.md), where the origin's heads
// repeat but for the rare new date. Allocated on first use, dropped by
// ReleaseIdle.
type headCache struct {
	valid  bool
	status int
	fields []stream.Field // the head's fields as given (their strings are immutable)
	block  []byte
}

// sameFields reports whether a and b are the same fields in the same order.
func sameFields(a, b []stream.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

// writeField encodes one field into c.hbuf and reports whether it went out
// as an index (RFC 7541 §6.1: the first bit set), which leaves the dynamic
// table as it was. Anything else (a literal, which may add an entry and
// evict others; a table size update ahead of it) may have changed the
// table under the cached head's indices, so the cache is dropped.
func (c *ServerConn) writeField(enc *hpack.Encoder, name, value string) bool {
	start := c.hbuf.Len()
	enc.WriteField(hpack.HeaderField{Name: name, Value: value})
	if c.hbuf.Bytes()[start]&0x80 != 0 {
		return true
	}
	c.forgetHead()
	return false
}

// forgetHead drops the cached head: the encoder's table may have changed.
func (c *ServerConn) forgetHead() {
	if c.lastHead != nil {
		c.lastHead.valid = false
	}
}

// writeBlock writes a header block as HEADERS and as many CONTINUATION
// frames as the client's SETTINGS_MAX_FRAME_SIZE needs (appendHeaderBlock).
func (c *ServerConn) writeBlock(id uint32, block []byte, endStream bool) {
	c.out.b = appendHeaderBlock(c.out.b, id, block, int(c.peerMaxFrame), endStream)
}

// appendHeaderBlock appends a header block as a HEADERS frame and as many
// CONTINUATION frames as the peer's SETTINGS_MAX_FRAME_SIZE (maxFrame)
// needs, for either end of a connection. Like DATA, it is framed by hand:
// through the Framer every block was copied twice (into the Framer's
// buffer, then into the output).
func appendHeaderBlock(b []byte, id uint32, block []byte, maxFrame int, endStream bool) []byte {
	first := min(len(block), maxFrame)
	var flags http2.Flags
	if endStream {
		flags |= http2.FlagHeadersEndStream
	}
	if first == len(block) {
		flags |= http2.FlagHeadersEndHeaders
	}
	b = appendFrameHeader(b, first, http2.FrameHeaders, flags, id)
	b = append(b, block[:first]...)
	for rest := block[first:]; len(rest) > 0; {
		k := min(len(rest), maxFrame)
		flags = 0
		if k == len(rest) {
			flags = http2.FlagContinuationEndHeaders
		}
		b = appendFrameHeader(b, k, http2.FrameContinuation, flags, id)
		b = append(b, rest[:k]...)
		rest = rest[k:]
	}
	return b
}

// appendFrameHeader appends a frame's 9-byte header (RFC 9113 §4.1). The
// callers keep length within the client's SETTINGS_MAX_FRAME_SIZE.
func appendFrameHeader(b []byte, length int, typ http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(typ), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// statusTexts holds every status code as its :status value, so encoding
// one never formats a number.
var statusTexts [600]string

func init() {
	for i := 100; i < len(statusTexts); i++ {
		statusTexts[i] = strconv.Itoa(i)
	}
}

func statusText(code int) string { return statusTexts[code] }
