package h2

import (
	"strings"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// h2Stream is one request; it is the handler's stream.ResponseWriter.
//
// States (RFC 9113 §5.1): open while neither side ended; half-closed
// (remote) once remoteEnded; half-closed (local) once localEnded; closed
// (removed from ServerConn.streams) when both ended or either side reset.
type h2Stream struct {
	c      *ServerConn
	id     uint32
	events stream.Events
	// releaser: the closed stream's handler, told it is released at the
	// next flush (recycle).
	releaser stream.Releaser
	req      stream.Request
	hdrArr   [12]stream.Field // backs req.Header for most requests

	inflow     inflow // receive window
	unconsumed int    // delivered by OnBody, not yet Consumed
	declared   int64  // content-length, or -1
	recv       int64  // body bytes received

	outWin int64  // send window (may go negative after SETTINGS)
	buf    []byte // queued body bytes are buf[off:]
	off    int

	remoteEnded  bool
	localEnded   bool // END_STREAM written
	closed       bool
	headersDone  bool // final head written
	endQueued    bool // Close called: END_STREAM once buf drains
	trailers     []stream.Field
	queued       bool // in ServerConn.wq
	wantWritable bool // a Write was refused: OnWritable is owed
	// tunnel: an extended CONNECT (RFC 8441). Our END_STREAM ends our
	// direction only: the client's DATA still flows to the handler.
	tunnel bool
	// noContent: the answer has no content (to a HEAD, a 204 or a 304,
	// RFC 9113 §8.1.1): Write drops body bytes, as HTTP/1.1's does.
	noContent bool
}

var _ stream.ResponseWriter = (*h2Stream)(nil)

// newStream returns a fresh stream: one from the free list (recycle) when
// there is one, cleared, else a new allocation.
func (c *ServerConn) newStream(id uint32) *h2Stream {
	var s *h2Stream
	if n := len(c.freeStreams); n > 0 {
		s = c.freeStreams[n-1]
		c.freeStreams[n-1] = nil
		c.freeStreams = c.freeStreams[:n-1]
		*s = h2Stream{}
	} else {
		s = new(h2Stream)
	}
	s.c, s.id, s.declared = c, id, -1
	s.req.Header = s.hdrArr[:0]
	return s
}

// release queues a closed stream whose handler is a stream.Releaser: the
// handler hears OnRelease from the next flush (an entry point, so the
// re-entrancy rule holds even when a ResponseWriter call closed the
// stream), and the struct can then serve a later stream (recycle).
func (c *ServerConn) release(s *h2Stream, r stream.Releaser) {
	if c.dead {
		return // the connection's end: left to the collector
	}
	s.releaser = r
	c.spent = append(c.spent, s)
}

// The free list of stream structs (each about 700 bytes) is bounded by
// Config.MaxConcurrentStreams. That costs no memory beyond what the
// connection already held: a struct gets there only after serving a
// stream, and newStream takes from it first, so live and free structs
// together never outnumber the connection's peak of open streams. It keeps
// that peak until the connection goes idle (ReleaseIdle empties the list),
// and a client that keeps many requests in flight (h2load -m 100)
// allocates no stream struct once it reached its peak.

// recycle tells the handlers of the streams closed since the last flush
// that they are released, and moves the streams that nothing on the
// connection refers to any more to the free list. flush calls it when it
// is done: the writable list is empty then, and a stream still on the
// write queue (closed mid-response, its entry not yet popped) or still the
// header block's (trailers split across frames) waits for a later flush.
// A tunnel's struct is never reused: its handler may end its side later.
// The handler promised not to use a released stream (stream.Releaser), and
// until newStream hands it out again it stays closed, so a stray call
// returns ErrStreamClosed.
func (c *ServerConn) recycle() {
	keep := c.spent[:0]
	for _, s := range c.spent {
		if r := s.releaser; r != nil {
			s.releaser = nil
			r.OnRelease()
		}
		switch {
		case c.dead || s.tunnel:
		case s.queued || c.hdr.s == s:
			keep = append(keep, s)
		case len(c.freeStreams) < int(c.cfg.MaxConcurrentStreams):
			c.freeStreams = append(c.freeStreams, s)
		}
	}
	clear(c.spent[len(keep):])
	c.spent = keep
}

func (s *h2Stream) pending() int { return len(s.buf) - s.off }

// credit returns n received bytes to both windows at once (padding, or body
// bytes nobody will consume).
func (s *h2Stream) credit(n int) {
	c := s.c
	if !s.remoteEnded {
		if c.data.active && c.data.id == s.id {
			s.inflow.hold(n) // decided at the frame's end: see dataRead
		} else if inc := s.inflow.add(n); inc > 0 {
			c.framer().WriteWindowUpdate(s.id, uint32(inc))
		}
	}
	c.creditConn(n)
}

// CloseConnection implements stream.ConnCloser: the connection shuts
// down gracefully (GOAWAY), this stream and the others open finishing.
func (s *h2Stream) CloseConnection() { s.c.Shutdown() }

// WriteHeader implements stream.ResponseWriter.
func (s *h2Stream) WriteHeader(status int, fields []stream.Field, endStream bool) error {
	c := s.c
	if c.dead {
		return ErrConnClosed
	}
	if s.closed {
		return stream.ErrStreamClosed
	}
	if s.headersDone || s.endQueued {
		return stream.ErrHeadWritten
	}
	informational := status < 200
	if status < 100 || status > 599 || status == 101 || informational && endStream {
		return stream.ErrBadStatus
	}
	if endStream && !informational && !s.noContent && status != 204 && status != 304 && announcesContent(fields) {
		// A length with no DATA to follow is a malformed response (RFC
		// 9113 §8.1.1): refused, as the HTTP/1.1 writer refuses it.
		return ErrBodyLength
	}
	c.writeBlock(s.id, c.encodeHead(status, fields), endStream)
	if !informational {
		s.headersDone = true
		s.noContent = s.noContent || status == 204 || status == 304
	}
	if endStream {
		s.endQueued = true
		c.localEnd(s)
	}
	c.later()
	return nil
}

// Write implements stream.ResponseWriter: it frames what the windows and the
// output budget allow, queues up to Config.StreamSendBuffer more, and
// reports how much it took. It never calls the handler back: a refused
// writer hears OnWritable from a later flush.
func (s *h2Stream) Write(p []byte) (int, error) {
	c := s.c
	if c.dead {
		return 0, ErrConnClosed
	}
	if s.closed {
		return 0, stream.ErrStreamClosed
	}
	if !s.headersDone || s.endQueued {
		return 0, stream.ErrNoHead
	}
	if s.noContent {
		return len(p), nil // an answer that has no content: nothing to send
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	if s.pending() == 0 && c.wqHead == len(c.wq) {
		n = c.sendDirect(s, p)
	}
	if rest := p[n:]; len(rest) > 0 {
		k := min(c.cfg.StreamSendBuffer-s.pending(), len(rest))
		if k > 0 {
			s.queue(rest[:k])
			n += k
			c.enqueue(s)
		}
		if n < len(p) {
			s.wantWritable = true
		}
	}
	if n > 0 {
		c.later()
	}
	return n, nil
}

// queue appends body bytes to the stream's send buffer.
func (s *h2Stream) queue(p []byte) {
	if s.buf == nil {
		s.buf = s.c.getBuf()
	}
	if s.off > 0 && len(s.buf)+len(p) > cap(s.buf) {
		n := copy(s.buf, s.buf[s.off:])
		s.buf = s.buf[:n]
		s.off = 0
	}
	s.buf = append(s.buf, p...)
}

// Close implements stream.ResponseWriter.
func (s *h2Stream) Close(trailers []stream.Field) error {
	c := s.c
	if c.dead {
		return ErrConnClosed
	}
	if s.closed {
		return stream.ErrStreamClosed
	}
	if !s.headersDone {
		return stream.ErrNoHead
	}
	if s.endQueued {
		return stream.ErrStreamClosed
	}
	s.endQueued = true
	if len(trailers) > 0 {
		s.trailers = append([]stream.Field(nil), trailers...)
	}
	if s.pending() == 0 {
		c.finishStream(s)
	} else {
		c.enqueue(s)
	}
	c.later()
	return nil
}

// Reset implements stream.ResponseWriter.
func (s *h2Stream) Reset(code uint32) {
	c := s.c
	if c.dead || s.closed {
		return
	}
	c.framer().WriteRSTStream(s.id, http2.ErrCode(code))
	c.closeStream(s, closedByUs, nil)
	c.later()
}

// Consumed implements stream.ResponseWriter: the windows reopen as the
// handler consumes, with small updates batched (see inflow.add).
func (s *h2Stream) Consumed(n int) {
	c := s.c
	if c.dead || s.closed || n <= 0 {
		return
	}
	n = min(n, s.unconsumed)
	s.unconsumed -= n
	before := len(c.out.b)
	s.credit(n)
	if len(c.out.b) != before {
		c.later() // a WINDOW_UPDATE to send
	}
}

// finishStream writes the end of a response whose body is all sent.
func (c *ServerConn) finishStream(s *h2Stream) {
	if len(s.trailers) > 0 {
		c.writeBlock(s.id, c.encodeHead(0, s.trailers), true)
		s.trailers = nil
	} else {
		c.writeData(s.id, true, nil)
	}
	c.localEnd(s)
}

// localEnd handles our END_STREAM: the stream closes if the client is done
// too; otherwise RFC 9113 §8.1 lets us stop its upload with
// RST_STREAM(NO_ERROR).
func (c *ServerConn) localEnd(s *h2Stream) {
	s.localEnded = true
	if s.remoteEnded {
		c.closeStream(s, closedDone, nil)
		return
	}
	if s.tunnel && s.headersDone {
		return // half-closed (local): the client's direction goes on
	}
	c.framer().WriteRSTStream(s.id, http2.ErrCodeNo)
	c.closeStream(s, closedByUs, nil)
}

// closeStream forgets a stream; a non-nil err goes to the handler's OnAbort.
func (c *ServerConn) closeStream(s *h2Stream, how uint8, err error) {
	if s.closed {
		return
	}
	s.closed = true
	delete(c.streams, s.id)
	c.recordClosed(s.id, how)
	if s.unconsumed > 0 {
		c.creditConn(s.unconsumed)
		s.unconsumed = 0
	}
	if s.buf != nil {
		c.putBuf(s.buf)
		s.buf, s.off = nil, 0
	}
	if len(c.streams) == 0 && c.idleTimer != nil {
		c.idleSince = c.clock.Now()
		c.holdIdle()
	}
	if err != nil && s.events != nil && (!s.localEnded || s.tunnel && !s.remoteEnded) {
		s.events.OnAbort(err)
	}
	if r, ok := s.events.(stream.Releaser); ok {
		s.events = nil
		c.release(s, r)
	}
	if c.shutdown {
		c.maybeFinishShutdown()
	}
}

// enqueue puts a stream with something to send on the round-robin queue.
func (c *ServerConn) enqueue(s *h2Stream) {
	if s.queued || s.closed || s.localEnded {
		return
	}
	if s.pending() == 0 && !s.endQueued {
		return
	}
	if s.pending() > 0 && s.outWin <= 0 {
		return // the stream's WINDOW_UPDATE will queue it
	}
	s.queued = true
	c.wq = append(c.wq, s)
}

// writeQueued is the write scheduler: one DATA frame per turn for each
// queued stream, round-robin, within the stream window, the connection
// window, the client's frame size and the transport's high-water mark.
func (c *ServerConn) writeQueued() {
	for c.wqHead < len(c.wq) {
		s := c.wq[c.wqHead]
		if s.closed || s.localEnded {
			c.popQueue()
			continue
		}
		pend := s.pending()
		if pend == 0 {
			c.popQueue()
			if s.endQueued {
				c.finishStream(s)
			}
			continue
		}
		if s.outWin <= 0 {
			c.popQueue()
			continue
		}
		if c.outWin <= 0 {
			break
		}
		budget := c.cfg.HighWater - c.t.Buffered() - len(c.out.b)
		if budget <= 0 {
			break
		}
		k := int64(min(pend, c.maxData()))
		k = min(k, s.outWin, c.outWin)
		last := int(k) == pend && s.endQueued && len(s.trailers) == 0
		c.writeData(s.id, last, s.buf[s.off:s.off+int(k)])
		s.off += int(k)
		s.outWin -= k
		c.outWin -= k
		if s.off == len(s.buf) {
			s.buf, s.off = s.buf[:0], 0
		}
		c.popQueue()
		if last {
			c.localEnd(s)
			continue
		}
		if s.wantWritable && s.pending() <= c.cfg.StreamSendBuffer/2 {
			s.wantWritable = false
			c.writable = append(c.writable, s)
		}
		c.enqueue(s) // to the tail: round-robin
	}
	if c.wqHead == len(c.wq) {
		clear(c.wq)
		c.wq, c.wqHead = c.wq[:0], 0
	} else if c.wqHead > 64 && c.wqHead > len(c.wq)/2 {
		n := copy(c.wq, c.wq[c.wqHead:])
		clear(c.wq[n:])
		c.wq, c.wqHead = c.wq[:n], 0
	}
}

func (c *ServerConn) popQueue() {
	c.wq[c.wqHead].queued = false
	c.wq[c.wqHead] = nil
	c.wqHead++
}

func (c *ServerConn) maxData() int { return min(int(c.peerMaxFrame), maxDataFrame) }

// sendDirect frames body bytes straight into the output when nothing is
// queued ahead of them, saving the copy through the stream buffer.
func (c *ServerConn) sendDirect(s *h2Stream, p []byte) int {
	sent := 0
	for len(p) > 0 {
		budget := c.cfg.HighWater - c.t.Buffered() - len(c.out.b)
		k := min(int64(len(p)), int64(c.maxData()), s.outWin, c.outWin)
		if k <= 0 || budget <= 0 {
			break
		}
		c.writeData(s.id, false, p[:k])
		s.outWin -= k
		c.outWin -= k
		p = p[k:]
		sent += int(k)
	}
	return sent
}

// writeData appends a DATA frame. It bypasses the Framer to save a copy of
// the payload through the Framer's own buffer.
func (c *ServerConn) writeData(id uint32, end bool, p []byte) {
	var flags http2.Flags
	if end {
		flags = http2.FlagDataEndStream
	}
	c.out.b = appendFrameHeader(c.out.b, len(p), http2.FrameData, flags, id)
	c.out.b = append(c.out.b, p...)
}

func (c *ServerConn) getBuf() []byte {
	if n := len(c.bufFree); n > 0 {
		b := c.bufFree[n-1]
		c.bufFree[n-1] = nil
		c.bufFree = c.bufFree[:n-1]
		return b
	}
	return make([]byte, 0, min(c.cfg.StreamSendBuffer, 16<<10))
}

func (c *ServerConn) putBuf(b []byte) {
	if len(c.bufFree) < 4 && cap(b) <= 2*c.cfg.StreamSendBuffer {
		c.bufFree = append(c.bufFree, b[:0])
	}
}

// CarriesTunnel implements stream.TunnelCarrier: an extended CONNECT
// stream is open. It walks the streams, which only a firing write timeout
// asks.
func (c *ServerConn) CarriesTunnel() bool {
	for _, s := range c.streams {
		if s.tunnel {
			return true
		}
	}
	return false
}

// announcesContent reports whether fields give a content-length other
// than 0.
func announcesContent(fields []stream.Field) bool {
	for _, f := range fields {
		if f.Name == "content-length" && strings.TrimLeft(f.Value, "0") != "" {
			return true
		}
	}
	return false
}
