package main

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
)

// pattern is the body a request with a given id carries or gets back: n
// bytes of an xorshift stream seeded by the id, so that the origin can
// write it and the client check it without either holding a copy.
type pattern struct {
	state uint64
	left  int64
	buf   [8]byte
	off   int // bytes of buf not yet handed out start here
}

func newPattern(id uint64, n int64) *pattern {
	return &pattern{state: id*0x9E3779B97F4A7C15 | 1, left: n, off: 8}
}

// Read hands out the stream until n bytes have gone.
func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n := 0
	for n < len(b) {
		if p.off == 8 {
			p.state ^= p.state << 13
			p.state ^= p.state >> 7
			p.state ^= p.state << 17
			binary.LittleEndian.PutUint64(p.buf[:], p.state)
			p.off = 0
		}
		c := copy(b[n:], p.buf[p.off:])
		p.off += c
		n += c
	}
	p.left -= int64(n)
	return n, nil
}

// patternSum is the SHA-256 of the pattern for id and n.
func patternSum(id uint64, n int64) [sha256.Size]byte {
	h := sha256.New()
	io.CopyBuffer(h, newPattern(id, n), make([]byte, 32<<10))
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}
