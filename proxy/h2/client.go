package h2

// The client side of HTTP/2: one connection to an origin, on the loop
// that owns it, written as the server side is. The owner (the proxy's
// origin connection) feeds it what it read from the socket (Feed) and
// writes what it produced (Output, Wrote); each stream's events go to its
// StreamEvents, called only from Feed and from Flush, never from inside a
// ClientStream call. It shares the server's pieces: the Framer over
// exactly one buffered frame (frameReader), the output buffer, the HPACK
// codec, the receive windows (inflow) and hand-framed header blocks.

import (
	"slices"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// ClientConfig bounds a client connection. Zero values take defaults.
type ClientConfig struct {
	// StreamWindow is the receive window of each stream: the most
	// response body the origin may send that nobody took yet, so the
	// most a stalled stream holds. Default 1 MiB.
	StreamWindow uint32
	// ConnWindow is the connection's receive window. Bytes are returned
	// to it as they arrive (a stream's own window bounds what it holds),
	// so it only needs to cover the streams' windows in flight.
	// Default 16 MiB.
	ConnWindow uint32
	// MaxHeaderListSize bounds a decoded response head or trailers.
	// Default 1 MiB.
	MaxHeaderListSize uint32
	// Free is where finished streams' structs wait for later streams,
	// shared by the connections of one loop. nil: the connection keeps
	// its own.
	Free *FreeStreams
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.StreamWindow == 0 {
		c.StreamWindow = 1 << 20
	}
	if c.ConnWindow == 0 {
		c.ConnWindow = 16 << 20
	}
	if c.MaxHeaderListSize == 0 {
		c.MaxHeaderListSize = 1 << 20
	}
	return c
}

// StreamEvents are what a client stream tells its owner. Calls come from
// ClientConn.Feed and ClientConn.Flush, never from inside a ClientStream
// method, and none follows OnEnd or OnReset.
type StreamEvents interface {
	// OnHead delivers a response head: informational (1xx, never ending
	// the stream) or final. With end the response has no body and the
	// stream is over (a trailers-only response). fields are valid only
	// during the call (the connection decodes every head into them); the
	// spare capacity behind them is the callee's to append to.
	OnHead(status int, fields []stream.Field, end bool)
	// OnData delivers response body bytes, valid only during the call.
	// They count against the stream's window until Consumed.
	OnData(p []byte)
	// OnEnd ends the response, with its trailers if any.
	OnEnd(trailers []stream.Field)
	// OnReset reports that the stream ended without a complete response:
	// the origin reset it (RST_STREAM with code), or the connection ended
	// (GOAWAY, a connection error: the code of that). unprocessed means
	// the origin did not act on the request (REFUSED_STREAM, a stream
	// above a GOAWAY's last one, or never sent), so it may be retried.
	OnReset(code http2.ErrCode, unprocessed bool)
	// OnSent reports n request body bytes framed for the origin: their
	// sender may send that many more.
	OnSent(n int)
}

// ClientConn is the client side of one HTTP/2 connection. Create it with
// NewClientConn.
type ClientConn struct {
	cfg ClientConfig

	fr  *http2.Framer
	rd  frameReader
	out outBuf
	in  []byte // an incomplete frame

	dec  *fieldDecoder
	enc  *fieldEncoder
	hdr  clientBlock
	fbuf []stream.Field // fields of the head being decoded
	tbuf []stream.Field

	streams map[uint32]*ClientStream
	nextID  uint32

	// The origin's settings.
	gotSettings       bool
	peerMaxStreams    uint32
	peerInitialWindow int64
	peerMaxFrame      uint32
	peerConnect       bool // SETTINGS_ENABLE_CONNECT_PROTOCOL: extended CONNECT allowed (RFC 8441)

	outWin  int64 // connection send window
	inflow  inflow
	wq      []*ClientStream // streams with body bytes or an END_STREAM to send
	wqSpare []*ClientStream // the last wq's array, for the next

	// Stream structs for reuse: spent holds closed streams their owners
	// let go of until recycle finds them referenced by nothing, then free
	// (cfg.Free, or the connection's own) keeps them for Open. depth
	// counts the Feed and Flush calls under way: recycle waits for the
	// outermost to end, as they hold streams while the owners' events run.
	spent []*ClientStream
	free  *FreeStreams

	goAway   bool  // the origin sent GOAWAY: no new streams
	dead     bool  // a connection error, or the owner closed it
	depth    uint8 // shallow: a Flush from an owner's event inside a Feed at most
	deadCode http2.ErrCode
}

// clientBlock is the response header block being decoded.
type clientBlock struct {
	active    bool
	id        uint32
	endStream bool
	s         *ClientStream // nil: decoded only to keep the HPACK state
	trailers  bool
	size      uint32
	tooBig    bool
	status    int
	bad       string
}

// NewClientConn starts a client connection: the preface, SETTINGS and the
// connection's WINDOW_UPDATE wait in Output for the socket.
func NewClientConn(cfg ClientConfig) *ClientConn {
	c := &ClientConn{
		cfg:               cfg.withDefaults(),
		streams:           make(map[uint32]*ClientStream),
		nextID:            1,
		peerMaxStreams:    1, // until the origin's SETTINGS say: one, so a burst does not overrun a small limit
		peerInitialWindow: initialWindow,
		peerMaxFrame:      ourMaxFrameSize,
		outWin:            initialWindow,
	}
	c.free = c.cfg.Free
	if c.free == nil {
		c.free = new(FreeStreams)
	}
	c.dec = newFieldDecoder(headerTableSize, c.onField)
	c.dec.SetMaxStringLength(int(c.cfg.MaxHeaderListSize))
	c.enc = newFieldEncoder(headerTableSize)
	c.fr = http2.NewFramer(&c.out, &c.rd)
	c.fr.SetMaxReadFrameSize(ourMaxFrameSize)
	c.fr.SetReuseFrames()
	c.out.b = append(c.out.b, clientPreface...)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.cfg.StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.cfg.MaxHeaderListSize},
	)
	c.inflow.init(initialWindow)
	if inc := c.cfg.ConnWindow - initialWindow; inc > 0 {
		c.fr.WriteWindowUpdate(0, inc)
		c.inflow.init(int32(c.cfg.ConnWindow))
	}
	return c
}

