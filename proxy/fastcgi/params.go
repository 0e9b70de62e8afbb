package fastcgi

import "strconv"

// Params writes a request's FCGI_PARAMS stream straight into the
// request's output buffer. A pair never spans two records: php-fpm
// decodes each record's pairs on their own, so a pair cut in two would be
// lost or misread. As in Caddy, a pair too long for one record has its
// value cut to fit.
type Params struct {
	buf []byte
	rec int // offset of the open record's header in buf
	id  uint16
}

// Begin starts the stream of request id at the end of dst.
func (p *Params) Begin(dst []byte, id uint16) {
	p.buf, p.id = dst, id
	p.open()
}

func (p *Params) open() {
	p.rec = len(p.buf)
	p.buf = append(p.buf, zeros[:headerLen]...)
}

// close fills in the open record's header and pads it.
func (p *Params) close() {
	n := len(p.buf) - p.rec - headerLen
	appendHeader(p.buf[p.rec:p.rec], TypeParams, p.id, n)
	p.buf = append(p.buf, zeros[:-n&7]...)
}

// Add appends one pair.
func (p *Params) Add(name, value string) {
	if 8+len(name)+len(value) > maxContent {
		value = value[:max(0, maxContent-8-len(name))]
	}
	p.fit(pairLen(len(name), len(value)))
	p.buf = AppendPair(p.buf, name, value)
}

// AddInt appends one pair whose value is n in decimal, written straight
// into the stream rather than made a string first.
func (p *Params) AddInt(name string, n int64) {
	var digits [20]byte
	v := strconv.AppendInt(digits[:0], n, 10)
	p.fit(pairLen(len(name), len(v)))
	p.buf = appendLength(p.buf, len(name))
	p.buf = appendLength(p.buf, len(v))
	p.buf = append(append(p.buf, name...), v...)
}

// fit starts a new record when a pair of size bytes does not fit the
// open one.
func (p *Params) fit(size int) {
	if len(p.buf)-p.rec-headerLen+size > maxContent {
		p.close()
		p.open()
	}
}

// Finish closes the stream (the open record, then the empty one) and
// returns the buffer.
func (p *Params) Finish() []byte {
	if len(p.buf)-p.rec == headerLen {
		p.buf = p.buf[:p.rec] // no pair in the open record
	} else {
		p.close()
	}
	p.buf = AppendEnd(p.buf, TypeParams, p.id)
	b := p.buf
	p.buf = nil
	return b
}

func pairLen(name, value int) int {
	n := name + value + 2
	if name >= 128 {
		n += 3
	}
	if value >= 128 {
		n += 3
	}
	return n
}
