package h2

import (
	"errors"

	"golang.org/x/net/http2/hpack"
)

// fieldDecoder is an HPACK decoder (RFC 7541) with the interface of
// x/net's hpack.Decoder that the connections use (Write, Close,
// SetEmitEnabled, SetMaxStringLength, SetAllowedMaxDynamicTableSize), for
// both ends: written first for the origin's side of the proxy, where the
// same few response fields come back on every stream, and then taken by
// the server side, where a client's paths come back. x/net's decoder shares its dynamic
// table type with the encoder, so every field an origin adds to the table
// (nginx adds its date, content-type, content-length, last-modified and
// server to it on every response, and uses none of them again) costs two
// map inserts on the way in and, once the table is full, two map deletes
// and a copy of the whole table on the way out; and every literal is a
// new string, Huffman-decoded again each time. Here the table is a ring
// of strings, and literals are looked up in a small cache of the strings
// this connection decoded before (internCache) by their encoded bytes, so
// a repeated value costs a map lookup and no allocation. Measured at h2
// -c 6 -m 100 against an nginx h2c origin: x/net's decoder was a fifth of
// pollproxy's CPU (docs/performance.md, "HTTP/2 to origins: the HPACK
// codec").
//
// A header block may come in several frames (CONTINUATION): the fragments
// are decoded as they come, the bytes of a field split across two
// fragments kept in pend until the rest arrives.
type fieldDecoder struct {
	emit    func(hpack.HeaderField)
	emitOff bool

	table dynTable
	// allowedMax is the largest table size the encoder may choose: the
	// SETTINGS_HEADER_TABLE_SIZE we sent.
	allowedMax uint32
	maxString  int // longest string literal, decoded; 0: no limit

	// firstField is true until a block's first representation: a table
	// size update must come at the start (RFC 7541 §4.2). As x/net's
	// decoder, whose behaviour the proxy kept, a later one is taken
	// while the table is empty.
	firstField bool
	pend       []byte // an incomplete field of the block, bytes so far

	intern internCache
}

// releaseIdle lets go of what the decoder holds besides its table (the
// cache of decoded strings, the bytes of a split field) while a
// connection is idle between header blocks, and returns roughly how many
// bytes that was.
func (d *fieldDecoder) releaseIdle() int {
	n := cap(d.pend) + d.intern.bytes
	d.pend, d.intern = nil, internCache{maxBytes: d.intern.maxBytes}
	return n
}

// newFieldDecoder returns// newFieldDecoder returns a decoder whose dynamic table starts at
// maxTable bytes and which hands each field to emit.
func newFieldDecoder(maxTable uint32, emit func(hpack.HeaderField)) *fieldDecoder {
	d := &fieldDecoder{emit: emit, allowedMax: maxTable, firstField: true}
	d.table.max = maxTable
	return d
}

// SetEmitEnabled turns the handing out of fields on or off; the block is
// decoded either way, to keep the dynamic table in step.
func (d *fieldDecoder) SetEmitEnabled(v bool) { d.emitOff = !v }

// SetMaxStringLength bounds a string literal's decoded length; a longer
// one fails the block with hpack.ErrStringLength.
func (d *fieldDecoder) SetMaxStringLength(n int) { d.maxString = n }

// SetAllowedMaxDynamicTableSize sets the largest table size a size update
// may choose (our SETTINGS_HEADER_TABLE_SIZE).
func (d *fieldDecoder) SetAllowedMaxDynamicTableSize(v uint32) { d.allowedMax = v }

// Errors of a malformed block. Each is a COMPRESSION_ERROR for the
// connection.
var (
	errFieldTruncated = errors.New("truncated header block")
	errFieldInteger   = errors.New("integer overflow")
	errFieldIndex     = errors.New("invalid table index")
	errFieldResize    = errors.New("dynamic table size update not at the start of a block, or above the limit")
)

// Write decodes a fragment of a header block, handing out each complete
// field; the bytes of a field it cuts in two wait for the next Write.
func (d *fieldDecoder) Write(p []byte) (int, error) {
	n := len(p)
	if len(d.pend) > 0 {
		d.pend = append(d.pend, p...)
		p = d.pend
	}
	for len(p) > 0 {
		used, err := d.field(p)
		if err == errFieldTruncated {
			// A field split across frames: keep its bytes. They are
			// bounded by the longest string the decoder takes (twice,
			// for a name and a value, plus the integers).
			if d.maxString > 0 && len(p) > 2*(d.maxString+8) {
				return 0, hpack.ErrStringLength
			}
			// (p may be d.pend's own tail: append moves it down.)
			d.pend = append(d.pend[:0], p...)
			return n, nil
		}
		d.firstField = false
		if err != nil {
			d.pend = d.pend[:0]
			return 0, err
		}
		p = p[used:]
	}
	d.pend = d.pend[:0]
	return n, nil
}