// Output is what waits for the socket; the owner writes it and reports
// how much with Wrote.
func (c *ClientConn) Output() []byte { return c.out.b }

// Wrote drops n written bytes from Output.
func (c *ClientConn) Wrote(n int) {
	if n >= len(c.out.b) {
		c.out.b = c.out.b[:0]
		return
	}
	k := copy(c.out.b, c.out.b[n:])
	c.out.b = c.out.b[:k]
}

// Settled reports whether the origin's SETTINGS arrived: until then the
// connection takes one stream.
func (c *ClientConn) Settled() bool { return c.gotSettings }

// ExtendedConnect reports whether the origin's SETTINGS allow RFC 8441's
// extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL).
func (c *ClientConn) ExtendedConnect() bool { return c.peerConnect }

// Free is how many more streams the connection may open now: none after
// a GOAWAY or an error, or once stream IDs run out.
func (c *ClientConn) Free() int {
	if c.goAway || c.dead || c.nextID > 1<<31-1 {
		return 0
	}
	return max(int(c.peerMaxStreams)-len(c.streams), 0)
}

// Active is how many streams are open.
func (c *ClientConn) Active() int { return len(c.streams) }

// Closing reports whether the connection takes no more streams for good:
// the origin's GOAWAY, a connection error, or no stream IDs left.
func (c *ClientConn) Closing() bool { return c.goAway || c.dead || c.nextID > 1<<31-1 }

// Dead reports whether the connection is finished: a connection error
// (its GOAWAY is in Output), or the origin's GOAWAY with no stream left.
func (c *ClientConn) Dead() bool { return c.dead || c.goAway && len(c.streams) == 0 }

// Request is a request head for the origin.
type Request struct {
	Method, Scheme, Authority, Path string
	// Protocol is RFC 8441's :protocol (an extended CONNECT), or empty.
	Protocol string
	// Header holds regular fields: lowercase names, nothing
	// connection-specific (te: trailers aside).
	Header []stream.Field
}

