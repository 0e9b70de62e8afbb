package fastcgi

import (
	"encoding/binary"
	"errors"
)

// ErrVersion is a record whose header does not say FastCGI version 1:
// the bytes are not FastCGI, or the stream lost its place.
var ErrVersion = errors.New("fastcgi: record of an unknown version")

// Decoder cuts the records an application sends for one request apart as
// they arrive, in place, without copying them anywhere else: Decode moves
// the FCGI_STDOUT content of what was read to the front of the same
// buffer, so that the response parser reads it as if the application had
// written plain bytes. A record may be split anywhere across reads; the
// decoder keeps the few bytes of a header or of FCGI_END_REQUEST's body
// it has seen. Reset readies it for the next request.
type Decoder struct {
	id   uint16
	hdr  [headerLen]byte
	have int   // header bytes seen
	typ  uint8 // the current record's type, once its header is whole
	rid  uint16
	left int // content bytes of the current record still to come
	pad  int // padding bytes still to come

	end     [8]byte // FCGI_END_REQUEST's body
	endHave int

	// Ended is set once the request's FCGI_END_REQUEST arrived whole,
	// with its statuses.
	Ended          bool
	AppStatus      uint32
	ProtocolStatus uint8
}

// Reset readies the decoder for the records of request id.
func (d *Decoder) Reset(id uint16) { *d = Decoder{id: id} }

// Decode reads b, which holds the bytes just read. The request's stdout
// content is moved to b[:stdout]; its stderr content is appended to
// *stderr up to maxStderr bytes in all (the rest is dropped). consumed
// is how many bytes of b were records of this request: it falls short of
// len(b) only when the request ended (Ended) and bytes followed, which no
// request asked for. Records of other requests (management records, id
// 0) are skipped.
func (d *Decoder) Decode(b []byte, stderr *[]byte, maxStderr int) (stdout, consumed int, err error) {
	i := 0
	for i < len(b) && !d.Ended {
		switch {
		case d.have < headerLen:
			n := copy(d.hdr[d.have:], b[i:])
			d.have += n
			i += n
			if d.have < headerLen {
				break
			}
			if d.hdr[0] != version {
				return stdout, i, ErrVersion
			}
			d.typ = d.hdr[1]
			d.rid = binary.BigEndian.Uint16(d.hdr[2:4])
			d.left = int(binary.BigEndian.Uint16(d.hdr[4:6]))
			d.pad = int(d.hdr[6])
			d.endHave = 0
			d.finishRecord()
		case d.left > 0:
			n := min(d.left, len(b)-i)
			part := b[i : i+n]
			if d.rid == d.id {
				switch d.typ {
				case TypeStdout:
					stdout += copy(b[stdout:], part)
				case TypeStderr:
					if room := maxStderr - len(*stderr); room > 0 {
						*stderr = append(*stderr, part[:min(room, n)]...)
					}
				case TypeEndRequest:
					d.endHave += copy(d.end[d.endHave:], part)
				}
			}
			d.left -= n
			i += n
			d.finishRecord()
		default: // padding
			n := min(d.pad, len(b)-i)
			d.pad -= n
			i += n
			d.finishRecord()
		}
	}
	return stdout, i, nil
}

// finishRecord moves on to the next header once the current record's
// content and padding are all seen, and notes the request's end.
func (d *Decoder) finishRecord() {
	if d.have < headerLen || d.left > 0 || d.pad > 0 {
		return
	}
	d.have = 0
	if d.typ == TypeEndRequest && d.rid == d.id {
		d.Ended = true
		if d.endHave >= 5 {
			d.AppStatus = binary.BigEndian.Uint32(d.end[:4])
			d.ProtocolStatus = d.end[4]
		}
	}
}