// Close ends a header block: a field still cut in two is an error.
func (d *fieldDecoder) Close() error {
	d.firstField = true
	if len(d.pend) > 0 {
		d.pend = d.pend[:0]
		return errFieldTruncated
	}
	return nil
}

// field decodes the representation at the start of p (RFC 7541 §6) and
// says how many bytes it took, or errFieldTruncated when p ends inside
// it.
func (d *fieldDecoder) field(p []byte) (int, error) {
	b := p[0]
	switch {
	case b&0x80 != 0: // indexed field (§6.1)
		i, n, err := readVarInt(7, p)
		if err != nil {
			return 0, err
		}
		name, value, ok := d.at(i)
		if !ok {
			return 0, errFieldIndex
		}
		d.out(name, value, false)
		return n, nil
	case b&0xc0 == 0x40: // literal with incremental indexing (§6.2.1)
		return d.literal(p, 6, true, false)
	case b&0xe0 == 0x20: // dynamic table size update (§6.3)
		size, n, err := readVarInt(5, p)
		if err != nil {
			return 0, err
		}
		if !d.firstField && d.table.size > 0 || size > uint64(d.allowedMax) {
			return 0, errFieldResize
		}
		d.table.resize(uint32(size))
		return n, nil
	default: // without indexing (§6.2.2), never indexed (§6.2.3)
		return d.literal(p, 4, false, b&0xf0 == 0x10)
	}
}

// literal decodes a literal field whose name index has the given prefix
// bits, adding it to the table when indexing.
func (d *fieldDecoder) literal(p []byte, prefix byte, indexing, sensitive bool) (int, error) {
	i, n, err := readVarInt(prefix, p)
	if err != nil {
		return 0, err
	}
	var name string
	if i > 0 {
		var ok bool
		if name, _, ok = d.at(i); !ok {
			return 0, errFieldIndex
		}
	} else {
		s, m, err := d.str(p[n:])
		if err != nil {
			return 0, err
		}
		name, n = s, n+m
	}
	value, m, err := d.str(p[n:])
	if err != nil {
		return 0, err
	}
	if indexing {
		d.table.add(name, value)
	}
	d.out(name, value, sensitive)
	return n + m, nil
}

func (d *fieldDecoder) out(name, value string, sensitive bool) {
	if !d.emitOff {
		d.emit(hpack.HeaderField{Name: name, Value: value, Sensitive: sensitive})
	}
}

// str decodes a string literal (§5.2), from the cache when this
// connection decoded the same bytes before.
func (d *fieldDecoder) str(p []byte) (string, int, error) {
	if len(p) == 0 {
		return "", 0, errFieldTruncated
	}
	huffman := p[0]&0x80 != 0
	l, n, err := readVarInt(7, p)
	if err != nil {
		return "", 0, err
	}
	// A Huffman code is at least five bits a byte: its decoded length is
	// at most 8/5 of l.
	if d.maxString > 0 && (!huffman && l > uint64(d.maxString) || huffman && l > uint64(d.maxString)*8/5+1) {
		return "", 0, hpack.ErrStringLength
	}
	if uint64(len(p)-n) < l {
		return "", 0, errFieldTruncated
	}
	raw := p[n : n+int(l)]
	if s, ok := d.intern.get(raw, huffman); ok {
		return s, n + int(l), nil
	}
	var s string
	if huffman {
		if s, err = hpack.HuffmanDecodeToString(raw); err != nil {
			return "", 0, err
		}
		if d.maxString > 0 && len(s) > d.maxString {
			return "", 0, hpack.ErrStringLength
		}
	} else {
		s = string(raw)
	}
	d.intern.put(raw, huffman, s)
	return s, n + int(l), nil
}

// at is the field at index i: the static table, then the dynamic one
// (§2.3.3).
func (d *fieldDecoder) at(i uint64) (name, value string, ok bool) {
	switch {
	case i == 0:
		return "", "", false
	case i <= uint64(len(staticTable)):
		f := staticTable[i-1]
		return f[0], f[1], true
	}
	return d.table.at(i - uint64(len(staticTable)))
}

// readVarInt reads an integer with an n-bit prefix (§5.1) at the start of
// p, and how many bytes it took.
func readVarInt(n byte, p []byte) (uint64, int, error) {
	if len(p) == 0 {
		return 0, 0, errFieldTruncated
	}
	mask := uint64(1)<<n - 1
	i := uint64(p[0]) & mask
	if i < mask {
		return i, 1, nil
	}
	var m uint
	for k := 1; k < len(p); k++ {
		b := p[k]
		i += uint64(b&0x7f) << m
		if b&0x80 == 0 {
			return i, k + 1, nil
		}
		m += 7
		if m >= 63 {
			return 0, 0, errFieldInteger
		}
	}
	return 0, 0, errFieldTruncated
}

// dynTable is the dynamic table (§2.3.2): a ring of entries, the newest at
// index 1.
type dynTable struct {
	ents      []tableEntry // the ring, grown as needed
	head, n   int          // the oldest entry, and how many there are
	size, max uint32
}