// Open starts a stream with req's head; with end the request has no body.
// ev gets the stream's events. Open is for a connection with Free() > 0.
//
// An extended CONNECT (req.Protocol set) may only go to an origin that
// allows it (RFC 8441 §4): before the origin's SETTINGS its head waits
// for them, and when they do not allow it the stream ends, unsent, with
// OnReset(REFUSED_STREAM, unprocessed), from Feed or Flush; the owner
// tells that case by ExtendedConnect.
func (c *ClientConn) Open(req *Request, end bool, ev StreamEvents) *ClientStream {
	s := c.free.get()
	s.c, s.id, s.ev, s.outWin = c, c.nextID, ev, c.peerInitialWindow
	c.nextID += 2
	s.inflow.init(int32(c.cfg.StreamWindow))
	c.streams[s.id] = s
	if end {
		s.localEnded = true
	}
	if req.Protocol != "" && !c.peerConnect {
		if c.gotSettings {
			s.refused = true
			c.enqueue(s)
			return s
		}
		// Only this stream can be open before SETTINGS (one stream
		// until then), so no later stream's head overtakes it.
		r := *req
		r.Header = append([]stream.Field(nil), req.Header...)
		s.waitHead, s.waitEnd = &r, end
		return s
	}
	c.writeHead(s.id, req, end)
	return s
}

// writeHead encodes and frames a request head.
func (c *ClientConn) writeHead(id uint32, req *Request, end bool) {
	e := c.enc
	e.begin()
	e.field(":method", req.Method, false)
	if req.Method != "CONNECT" || req.Protocol != "" {
		e.field(":scheme", req.Scheme, false)
		e.field(":path", req.Path, false)
	}
	e.field(":authority", req.Authority, false)
	if req.Protocol != "" {
		e.field(":protocol", req.Protocol, false)
	}
	for _, f := range req.Header {
		sensitive := f.Name == "authorization" || f.Name == "cookie" && len(f.Value) < 20
		e.field(f.Name, f.Value, sensitive)
	}
	c.writeBlock(id, e.out, end)
}

// sendWaitingHeads settles the extended CONNECT heads that waited for the
// origin's first SETTINGS: sent, or refused.
func (c *ClientConn) sendWaitingHeads() {
	for _, s := range c.streams {
		if s.waitHead == nil {
			continue
		}
		req, end := s.waitHead, s.waitEnd
		s.waitHead = nil
		if !c.peerConnect {
			s.refused = true
			c.enqueue(s)
			continue
		}
		c.writeHead(s.id, req, end)
		if s.pending() > 0 || s.endQueued {
			c.enqueue(s)
		}
	}
}

// writeBlock frames a header block as HEADERS and CONTINUATION.
func (c *ClientConn) writeBlock(id uint32, block []byte, end bool) {
	c.out.b = appendHeaderBlock(c.out.b, id, block, int(c.peerMaxFrame), end)
}

// Close ends the connection from our side: a GOAWAY(NO_ERROR) goes to
// Output, and every open stream is reset (OnReset with CANCEL, processed
// unless it never left).
func (c *ClientConn) Close() {
	if c.dead {
		return
	}
	c.fail(http2.ErrCodeNo, "")
}

// Feed processes bytes read from the origin (any split). Stream events
// are delivered from inside it. Frames it answers (SETTINGS and PING
// acknowledgements, WINDOW_UPDATE, a GOAWAY after a connection error)
// go to Output.
func (c *ClientConn) Feed(p []byte) {
	c.depth++
	c.feed(p)
	c.writeQueued()
	c.depth--
	c.recycle()
}

func (c *ClientConn) feed(p []byte) {
	for len(p) > 0 && !c.dead {
		if len(c.in) == 0 && len(p) >= frameHeaderLen {
			if !c.checkLen(p) {
				return
			}
			if need := frameHeaderLen + frameLen(p); len(p) >= need {
				c.processFrame(p[:need])
				p = p[need:]
				continue
			}
		}
		if len(c.in) < frameHeaderLen {
			k := min(frameHeaderLen-len(c.in), len(p))
			c.in = append(c.in, p[:k]...)
			p = p[k:]
			if len(c.in) < frameHeaderLen || !c.checkLen(c.in) {
				return
			}
		}
		need := frameHeaderLen + frameLen(c.in)
		k := min(need-len(c.in), len(p))
		c.in = append(c.in, p[:k]...)
		p = p[k:]
		if len(c.in) < need {
			return
		}
		c.processFrame(c.in)
		c.in = c.in[:0]
	}
}

