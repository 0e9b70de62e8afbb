package h2

import (
	"hash/maphash"

	"golang.org/x/net/http2/hpack"
)

// fieldEncoder is the HPACK encoder (RFC 7541) of request heads to
// origins. x/net's hpack.Encoder looks every field up in two maps and adds
// every literal to its dynamic table: a proxy's requests differ in their
// :path, so each request added one, and once the table was full evicted
// one (two map deletes and a copy of the whole table); with the lookups
// that was a twelfth of pollproxy's CPU at h2 -c 6 -m 100 to an nginx h2c
// origin. Here a field repeated from the same place in the last request
// is found without hashing (most of a proxy's request head is the same
// request after request), and a literal is added to the table only the
// second time it is seen (seen): a value that comes back, a gRPC method's
// path, an Authority, a user agent, is indexed from then on, while ever
// new paths and request IDs go out literally and leave the table alone.
type fieldEncoder struct {
	out []byte

	// The dynamic table as the origin's decoder keeps it: the entries in
	// order of insertion, each with its insertion number; index 62 is the
	// newest (§2.3.3).
	ring    []encEntry
	head, n int
	size    uint32
	max     uint32            // the table size in use
	limit   uint32            // the origin's SETTINGS_HEADER_TABLE_SIZE (capped)
	byField map[encKey]uint64 // an entry's latest insertion number
	added   uint64            // insertions so far
	evicted uint64            // insertions evicted so far: seq < evicted is gone
	// resize is the size update owed at the start of the next block
	// (§4.2): the smallest size the table went through, then max.
	resize    bool
	resizeMin uint32

	prev []prevField // the last block's fields, by position
	pos  int         // this block's next position

	seen [seenSlots]uint64 // hashes of literals seen once
	seed maphash.Seed
}

type encKey struct{ name, value string }

type encEntry struct {
	encKey
	seq uint64
}

type prevField struct {
	encKey
	seq uint64 // its table entry, or noEntry
}

const (
	noEntry   = ^uint64(0)
	seenSlots = 64
	// literals longer than this are never indexed: a table of 4 KiB
	// would hold few of them
	maxIndexed = 512
)

func newFieldEncoder(maxTable uint32) *fieldEncoder {
	return &fieldEncoder{max: maxTable, limit: maxTable, byField: make(map[encKey]uint64), seed: maphash.MakeSeed()}
}

// setLimit applies the origin's SETTINGS_HEADER_TABLE_SIZE, capped at
// the size the encoder starts with: a smaller one shrinks the table, with
// a size update at the start of the next block.
func (e *fieldEncoder) setLimit(v uint32) {
	e.limit = min(v, headerTableSize)
	if e.max > e.limit {
		if !e.resize || e.limit < e.resizeMin {
			e.resizeMin = e.limit
		}
		e.resize = true
		e.max = e.limit
		e.evictTo(e.max)
	}
}

// begin starts a header block in out (reused).
func (e *fieldEncoder) begin() {
	e.out = e.out[:0]
	e.pos = 0
	if e.resize {
		e.resize = false
		if e.resizeMin < e.max {
			e.out = appendVarInt(e.out, 0x20, 5, uint64(e.resizeMin))
		}
		e.out = appendVarInt(e.out, 0x20, 5, uint64(e.max))
	}
}

// field encodes one field. A sensitive one goes out never indexed (§6.2.3).
func (e *fieldEncoder) field(name, value string, sensitive bool) {
	k := encKey{name, value}
	pos := e.pos
	e.pos++
	if pos == len(e.prev) {
		e.prev = append(e.prev, prevField{seq: noEntry})
	}
	p := &e.prev[pos]
	// the same field as the last block's at this place: indexed if still
	// in the table, and indexed from now on if not
	samePlace := p.name == name && p.value == value
	if samePlace && p.seq != noEntry && p.seq >= e.evicted {
		e.out = appendVarInt(e.out, 0x80, 7, e.index(p.seq))
		return
	}
	p.encKey, p.seq = k, noEntry
	nameIdx := staticNames[name]
	if i := staticExact(nameIdx, value); i > 0 {
		e.out = appendVarInt(e.out, 0x80, 7, uint64(i))
		return
	}
	if !sensitive {
		if seq, ok := e.byField[k]; ok && seq >= e.evicted {
			p.seq = seq
			e.out = appendVarInt(e.out, 0x80, 7, e.index(seq))
			return
		}
	}
	switch {
	case sensitive:
		e.out = appendVarInt(e.out, 0x10, 4, uint64(nameIdx))
	case e.indexNow(k, samePlace):
		e.out = appendVarInt(e.out, 0x40, 6, uint64(nameIdx))
		p.seq = e.add(k)
	default:
		e.out = appendVarInt(e.out, 0x00, 4, uint64(nameIdx))
	}
	if nameIdx == 0 {
		e.out = appendString(e.out, name)
	}
	e.out = appendString(e.out, value)
}

