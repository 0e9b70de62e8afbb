package h2

import (
	"errors"

	"golang.org/x/net/http2"
)

// DATA frames are read by hand rather than by the Framer, which copies
// every payload into its own buffer first: the header (and the pad length)
// is parsed and checked when it arrives, the body goes to the stream
// straight from the bytes Feed was given, in as many pieces as the frame
// arrived in (across TLS records and Feed calls), and the padding is
// skipped. Every other frame type still goes through the Framer.
//
// While a frame's body is delivered, the window updates it earns (the
// handler consumes as it goes) are held and decided when the frame ends,
// so that a frame split across reads earns the same WINDOW_UPDATEs as one
// that arrived whole: one per window at most, for the whole frame. The
// sender charged the whole frame to its windows before sending it, so
// holding back credit until the rest arrives cannot stall it.

// dataRead is the DATA frame being read: its header is processed, body
// and padding bytes are still to come.
type dataRead struct {
	active bool
	id     uint32
	end    bool // END_STREAM: the stream's end follows the last byte
	skip   bool // the frame is dropped, its window already given back
	body   int  // body bytes still to come
	pad    int  // padding bytes still to come, after the body
}

// errSkipData is processData's answer for a frame to drop without error.
var errSkipData = errors.New("h2: DATA dropped")

// dataPrefixLen is how many bytes of a DATA frame (header h) must be seen
// before startData: the header, and the pad length when the frame is padded.
func dataPrefixLen(h []byte) int {
	if http2.Flags(h[4]).Has(http2.FlagDataPadded) && frameLen(h) > 0 {
		return frameHeaderLen + 1
	}
	return frameHeaderLen
}

// startData processes the prefix b of a DATA frame (dataPrefixLen bytes):
// the checks the Framer would make, then processData's. Afterwards the rest
// of the frame goes to dataPayload, also after an error that did not end
// the connection.
func (c *ServerConn) startData(b []byte) {
	flags := http2.Flags(b[4])
	id := streamID(b)
	n := uint32(frameLen(b))
	if !c.frameAllowed(http2.FrameData, flags, id) {
		return
	}
	d := dataRead{active: true, id: id, end: flags.Has(http2.FlagDataEndStream), body: int(n)}
	var err error
	switch {
	case id == 0:
		err = connErr{http2.ErrCodeProtocol, "DATA frame with stream ID 0"}
	case flags.Has(http2.FlagDataPadded) && n == 0:
		err = connErr{http2.ErrCodeFrameSize, "frame too short: no pad length"}
	case flags.Has(http2.FlagDataPadded):
		d.pad = int(b[frameHeaderLen])
		d.body = int(n) - 1 - d.pad
		if d.body < 0 {
			err = connErr{http2.ErrCodeProtocol, "pad size larger than data payload"}
		}
	}
	if err == nil {
		err = c.processData(id, n, d.body, d.end)
	}
	if err != nil {
		d.skip = true
		if err != errSkipData {
			c.handleError(err)
			if c.dead {
				return
			}
		}
	}
	c.data = d
	if d.body == 0 && d.pad == 0 {
		c.endData()
	}
}

// dataPayload takes the bytes of the current DATA frame's body and padding
// from the front of p and returns the rest.
func (c *ServerConn) dataPayload(p []byte) []byte {
	d := &c.data
	if k := min(len(p), d.body); k > 0 {
		d.body -= k
		if !d.skip {
			if s := c.streams[d.id]; s != nil {
				c.dataBody(s, p[:k])
			} else {
				// The stream closed after the frame began (the
				// handler reset it): the rest is nobody's.
				c.creditConn(k)
			}
		}
		p = p[k:]
	}
	if d.body == 0 {
		k := min(len(p), d.pad)
		d.pad -= k
		p = p[k:]
		if d.pad == 0 {
			c.endData()
		}
	}
	return p
}

// endData finishes the current DATA frame: the window updates its body
// earned are decided, and its END_STREAM ends the stream.
func (c *ServerConn) endData() {
	d := c.data
	c.data = dataRead{}
	if c.dead {
		return
	}
	s := c.streams[d.id]
	if s != nil && !s.remoteEnded {
		if inc := s.inflow.release(); inc > 0 {
			c.framer().WriteWindowUpdate(s.id, uint32(inc))
		}
	}
	if inc := c.inflow.release(); inc > 0 {
		c.framer().WriteWindowUpdate(0, uint32(inc))
	}
	if s != nil && d.end && !d.skip {
		c.remoteEnd(s, nil)
	}
}