func (c *ClientConn) checkLen(h []byte) bool {
	if frameLen(h) > ourMaxFrameSize {
		c.fail(http2.ErrCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE")
		return false
	}
	return true
}

// fail ends the connection after a connection error: GOAWAY with code,
// and every open stream reset with it.
func (c *ClientConn) fail(code http2.ErrCode, reason string) {
	var debug []byte
	if reason != "" {
		debug = []byte(reason)
	}
	c.fr.WriteGoAway(0, code, debug)
	c.dead, c.deadCode = true, code
	c.in = nil
	ss := make([]*ClientStream, 0, len(c.streams))
	for _, s := range c.streams {
		ss = append(ss, s)
	}
	for _, s := range ss {
		if code == http2.ErrCodeNo {
			code = http2.ErrCodeCancel
		}
		unsent := s.waitHead != nil || s.refused
		c.closeStream(s)
		s.ev.OnReset(code, unsent)
	}
}

func (c *ClientConn) processFrame(b []byte) {
	typ := http2.FrameType(b[3])
	if c.hdr.active && (typ != http2.FrameContinuation || streamID(b) != c.hdr.id) {
		c.fail(http2.ErrCodeProtocol, "expected CONTINUATION")
		return
	}
	if !c.gotSettings && typ != http2.FrameSettings {
		c.fail(http2.ErrCodeProtocol, "first frame is not SETTINGS")
		return
	}
	// Header blocks and WINDOW_UPDATE are read by hand: the Framer would
	// make a frame struct for every response and for every window an
	// upload opens (it reuses only DATA's), and having seen no HEADERS it
	// would refuse every CONTINUATION; the order of a block's frames is
	// checked above.
	switch typ {
	case http2.FrameHeaders:
		c.processHeaders(b)
		return
	case http2.FrameContinuation:
		c.headerFragment(b[frameHeaderLen:], http2.Flags(b[4]).Has(http2.FlagContinuationEndHeaders))
		return
	case http2.FrameWindowUpdate:
		c.processWindowUpdate(b)
		return
	}
	c.rd.b = b
	f, err := c.fr.ReadFrame()
	if err != nil {
		e := mapFramerError(err, c.fr.ErrorDetail(), typ)
		switch e := e.(type) {
		case streamErr:
			c.resetFrom(e.id, e.code)
		case connErr:
			c.fail(e.code, e.reason)
		}
		return
	}
	switch f := f.(type) {
	case *http2.DataFrame:
		c.processData(f, frameLen(b))
	case *http2.SettingsFrame:
		c.processSettings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			c.fr.WritePing(true, f.Data)
		}
	case *http2.RSTStreamFrame:
		if s := c.streams[f.StreamID]; s != nil {
			c.closeStream(s)
			s.ev.OnReset(f.ErrCode, f.ErrCode == http2.ErrCodeRefusedStream)
		}
	case *http2.GoAwayFrame:
		c.processGoAway(f)
	case *http2.PushPromiseFrame:
		c.fail(http2.ErrCodeProtocol, "PUSH_PROMISE with push disabled")
	}
	// PRIORITY and unknown frame types are ignored.
}

// resetFrom resets stream id after a stream error of the origin's.
func (c *ClientConn) resetFrom(id uint32, code http2.ErrCode) {
	c.fr.WriteRSTStream(id, code)
	if s := c.streams[id]; s != nil {
		c.closeStream(s)
		s.ev.OnReset(code, false)
	}
}

func (c *ClientConn) processData(f *http2.DataFrame, n int) {
	if !c.inflow.take(uint32(n)) {
		c.fail(http2.ErrCodeFlowControl, "DATA beyond the connection window")
		return
	}
	// The connection's window is returned at once: what the stream's
	// window admits is bounded, and no stream holds back the others.
	if inc := c.inflow.add(n); inc > 0 {
		c.fr.WriteWindowUpdate(0, uint32(inc))
	}
	id := f.StreamID
	s := c.streams[id]
	if s == nil {
		if id >= c.nextID {
			c.fail(http2.ErrCodeProtocol, "DATA on an idle stream")
		}
		return // a stream we reset or closed: in flight
	}
	if !s.gotHead || s.remoteEnded {
		c.resetFrom(id, http2.ErrCodeProtocol)
		return
	}
	if !s.inflow.take(uint32(n)) {
		c.resetFrom(id, http2.ErrCodeFlowControl)
		return
	}
	data := f.Data()
	if pad := n - len(data); pad > 0 {
		s.credit(pad)
	}
	if len(data) > 0 {
		s.ev.OnData(data)
	}
	if f.StreamEnded() && !s.closed {
		c.remoteEnd(s, nil)
	}
}