type tableEntry struct{ name, value string }

// entrySize is an entry's size as the table counts it (§4.1).
func entrySize(name, value string) uint32 { return uint32(len(name) + len(value) + 32) }

func (t *dynTable) at(i uint64) (name, value string, ok bool) {
	if i == 0 || i > uint64(t.n) {
		return "", "", false
	}
	e := t.ents[(t.head+t.n-int(i))%len(t.ents)]
	return e.name, e.value, true
}

// add inserts an entry, evicting the oldest ones to make room; one larger
// than the table empties it (§4.4).
func (t *dynTable) add(name, value string) {
	sz := entrySize(name, value)
	if sz > t.max {
		t.evictTo(0)
		return
	}
	t.evictTo(t.max - sz)
	if t.n == len(t.ents) {
		t.grow()
	}
	t.ents[(t.head+t.n)%len(t.ents)] = tableEntry{name, value}
	t.n++
	t.size += sz
}

// resize sets the table's size limit, evicting what no longer fits.
func (t *dynTable) resize(max uint32) {
	t.max = max
	t.evictTo(max)
}

func (t *dynTable) evictTo(limit uint32) {
	for t.size > limit && t.n > 0 {
		e := &t.ents[t.head]
		t.size -= entrySize(e.name, e.value)
		*e = tableEntry{}
		t.head = (t.head + 1) % len(t.ents)
		t.n--
	}
}

// grow doubles the ring (an entry is at least 32 bytes of the table's
// size, so a 4 KiB table holds at most 128).
func (t *dynTable) grow() {
	ents := make([]tableEntry, max(16, 2*len(t.ents)))
	for k := 0; k < t.n; k++ {
		ents[k] = t.ents[(t.head+k)%len(t.ents)]
	}
	t.ents, t.head = ents, 0
}

// internCache maps the encoded bytes of string literals to the strings
// they decoded to, per connection. Bounded: at maxBytes of strings, or one
// entry per internBytesPerEntry of it, it starts again, empty.
type internCache struct {
	plain, huff map[string]string
	bytes       int
	maxBytes    int // 0: internMaxBytes
}

const (
	// internMaxBytes is an origin connection's bound: few connections
	// carry many streams. A client connection's is a quarter of it
	// (ServerConn): there may be tens of thousands.
	internMaxBytes      = 16 << 10
	internBytesPerEntry = 64
	// internLongest is the longest literal kept: longer ones (a cookie, a
	// token) are rarely the same twice.
	internLongest = 256
)

// limit is the cache's bound in bytes.
func (c *internCache) limit() int {
	if c.maxBytes > 0 {
		return c.maxBytes
	}
	return internMaxBytes
}

func (c *internCache) get(raw []byte, huffman bool) (string, bool) {
	m := c.plain
	if huffman {
		m = c.huff
	}
	s, ok := m[string(raw)] // no allocation for the lookup
	return s, ok
}

func (c *internCache) put(raw []byte, huffman bool, s string) {
	if len(raw) > internLongest {
		return
	}
	limit := c.limit()
	if c.plain == nil || len(c.plain)+len(c.huff) >= limit/internBytesPerEntry || c.bytes+len(raw)+len(s) > limit {
		c.plain, c.huff, c.bytes = make(map[string]string), make(map[string]string), 0
	}
	if huffman {
		c.huff[string(raw)] = s
	} else {
		c.plain[s] = s // the bytes are the string: one copy for both
	}
	c.bytes += len(raw) + len(s)
}

// staticTable is RFC 7541's static table (Appendix A), index 1 first.
var staticTable = [...][2]string{
	{":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"},
	{":path", "/index.html"}, {":scheme", "http"}, {":scheme", "https"}, {":status", "200"},
	{":status", "204"}, {":status", "206"}, {":status", "304"}, {":status", "400"},
	{":status", "404"}, {":status", "500"}, {"accept-charset", ""}, {"accept-encoding", "gzip, deflate"},
	{"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""}, {"access-control-allow-origin", ""},
	{"age", ""}, {"allow", ""}, {"authorization", ""}, {"cache-control", ""},
	{"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
	{"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""},
	{"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""},
	{"from", ""}, {"host", ""}, {"if-match", ""}, {"if-modified-since", ""},
	{"if-none-match", ""}, {"if-range", ""}, {"if-unmodified-since", ""}, {"last-modified", ""},
	{"link", ""}, {"location", ""}, {"max-forwards", ""}, {"proxy-authenticate", ""},
	{"proxy-authorization", ""}, {"range", ""}, {"referer", ""}, {"refresh", ""},
	{"retry-after", ""}, {"server", ""}, {"set-cookie", ""}, {"strict-transport-security", ""},
	{"transfer-encoding", ""}, {"user-agent", ""}, {"vary", ""}, {"via", ""},
	{"www-authenticate", ""},
}