// indexNow reports whether a literal goes into the table: the second time
// it is seen, if it fits. A field at the same place as in the last head
// was seen there; one elsewhere is looked for in seen, a slot of which
// holds its hash from the first time (two fields that share a slot may
// keep each other out of the table: they then go out as literals).
func (e *fieldEncoder) indexNow(k encKey, samePlace bool) bool {
	sz := entrySize(k.name, k.value)
	if sz > e.max || len(k.value) > maxIndexed {
		return false
	}
	if samePlace {
		return true
	}
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(k.name)
	h.WriteByte(0)
	h.WriteString(k.value)
	v := h.Sum64() | 1 // never 0, the empty slot
	slot := &e.seen[v%seenSlots]
	if *slot == v {
		*slot = 0
		return true
	}
	*slot = v
	return false
}

// index is the table index of the entry inserted as seq.
func (e *fieldEncoder) index(seq uint64) uint64 {
	return uint64(len(staticTable)) + e.added - seq
}

// add inserts an entry (it fits: indexNow checked) and returns its
// insertion number.
func (e *fieldEncoder) add(k encKey) uint64 {
	sz := entrySize(k.name, k.value)
	e.evictTo(e.max - sz)
	if e.n == len(e.ring) {
		ring := make([]encEntry, max(16, 2*len(e.ring)))
		for i := range e.n {
			ring[i] = e.ring[(e.head+i)%len(e.ring)]
		}
		e.ring, e.head = ring, 0
	}
	seq := e.added
	e.added++
	e.ring[(e.head+e.n)%len(e.ring)] = encEntry{k, seq}
	e.n++
	e.size += sz
	e.byField[k] = seq
	return seq
}

func (e *fieldEncoder) evictTo(limit uint32) {
	for e.size > limit && e.n > 0 {
		old := &e.ring[e.head]
		e.size -= entrySize(old.name, old.value)
		if e.byField[old.encKey] == old.seq {
			delete(e.byField, old.encKey)
		}
		e.evicted = old.seq + 1
		*old = encEntry{}
		e.head = (e.head + 1) % len(e.ring)
		e.n--
	}
}

// appendVarInt appends an integer with an n-bit prefix (§5.1), the bits
// above the prefix in first.
func appendVarInt(b []byte, first byte, n byte, i uint64) []byte {
	k := uint64(1)<<n - 1
	if i < k {
		return append(b, first|byte(i))
	}
	b = append(b, first|byte(k))
	i -= k
	for ; i >= 128; i >>= 7 {
		b = append(b, byte(0x80|i&0x7f))
	}
	return append(b, byte(i))
}

// appendString appends a string literal (§5.2), Huffman-coded when that
// is shorter.
func appendString(b []byte, s string) []byte {
	if l := hpack.HuffmanEncodeLength(s); l < uint64(len(s)) {
		b = appendVarInt(b, 0x80, 7, l)
		return hpack.AppendHuffmanString(b, s)
	}
	b = appendVarInt(b, 0, 7, uint64(len(s)))
	return append(b, s...)
}

// staticExact is the static table's index of a field with value whose
// name is first at static index i (staticNames), 0 if none.
func staticExact(i int, value string) int {
	if i == 0 {
		return 0
	}
	for name := staticTable[i-1][0]; i <= len(staticTable) && staticTable[i-1][0] == name; i++ {
		if staticTable[i-1][1] == value {
			return i
		}
	}
	return 0
}

// staticNames is the static table's first index for each name.
var staticNames = func() map[string]int {
	m := make(map[string]int, len(staticTable))
	for i := len(staticTable) - 1; i >= 0; i-- {
		m[staticTable[i][0]] = i + 1
	}
	return m
}()