// remoteEnd: the origin ended its response.
func (c *ClientConn) remoteEnd(s *ClientStream, trailers []stream.Field) {
	s.remoteEnded = true
	if !s.localEnded {
		// RFC 9113 §8.1: a complete response may come before the
		// request's end; the rest of the request is not wanted. The
		// origin resets the stream (NO_ERROR) if it wants it to stop;
		// the owner ends it with Reset(NO_ERROR) when it is done.
		s.ev.OnEnd(trailers)
		return
	}
	c.closeStream(s)
	s.ev.OnEnd(trailers)
}

// processHeaders starts a header block with a complete HEADERS frame b.
func (c *ClientConn) processHeaders(b []byte) {
	frag, _, err := headersFragment(b)
	if err != nil {
		c.fail(err.code, err.reason)
		return
	}
	id := streamID(b)
	flags := http2.Flags(b[4])
	ended := flags.Has(http2.FlagHeadersEndStream)
	hb := &c.hdr
	*hb = clientBlock{active: true, id: id, endStream: ended, status: 0}
	c.fbuf, c.tbuf = c.fbuf[:0], c.tbuf[:0]
	s := c.streams[id]
	switch {
	case s != nil && s.remoteEnded:
		hb.bad = "HEADERS after END_STREAM"
	case s != nil && s.gotHead:
		hb.trailers = true
		if !ended {
			hb.bad = "trailers without END_STREAM"
		}
	case s == nil && id >= c.nextID:
		c.fail(http2.ErrCodeProtocol, "HEADERS on an idle stream")
		return
	}
	hb.s = s
	c.dec.SetEmitEnabled(true)
	c.headerFragment(frag, flags.Has(http2.FlagHeadersEndHeaders))
}

func (c *ClientConn) headerFragment(frag []byte, end bool) {
	if !c.hdr.active {
		c.fail(http2.ErrCodeProtocol, "CONTINUATION without HEADERS")
		return
	}
	if _, err := c.dec.Write(frag); err != nil {
		c.fail(http2.ErrCodeCompression, "HPACK: "+err.Error())
		return
	}
	if !end {
		return
	}
	c.hdr.active = false
	if err := c.dec.Close(); err != nil {
		c.fail(http2.ErrCodeCompression, "HPACK: "+err.Error())
		return
	}
	c.endHeaderBlock()
}

func (c *ClientConn) onField(hf hpack.HeaderField) {
	hb := &c.hdr
	if hb.s == nil || hb.bad != "" {
		return
	}
	hb.size += hf.Size()
	if hb.size > c.cfg.MaxHeaderListSize {
		hb.tooBig = true
		c.dec.SetEmitEnabled(false)
		return
	}
	name, value := hf.Name, hf.Value
	if len(name) > 0 && name[0] == ':' {
		switch {
		case hb.trailers:
			hb.bad = "pseudo-header in trailers"
		case name != ":status" || hb.status != 0 || len(c.fbuf) > 0:
			hb.bad = "unexpected pseudo-header " + name
		default:
			hb.status = parseStatus(value)
			if hb.status == 0 {
				hb.bad = "invalid :status"
			}
		}
		return
	}
	switch {
	case !field.ValidLowerName(name):
		hb.bad = "invalid field name"
	case !field.ValidValue(value):
		hb.bad = "invalid value for " + name
	case field.Lookup(name).Has(field.ConnectionSpecific):
		hb.bad = "connection-specific field " + name
	case hb.trailers:
		c.tbuf = append(c.tbuf, stream.Field{Name: name, Value: value})
	default:
		c.fbuf = append(c.fbuf, stream.Field{Name: name, Value: value})
	}
}

func parseStatus(v string) int {
	if len(v) != 3 {
		return 0
	}
	n := 0
	for i := 0; i < 3; i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0
		}
		n = n*10 + int(v[i]-'0')
	}
	if n < 100 || n > 599 {
		return 0
	}
	return n
}

// endHeaderBlock gives the verdict on a decoded response header block.
func (c *ClientConn) endHeaderBlock() {
	hb := &c.hdr
	s := hb.s
	if s == nil || s.closed {
		return
	}
	switch {
	case hb.tooBig:
		c.resetFrom(s.id, http2.ErrCodeProtocol)
		return
	case hb.bad != "":
		c.resetFrom(s.id, http2.ErrCodeProtocol)
		return
	case hb.trailers:
		c.remoteEnd(s, append([]stream.Field(nil), c.tbuf...))
		return
	case hb.status == 0:
		c.resetFrom(s.id, http2.ErrCodeProtocol)
		return
	}
	// Room behind them for what a proxy adds (its Via, a cookie), kept
	// for the next heads.
	c.fbuf = slices.Grow(c.fbuf, 2)
	fields := c.fbuf
	if hb.status < 200 {
		if hb.endStream || hb.status == 101 {
			c.resetFrom(s.id, http2.ErrCodeProtocol)
			return
		}
		s.ev.OnHead(hb.status, fields, false)
		return
	}
	s.gotHead = true
	if hb.endStream {
		s.remoteEnded = true
		if s.localEnded {
			c.closeStream(s)
		}
		s.ev.OnHead(hb.status, fields, true)
		return
	}
	s.ev.OnHead(hb.status, fields, false)
}

