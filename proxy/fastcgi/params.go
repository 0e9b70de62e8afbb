package fastcgi

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
	size := pairLen(name, value)
	if len(p.buf)-p.rec-headerLen+size > maxContent {
		p.close()
		p.open()
	}
	p.buf = AppendPair(p.buf, name, value)
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

func pairLen(name, value string) int {
	n := len(name) + len(value) + 2
	if len(name) >= 128 {
		n += 3
	}
	if len(value) >= 128 {
		n += 3
	}
	return n
}