func (c *ClientConn) processSettings(f *http2.SettingsFrame) {
	if f.IsAck() {
		return
	}
	for i := 0; i < f.NumSettings(); i++ {
		st := f.Setting(i)
		if err := st.Valid(); err != nil {
			c.fail(http2.ErrCodeProtocol, "invalid setting "+st.ID.String())
			return
		}
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			c.peerMaxStreams = st.Val
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - c.peerInitialWindow
			c.peerInitialWindow = int64(st.Val)
			for _, s := range c.streams {
				s.outWin += delta
				if s.outWin > maxWindow {
					c.fail(http2.ErrCodeFlowControl, "INITIAL_WINDOW_SIZE overflows a stream window")
					return
				}
				if delta > 0 {
					c.enqueue(s)
				}
			}
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = st.Val
		case http2.SettingHeaderTableSize:
			c.enc.setLimit(st.Val)
		case http2.SettingEnableConnectProtocol:
			if c.peerConnect && st.Val == 0 {
				// RFC 8441 §3: once allowed, it stays allowed.
				c.fail(http2.ErrCodeProtocol, "ENABLE_CONNECT_PROTOCOL withdrawn")
				return
			}
			c.peerConnect = st.Val == 1
		}
	}
	c.fr.WriteSettingsAck()
	if !c.gotSettings {
		c.gotSettings = true
		if !seesMaxStreams(f) {
			c.peerMaxStreams = defaultMaxStreams
		}
		c.sendWaitingHeads()
	}
}

// defaultMaxStreams is how many streams a connection takes when the
// origin's SETTINGS name no limit: Go's transport's figure too.
const defaultMaxStreams = 100

func seesMaxStreams(f *http2.SettingsFrame) bool {
	_, ok := f.Value(http2.SettingMaxConcurrentStreams)
	return ok
}

// processWindowUpdate reads a complete WINDOW_UPDATE frame b, with the
// Framer's verdicts on a malformed one (RFC 9113 §6.9).
func (c *ClientConn) processWindowUpdate(b []byte) {
	id := streamID(b)
	inc, err := windowIncrement(b)
	switch err := err.(type) {
	case connErr:
		c.fail(err.code, err.reason)
		return
	case streamErr:
		c.resetFrom(err.id, err.code)
		return
	}
	if id == 0 {
		if c.outWin+inc > maxWindow {
			c.fail(http2.ErrCodeFlowControl, "connection window overflow")
			return
		}
		c.outWin += inc
		for _, s := range c.streams {
			if s.pending() > 0 || s.endQueued {
				c.enqueue(s)
			}
		}
		return
	}
	s := c.streams[id]
	if s == nil {
		return
	}
	if s.outWin+inc > maxWindow {
		c.resetFrom(s.id, http2.ErrCodeFlowControl)
		return
	}
	s.outWin += inc
	c.enqueue(s)
}

// processGoAway: the origin takes no new streams. Those above its last
// are unprocessed (retried by their owners); the rest finish.
func (c *ClientConn) processGoAway(f *http2.GoAwayFrame) {
	c.goAway = true
	var gone []*ClientStream
	for id, s := range c.streams {
		if id > f.LastStreamID {
			gone = append(gone, s)
		}
	}
	for _, s := range gone {
		c.closeStream(s)
		s.ev.OnReset(http2.ErrCodeRefusedStream, true)
	}
	if f.ErrCode != http2.ErrCodeNo {
		// An error: the streams it processed are not coming back either.
		c.fail(f.ErrCode, "")
	}
}

func (c *ClientConn) closeStream(s *ClientStream) {
	if s.closed {
		return
	}
	s.closed = true
	delete(c.streams, s.id)
	s.buf, s.off = s.buf[:0], 0
	if cap(s.buf) > maxKeptBody {
		s.buf = nil
	}
	if c.hdr.s == s {
		// The rest of its header block is decoded only for the HPACK
		// state: nothing may reach the struct once it serves another
		// stream.
		c.hdr.s = nil
	}
	if s.released {
		c.spend(s)
	}
}

// spend queues a stream that is closed and let go of for recycle.
// Those of a dead connection are left to the collector.
func (c *ClientConn) spend(s *ClientStream) {
	if !c.dead {
		c.spent = append(c.spent, s)
	}
}

// recycle moves the spent streams nothing refers to any more to the free
// list, once no Feed or Flush is under way (their frames and events hold
// streams): a stream still on the write queue (closed with its entry not
// yet popped) waits for a later call. A struct on the free list is in no
// stream table, so a late frame for its old stream ID finds nothing, and
// its owner let go of it, so no call of the old owner's reaches it.
func (c *ClientConn) recycle() {
	if c.depth > 0 || len(c.spent) == 0 {
		return
	}
	keep := c.spent[:0]
	for _, s := range c.spent {
		switch {
		case c.dead:
		case s.queued:
			keep = append(keep, s)
		default:
			c.free.put(s)
		}
	}
	clear(c.spent[len(keep):])
	c.spent = keep
}

func (c *ClientConn) enqueue(s *ClientStream) {
	if s.queued || s.closed {
		return
	}
	s.queued = true
	c.wq = append(c.wq, s)
}

// Flush frames request body bytes within the windows, and the ends and
// trailers behind them; OnSent reports what went. The owner calls it
// before it writes Output, and only while Output is small: a slow
// origin's socket holds the bodies back in their streams.
func (c *ClientConn) Flush() {
	c.depth++
	c.writeQueued()
	c.depth--
	c.recycle()
}

func (c *ClientConn) writeQueued() {
	if c.dead {
		return
	}
	// Streams queued while q is walked go to a new wq: the spare array,
	// which a nested walk (an owner's event flushing) cannot take twice.
	q := c.wq
	c.wq, c.wqSpare = c.wqSpare[:0], nil
	for _, s := range q {
		s.queued = false
		if s.closed || s.waitHead != nil {
			continue
		}
		if s.refused {
			c.closeStream(s)
			s.ev.OnReset(http2.ErrCodeRefusedStream, true)
			continue
		}
		sent := 0
		for s.pending() > 0 && s.outWin > 0 && c.outWin > 0 {
			n := min(s.pending(), int(s.outWin), int(c.outWin), int(c.peerMaxFrame), maxDataFrame)
			end := s.endQueued && n == s.pending() && s.trailers == nil
			c.writeData(s.id, end, s.buf[s.off:s.off+n])
			s.off += n
			s.outWin -= int64(n)
			c.outWin -= int64(n)
			sent += n
			if end {
				s.endQueued = false
				c.localEnd(s)
			}
		}
		if s.pending() == 0 {
			s.buf, s.off = s.buf[:0], 0
			if s.endQueued {
				s.endQueued = false
				c.sendEnd(s)
			}
		} else if s.outWin > 0 && c.outWin > 0 {
			c.enqueue(s)
		}
		if sent > 0 {
			s.ev.OnSent(sent)
		}
	}
	clear(q)
	if c.wqSpare == nil {
		c.wqSpare = q[:0]
	}
}

func (c *ClientConn) writeData(id uint32, end bool, p []byte) {
	var flags http2.Flags
	if end {
		flags = http2.FlagDataEndStream
	}
	c.out.b = appendFrameHeader(c.out.b, len(p), http2.FrameData, flags, id)
	c.out.b = append(c.out.b, p...)
}

// sendEnd ends the request: trailers, or an empty DATA with END_STREAM.
func (c *ClientConn) sendEnd(s *ClientStream) {
	if s.trailers != nil {
		c.enc.begin()
		for _, f := range s.trailers {
			c.enc.field(f.Name, f.Value, false)
		}
		s.trailers = nil
		c.writeBlock(s.id, c.enc.out, true)
	} else {
		c.writeData(s.id, true, nil)
	}
	c.localEnd(s)
}

func (c *ClientConn) localEnd(s *ClientStream) {
	s.localEnded = true
	if s.remoteEnded {
		c.closeStream(s)
	}
}

// ClientStream is one request and its response on a ClientConn.
type ClientStream struct {
	c      *ClientConn
	id     uint32
	ev     StreamEvents
	outWin int64
	inflow inflow

	buf       []byte // request body bytes not yet framed: buf[off:]
	off       int
	endQueued bool           // the request's end waits behind buf
	trailers  []stream.Field // sent with the end

	// waitHead is an extended CONNECT's head waiting for the origin's
	// SETTINGS (waitEnd: with END_STREAM); refused, one they did not
	// allow, reported at the next Flush.
	waitHead *Request
	waitEnd  bool
	refused  bool

	queued      bool
	gotHead     bool // the final response head arrived
	localEnded  bool
	remoteEnded bool
	closed      bool
	released    bool // the owner let go of it (Finish, Reset)
}

// ID is the stream's identifier.
func (s *ClientStream) ID() uint32 { return s.id }

func (s *ClientStream) pending() int { return len(s.buf) - s.off }

// Write queues request body bytes; they are framed as the windows allow
// (Flush), and OnSent reports them. The caller bounds what it writes (its
// client's window).
func (s *ClientStream) Write(p []byte) {
	if s.closed || s.localEnded || s.endQueued {
		return
	}
	if s.off > 0 && (2*s.off >= len(s.buf) || len(s.buf)+len(p) > cap(s.buf)) {
		// Framed bytes go before the buffer grows: a body that keeps
		// coming while the windows keep it from draining would otherwise
		// grow it by everything ever sent.
		n := copy(s.buf, s.buf[s.off:])
		s.buf, s.off = s.buf[:n], 0
	}
	s.buf = append(s.buf, p...)
	s.c.enqueue(s)
}

// End ends the request body, with trailers when there are any.
func (s *ClientStream) End(trailers []stream.Field) {
	if s.closed || s.localEnded || s.endQueued {
		return
	}
	s.endQueued = true
	if len(trailers) > 0 {
		s.trailers = append([]stream.Field(nil), trailers...)
	}
	s.c.enqueue(s)
}

// Consumed returns n response body bytes to the stream's window: the
// origin may send that many more.
func (s *ClientStream) Consumed(n int) {
	if s.closed || s.remoteEnded {
		return
	}
	s.credit(n)
}

func (s *ClientStream) credit(n int) {
	if inc := s.inflow.add(n); inc > 0 {
		s.c.fr.WriteWindowUpdate(s.id, uint32(inc))
	}
}

// Reset ends the stream with RST_STREAM(code), unless it is already
// over on both sides. No event follows, and the owner lets go of the
// stream (release).
func (s *ClientStream) Reset(code http2.ErrCode) {
	if !s.closed {
		unsent := s.waitHead != nil || s.refused
		s.c.closeStream(s)
		if !s.c.dead && !unsent { // an unsent stream is idle to the origin
			s.c.fr.WriteRSTStream(s.id, code)
		}
	}
	s.release()
}

// Finish lets go of a stream whose response is complete: a request
// still being sent is cut short with RST_STREAM(NO_ERROR) (RFC 9113
// §8.1), which tells the origin nothing went wrong. No event follows.
//
// A stream whose request end waits with no body bytes before it (a
// tunnel both of whose directions ended) keeps it: the END_STREAM goes
// at the next Flush, which closes the stream.
//
// The owner of every stream ends it with Finish or Reset, exactly once,
// also after OnEnd or OnReset told it the stream is over (then neither
// sends anything): from that call on, the struct may serve a later
// stream of any connection sharing the free list (ClientConfig.Free),
// so the owner must keep no reference to it. A stream never let go of
// is left to the garbage collector.
func (s *ClientStream) Finish() {
	if !s.closed && s.endQueued && s.pending() == 0 && s.remoteEnded && s.waitHead == nil && !s.refused {
		s.ev = finished{}
		s.release()
		return
	}
	s.Reset(http2.ErrCodeNo)
}

// release records that the owner let go of the stream; once it is also
// closed, it waits for recycle.
func (s *ClientStream) release() {
	if s.released {
		return
	}
	s.released = true
	if s.closed {
		s.c.spend(s)
	}
}

// Buffered is how many request body bytes wait to be framed.
func (s *ClientStream) Buffered() int { return s.pending() }

// finished takes the events of a stream its owner let go of.
type finished struct{}

func (finished) OnHead(int, []stream.Field, bool) {}
func (finished) OnData([]byte)                    {}
func (finished) OnEnd([]stream.Field)             {}
func (finished) OnReset(http2.ErrCode, bool)      {}
func (finished) OnSent(int)                       {}
