package h2

import (
	"bytes"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

const (
	clientPreface  = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	frameHeaderLen = 9
	// ourMaxFrameSize is the SETTINGS_MAX_FRAME_SIZE we advertise (and the
	// protocol default): frames we read are never larger.
	ourMaxFrameSize = 16384
	// maxDataFrame caps the DATA frames we write even when the client
	// accepts larger ones: a TLS record holds 16 KiB anyway.
	maxDataFrame = 16384
	// headerTableSize is the HPACK dynamic table size both ways (the
	// protocol default; we do not advertise another).
	headerTableSize = 4096
)

var shutdownPingData = [8]byte{'p', 'p', 'x', 'g', 'o', 'a', 'w', 'y'}

// How a recently closed stream was closed, to answer late frames as RFC 9113
// §5.1 wants: ignore them after our RST_STREAM, STREAM_CLOSED otherwise.
const (
	closedDone        uint8 = iota + 1 // both sides ended
	closedByUs                         // we sent RST_STREAM (or refused it)
	closedRemoteReset                  // the client sent RST_STREAM
)

const closedRingSize = 64

type closedRec struct {
	id  uint32
	how uint8
}

type idRange struct{ lo, hi uint32 }

// ServerConn is one HTTP/2 client connection. Create it with NewServerConn.
type ServerConn struct {
	t   stream.Transport
	h   stream.Handler
	cfg Config

	fr   *http2.Framer // nil after ReleaseIdle until a frame needs it: see framer
	rd   frameReader
	out  outBuf
	in   []byte   // an incomplete frame (of a DATA frame, its prefix only)
	data dataRead // the DATA frame whose body is being read

	prefaceLeft  int
	gotSettings  bool // the first frame was SETTINGS
	settingsSeen bool // a SETTINGS was processed (later ones are glitches)
	remoteAddr   netip.AddrPort

	dec  *fieldDecoder
	henc *hpack.Encoder // nil once ReleaseIdle let go of it: see encoder
	hbuf bytes.Buffer
	// lastHead is the last response head encoded as indices alone, for
	// encodeHead to reuse; nil until one is, and after ReleaseIdle.
	lastHead *headCache
	// encTableSize is the dynamic table size the client's decoder allows
	// our encoder (its SETTINGS_HEADER_TABLE_SIZE, at most ours).
	encTableSize uint32
	serving      uint32 // the stream whose handler was called last from the client's side (Serving); in encTableSize's padding
	hdr          headerBlock

	streams     map[uint32]*h2Stream // made by the first stream, dropped while idle
	maxClientID uint32
	closed      *[closedRingSize]closedRec // made on the first close, dropped while idle
	closedNext  int
	skipped     [8]idRange
	skippedNext int

	// Outbound.
	outWin            int64 // connection send window
	peerInitialWindow int64
	peerMaxFrame      uint32
	wq                []*h2Stream // streams with DATA or an END_STREAM to send
	wqHead            int
	writable          []*h2Stream // streams to tell OnWritable
	writableSpare     []*h2Stream
	bufFree           [][]byte

	// Stream structs for reuse: spent holds closed streams whose handler
	// released them (stream.Releaser) until recycle finds them referenced
	// by nothing; freeStreams holds them for newStream.
	spent       []*h2Stream
	freeStreams []*h2Stream

	// Inbound.
	inflow inflow
	win    windowTuner

	clock stream.Clock
	err   error
	// The flags share one word with settingsAckPending (with err
	// between them they took two): see TestServerConnSize.
	flushAsked      bool // Transport.FlushLater called, Flush not yet
	dead            bool
	closeAfterFlush bool
	transportClosed bool

	settingsAckPending bool
	settingsTimer      stream.Timer
	idleTimer          stream.Timer
	idleSince          time.Time

	shutdown      bool   // graceful shutdown started (ours or the client's GOAWAY)
	finalGoAway   bool   // the GOAWAY naming the last stream is written
	goAwayLastID  uint32 // streams above it are refused
	shutdownTimer stream.Timer

	resets   rateCounter
	glitches rateCounter
}

// NewServerConn starts an HTTP/2 server connection over t, serving requests
// with h. It queues the server preface (SETTINGS and the connection
// WINDOW_UPDATE) right away and expects the client preface from Feed.
func NewServerConn(t stream.Transport, h stream.Handler, cfg Config) *ServerConn {
	c := &ServerConn{
		t:                 t,
		h:                 h,
		cfg:               cfg.withDefaults(),
		prefaceLeft:       len(clientPreface),
		outWin:            initialWindow,
		peerInitialWindow: initialWindow,
		peerMaxFrame:      ourMaxFrameSize,
		goAwayLastID:      maxWindow,
		encTableSize:      headerTableSize,
		remoteAddr:        t.RemoteAddr(),
		clock:             t.Clock(),
	}
	c.dec = newFieldDecoder(headerTableSize, c.onField)
	c.dec.intern.maxBytes = internMaxBytes / 4
	// One field larger than twice the list limit is a connection error
	// (the decoder cannot skip it); smaller excess is answered with 431.
	c.dec.SetMaxStringLength(2 * int(c.cfg.MaxHeaderListSize))
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.inflow.init(initialWindow)
	c.win.init(&c.cfg)
	if p, ok := t.(stream.PathRTT); ok {
		c.win.hsRTT = p.HandshakeRTT()
	}

	settings := []http2.Setting{
		{ID: http2.SettingMaxConcurrentStreams, Val: c.cfg.MaxConcurrentStreams},
		{ID: http2.SettingInitialWindowSize, Val: c.cfg.StreamWindow},
		{ID: http2.SettingMaxFrameSize, Val: ourMaxFrameSize},
		{ID: http2.SettingMaxHeaderListSize, Val: c.cfg.MaxHeaderListSize},
		{ID: http2.SettingEnablePush, Val: 0},
	}
	if !c.cfg.NoExtendedConnect {
		settings = append(settings, http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1})
	}
	c.framer().WriteSettings(settings...)
	if inc := c.cfg.ConnWindow - initialWindow; inc > 0 {
		c.framer().WriteWindowUpdate(0, inc)
		c.inflow.init(int32(c.cfg.ConnWindow))
	}
	c.settingsAckPending = true
	c.settingsTimer = c.clock.AfterFunc(c.cfg.SettingsTimeout, c.onSettingsTimeout)
	if c.cfg.IdleTimeout > 0 {
		c.idleSince = c.clock.Now()
		c.idleTimer = c.clock.AfterFunc(c.cfg.IdleTimeout, c.onIdleTimer)
	}
	c.flush()
	return c
}

var _ stream.ServerConn = (*ServerConn)(nil)

// Feed hands over plaintext from the client (any split). It returns an
// error once the connection is finished: after a connection error (a
// *ConnError; the GOAWAY is queued) or when a graceful shutdown completed
// (ErrConnClosed). In both cases ServerConn has written everything and
// called Transport.Close before it returns.
func (c *ServerConn) Feed(p []byte) error {
	if !c.dead {
		c.feed(p)
		if !c.dead && c.t.Buffered()+len(c.out.b) > c.cfg.MaxBufferedOutput {
			c.handleError(connErr{http2.ErrCodeEnhanceYourCalm, "client does not read its answers"})
		}
	}
	// Also when already dead: a ResponseWriter call may have finished a
	// graceful shutdown whose final frames wait for Flush.
	c.flush()
	if c.dead {
		return c.err
	}
	return nil
}

func (c *ServerConn) feed(p []byte) {
	if c.prefaceLeft > 0 {
		n := min(len(p), c.prefaceLeft)
		off := len(clientPreface) - c.prefaceLeft
		if string(p[:n]) != clientPreface[off:off+n] {
			c.handleError(connErr{http2.ErrCodeProtocol, "invalid connection preface"})
			return
		}
		c.prefaceLeft -= n
		p = p[n:]
	}
	for len(p) > 0 && !c.dead {
		if c.data.active {
			p = c.dataPayload(p)
			continue
		}
		if len(c.in) == 0 && len(p) >= frameHeaderLen {
			// Fast path: frames straight from p.
			if !c.checkFrameLen(p) {
				return
			}
			if need := pieceLen(p); len(p) >= need {
				c.processPiece(p[:need])
				p = p[need:]
				continue
			}
		}
		// Slow path: collect one frame in c.in, never more; of a DATA
		// frame only the prefix, its body is read as it comes.
		if len(c.in) < frameHeaderLen {
			k := min(frameHeaderLen-len(c.in), len(p))
			c.in = append(c.in, p[:k]...)
			p = p[k:]
			if len(c.in) < frameHeaderLen {
				return
			}
			if !c.checkFrameLen(c.in) {
				return
			}
		}
		need := pieceLen(c.in)
		if cap(c.in) < need {
			in := make([]byte, len(c.in), need)
			copy(in, c.in)
			c.in = in
		}
		k := min(need-len(c.in), len(p))
		c.in = append(c.in, p[:k]...)
		p = p[k:]
		if len(c.in) < need {
			return
		}
		c.processPiece(c.in)
		c.in = c.in[:0]
	}
}

// pieceLen is how many bytes of the frame whose header is h are processed
// at once: a DATA frame's prefix (its body is read as it comes, see
// dataread.go), any other frame whole.
func pieceLen(h []byte) int {
	if http2.FrameType(h[3]) == http2.FrameData {
		return dataPrefixLen(h)
	}
	return frameHeaderLen + frameLen(h)
}

// processPiece processes the pieceLen bytes that start a frame.
func (c *ServerConn) processPiece(b []byte) {
	if http2.FrameType(b[3]) == http2.FrameData {
		c.startData(b)
	} else {
		c.processFrame(b)
	}
}

func frameLen(b []byte) int { return int(b[0])<<16 | int(b[1])<<8 | int(b[2]) }

// checkFrameLen rejects a frame larger than we advertised before buffering it.
func (c *ServerConn) checkFrameLen(hdr []byte) bool {
	if frameLen(hdr) > ourMaxFrameSize {
		c.handleError(connErr{http2.ErrCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE"})
		return false
	}
	return true
}

// processFrame handles one complete frame (header and payload).
func (c *ServerConn) processFrame(b []byte) {
	typ := http2.FrameType(b[3])
	flags := http2.Flags(b[4])
	id := streamID(b)
	if !c.frameAllowed(typ, flags, id) {
		return
	}
	if typ == http2.FramePriority && len(b) != frameHeaderLen+5 {
		// A stream error per RFC 9113 §6.3 (the Framer makes it a
		// connection error).
		if id == 0 {
			c.handleError(connErr{http2.ErrCodeProtocol, "PRIORITY on stream 0"})
		} else {
			c.handleError(streamErr{id, http2.ErrCodeFrameSize, "PRIORITY length is not 5"})
		}
		return
	}
	// HEADERS, CONTINUATION and WINDOW_UPDATE by hand (handframes.go).
	var err error
	switch typ {
	case http2.FrameHeaders:
		frag, dep, ferr := headersFragment(b)
		if ferr != nil {
			err = *ferr
		} else {
			err = c.processHeaders(id, flags, dep == id && flags.Has(http2.FlagHeadersPriority), frag)
		}
	case http2.FrameContinuation:
		err = c.processContinuation(b[frameHeaderLen:], flags.Has(http2.FlagContinuationEndHeaders))
	case http2.FrameWindowUpdate:
		var inc int64
		if inc, err = windowIncrement(b); err == nil {
			err = c.processWindowUpdate(id, inc)
		}
	default:
		err = c.readFrame(b, typ)
	}
	if err != nil {
		c.handleError(err)
	}
}

// readFrame reads and handles a frame of the types the Framer reads.
func (c *ServerConn) readFrame(b []byte, typ http2.FrameType) error {
	c.rd.b = b
	f, err := c.framer().ReadFrame()
	if err != nil {
		return mapFramerError(err, c.framer().ErrorDetail(), typ)
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		err = c.processSettings(f)
	case *http2.PingFrame:
		err = c.processPing(f)
	case *http2.RSTStreamFrame:
		err = c.processRSTStream(f)
	case *http2.PriorityFrame:
		err = c.processPriority(f)
	case *http2.GoAwayFrame:
		err = c.processGoAway(f)
	case *http2.PushPromiseFrame:
		err = connErr{http2.ErrCodeProtocol, "PUSH_PROMISE from a client"}
	default:
		// PRIORITY_UPDATE and unknown frame types are ignored (RFC 9113
		// §4.1, §5.5), but they cost something.
		err = c.glitch()
	}
	return err
}

// streamID returns the stream identifier of frame header b.
func streamID(b []byte) uint32 {
	return uint32(b[5]&0x7f)<<24 | uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8])
}

// frameAllowed checks that a frame of type typ may come now: inside a
// header block only its CONTINUATION may, and the first frame must be
// SETTINGS. Otherwise it answers the connection error and reports false.
func (c *ServerConn) frameAllowed(typ http2.FrameType, flags http2.Flags, id uint32) bool {
	if c.hdr.active && (typ != http2.FrameContinuation || id != c.hdr.id) {
		c.handleError(connErr{http2.ErrCodeProtocol, "expected CONTINUATION"})
		return false
	}
	if !c.gotSettings {
		if typ != http2.FrameSettings || flags.Has(http2.FlagSettingsAck) {
			c.handleError(connErr{http2.ErrCodeProtocol, "first frame is not SETTINGS"})
			return false
		}
		c.gotSettings = true
	}
	return true
}

// handleError is the one place where errors become frames.
func (c *ServerConn) handleError(err error) {
	if c.dead {
		return
	}
	switch e := err.(type) {
	case streamErr:
		if e.id > c.maxClientID || e.id == 0 {
			// RST_STREAM must not be sent for an idle stream.
			c.handleError(connErr{e.code, e.reason})
			return
		}
		c.resetStream(e.id, e.code, e.reason)
		if gerr := c.glitch(); gerr != nil {
			c.handleError(gerr)
		}
	case connErr:
		c.goAwayAndClose(e.code, e.reason)
	default:
		c.goAwayAndClose(http2.ErrCodeInternal, err.Error())
	}
}

// resetStream sends RST_STREAM and closes the stream, telling its handler.
func (c *ServerConn) resetStream(id uint32, code http2.ErrCode, reason string) {
	c.framer().WriteRSTStream(id, code)
	if s := c.streams[id]; s != nil {
		c.closeStream(s, closedByUs, &ResetError{Code: code, Reason: reason})
	} else {
		c.recordClosed(id, closedByUs)
	}
}

// goAwayAndClose ends the connection after a connection error.
func (c *ServerConn) goAwayAndClose(code http2.ErrCode, reason string) {
	var debug []byte
	if code != http2.ErrCodeNo {
		debug = []byte(reason)
	}
	c.framer().WriteGoAway(c.maxClientID, code, debug)
	cerr := &ConnError{Code: code, Reason: reason}
	c.die(cerr, cerr)
	c.closeAfterFlush = true
}

// die marks the connection finished and aborts every open stream.
func (c *ServerConn) die(err, abortErr error) {
	c.dead = true
	c.err = err
	stopTimer(c.settingsTimer)
	stopTimer(c.idleTimer)
	stopTimer(c.shutdownTimer)
	c.releaseWindow()
	for _, s := range c.streams {
		c.closeStream(s, closedByUs, abortErr)
	}
	c.in = nil
	c.data = dataRead{}
}

func stopTimer(t stream.Timer) {
	if t != nil {
		t.Stop()
	}
}

// glitch counts one suspicious event and reports ENHANCE_YOUR_CALM when the
// connection had too many within the window.
func (c *ServerConn) glitch() error {
	if c.glitches.add(c.clock.Now(), c.cfg.GlitchWindow, 1) > c.cfg.MaxGlitches {
		return connErr{http2.ErrCodeEnhanceYourCalm, "too many glitches"}
	}
	return nil
}

// later asks the connection for Flush at the end of the loop iteration;
// ResponseWriter calls use it instead of flushing. Repeated calls within a
// batch cost a flag test.
func (c *ServerConn) later() {
	if !c.flushAsked {
		c.flushAsked = true
		c.t.FlushLater()
	}
}

// flush ends the work of an entry point: it produces DATA within the
// windows and the output budget, tells refused writers they may write again
// (a bounded number of rounds, so one fast writer cannot hold the loop; the
// rest resume from OnDrained), and hands the batch to the transport in one
// Write. Only entry points call it, never a ResponseWriter method.
func (c *ServerConn) flush() {
	for i := 0; i < 8 && !c.dead; i++ {
		c.writeQueued()
		if len(c.writable) == 0 {
			break
		}
		ws := c.writable
		c.writable = c.writableSpare[:0]
		for j, s := range ws {
			ws[j] = nil
			if !s.closed && s.events != nil && !c.dead {
				s.events.OnWritable()
			}
		}
		c.writableSpare = ws[:0]
	}
	if len(c.out.b) > 0 && !c.transportClosed {
		c.t.Write(c.out.b)
	}
	c.out.b = c.out.b[:0]
	if cap(c.out.b) > 2*c.cfg.HighWater {
		c.out.b = nil // do not pin a burst's worth of memory
	}
	if c.closeAfterFlush && !c.transportClosed {
		c.transportClosed = true
		c.t.Close()
	}
	if len(c.spent) > 0 {
		c.recycle()
	}
}

// Flush implements stream.ServerConn: the connection calls it at the end of
// the loop iteration (after later asked for it) and writes what it hands
// over in the same socket write. A ResponseWriter call made from the
// OnWritable it delivers asks for the next one.
func (c *ServerConn) Flush() {
	c.flushAsked = false
	c.flush()
}

// OnDrained reports that everything the transport had queued reached the
// socket: DATA production resumes. The connection calls it after every
// flush that empties its output, so it asks for a Flush only when there is
// something to produce — streams owed OnWritable, or queued streams the
// connection window lets through — and otherwise does nothing.
func (c *ServerConn) OnDrained() {
	if c.dead {
		return
	}
	if len(c.writable) > 0 || c.wqHead < len(c.wq) && c.outWin > 0 {
		c.later()
	}
}

// Shutdown starts a graceful close: GOAWAY(NO_ERROR) with the largest stream
// ID and a PING; on the PING's acknowledgement (or after
// Config.ShutdownPingTimeout) a second GOAWAY names the last stream
// accepted; once the open streams are done the transport is closed.
//
// Shutdown calls no handler; like a ResponseWriter call it only queues its
// frames and asks for Flush, so a handler may call it too.
func (c *ServerConn) Shutdown() {
	if c.dead || c.shutdown {
		return
	}
	c.startShutdown(true)
	c.later()
}

func (c *ServerConn) startShutdown(twoStep bool) {
	if c.shutdown {
		return
	}
	c.shutdown = true
	if !twoStep || len(c.streams) == 0 {
		c.sendFinalGoAway()
		return
	}
	c.framer().WriteGoAway(maxWindow, http2.ErrCodeNo, nil)
	c.framer().WritePing(false, shutdownPingData)
	c.shutdownTimer = c.clock.AfterFunc(c.cfg.ShutdownPingTimeout, c.onShutdownTimer)
}

func (c *ServerConn) onShutdownTimer() {
	if c.dead {
		return
	}
	c.sendFinalGoAway()
	c.flush()
}

func (c *ServerConn) sendFinalGoAway() {
	if c.finalGoAway {
		return
	}
	stopTimer(c.shutdownTimer)
	c.finalGoAway = true
	c.goAwayLastID = c.maxClientID
	c.framer().WriteGoAway(c.maxClientID, http2.ErrCodeNo, nil)
	c.maybeFinishShutdown()
}

func (c *ServerConn) maybeFinishShutdown() {
	if c.finalGoAway && len(c.streams) == 0 && !c.dead {
		c.die(ErrConnClosed, ErrConnClosed)
		c.closeAfterFlush = true
	}
}

// Serving returns the request whose handler the connection called last
// from the client's side, while its stream is open, or nil: what the log
// of a panic on this connection names. It only reads.
func (c *ServerConn) Serving() *stream.Request {
	if s := c.streams[c.serving]; s != nil {
		return &s.req
	}
	return nil
}

// LastWords returns a GOAWAY(INTERNAL_ERROR) naming the last stream the
// client opened, for a transport that abandons the connection after a
// panic: appended after the whole frames already written, it tells the
// client which of its requests were never processed (RFC 9113 §6.8). It
// reads one field and writes nothing, since the connection's own state
// may be what the panic left half-updated.
func (c *ServerConn) LastWords() []byte {
	id := c.maxClientID & 0x7fffffff
	code := uint32(http2.ErrCodeInternal)
	return []byte{
		0, 0, 8, byte(http2.FrameGoAway), 0, 0, 0, 0, 0,
		byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id),
		byte(code >> 24), byte(code >> 16), byte(code >> 8), byte(code),
	}
}

// Abort reports that the connection is gone: every open stream gets
// OnAbort(err) and nothing more is written.
func (c *ServerConn) Abort(err error) {
	if c.dead {
		return
	}
	if err == nil {
		err = ErrConnClosed
	}
	c.transportClosed = true
	c.die(err, err)
	c.out.b = nil
}

func (c *ServerConn) onSettingsTimeout() {
	if c.dead || !c.settingsAckPending {
		return
	}
	c.handleError(connErr{http2.ErrCodeSettingsTimeout, "SETTINGS not acknowledged"})
	c.flush()
}

func (c *ServerConn) onIdleTimer() {
	if c.dead {
		return
	}
	wait := c.cfg.IdleTimeout
	if len(c.streams) == 0 && !c.shutdown {
		idle := c.clock.Now().Sub(c.idleSince)
		if idle >= c.cfg.IdleTimeout || c.budgetWanted(idle) {
			c.startShutdown(false)
			c.flush()
			return
		}
		wait = c.cfg.IdleTimeout - idle
		if c.win.granted > 0 {
			wait = min(wait, windowHoldIdle)
		}
	}
	c.armIdle(wait)
}

// armIdle sets the idle timer to fire in d, re-arming the one it has where
// the clock's timers allow it (stream.ResettableTimer, as the loop's do).
func (c *ServerConn) armIdle(d time.Duration) {
	if rt, ok := c.idleTimer.(stream.ResettableTimer); ok {
		rt.Reset(d)
		return
	}
	c.idleTimer.Stop()
	c.idleTimer = c.clock.AfterFunc(d, c.onIdleTimer)
}

// recordClosed remembers how a stream closed, for late frames.
func (c *ServerConn) recordClosed(id uint32, how uint8) {
	if c.closed == nil {
		c.closed = new([closedRingSize]closedRec)
	}
	c.closed[c.closedNext] = closedRec{id, how}
	c.closedNext = (c.closedNext + 1) % closedRingSize
}

func (c *ServerConn) closedHow(id uint32) uint8 {
	if c.closed == nil {
		return 0
	}
	for _, r := range c.closed {
		if r.id == id {
			return r.how
		}
	}
	return 0
}

// openedID advances the highest client stream ID, remembering IDs the
// client skipped (they can never be opened: a HEADERS on one is a
// PROTOCOL_ERROR, not STREAM_CLOSED).
func (c *ServerConn) openedID(id uint32) {
	if id > c.maxClientID+2 {
		c.skipped[c.skippedNext] = idRange{c.maxClientID + 2, id - 2}
		c.skippedNext = (c.skippedNext + 1) % len(c.skipped)
	}
	c.maxClientID = id
}

func (c *ServerConn) isSkipped(id uint32) bool {
	for _, r := range c.skipped {
		if r.hi != 0 && id >= r.lo && id <= r.hi {
			return true
		}
	}
	return false
}

// creditConn returns n received bytes to the connection window.
func (c *ServerConn) creditConn(n int) {
	if c.data.active {
		c.inflow.hold(n) // decided at the frame's end: see dataRead
		return
	}
	if inc := c.inflow.add(n); inc > 0 && !c.dead {
		c.framer().WriteWindowUpdate(0, uint32(inc))
	}
}

// ReleaseIdle lets go of the buffers the last exchanges grew (the frame
// output and partial-frame input, the Framer's buffers, the header-block
// scratch, the spare stream send buffers, an emptied stream table), the
// record of recently closed streams and the HPACK encoder with its dynamic
// table, while no stream is open, no header block is in progress and
// nothing is buffered. The HPACK decoder keeps its table, which is the
// client's to manage, and lets go of its cache of decoded strings. The transport calls it from the loop on a connection that has
// been quiet for a while (a second or more), once per quiet spell: each call
// that passes the checks makes a new Framer. It returns (roughly) the bytes
// it let go of.
//
// The closed-stream record only serves frames that were in flight when a
// stream closed; after a quiet second a late one is answered as for any
// closed stream the record forgot. The encoder is made again for the next
// response (encoder), which first empties the client's copy of the table.
func (c *ServerConn) ReleaseIdle() int {
	if c.dead || len(c.streams) > 0 || len(c.in) > 0 || c.data.active || len(c.out.b) > 0 ||
		c.wqHead < len(c.wq) || len(c.writable) > 0 || c.hdr.active {
		return 0
	}
	n := cap(c.in) + cap(c.out.b) + c.hbuf.Cap()
	for _, b := range c.bufFree {
		n += cap(b)
	}
	c.in, c.out.b, c.bufFree = nil, nil, nil
	c.hbuf = bytes.Buffer{} // a new encoder writes to &c.hbuf
	c.writable, c.writableSpare = nil, nil
	c.wq, c.wqHead = nil, 0
	c.streams = nil
	n += len(c.freeStreams) * int(unsafe.Sizeof(h2Stream{}))
	c.freeStreams, c.spent = nil, nil
	if c.closed != nil {
		n += closedRingSize * int(unsafe.Sizeof(closedRec{}))
		c.closed, c.closedNext = nil, 0
	}
	c.henc = nil // its table's size is not exposed: not counted
	c.lastHead = nil
	n += c.dec.releaseIdle()
	// x/net's Framer keeps its read buffer at the largest frame it read
	// and its write buffer at the largest it wrote (16 KiB after an
	// upload or a large header block), and the last frame read. Between
	// header blocks it holds no other state, so the next frame read or
	// written makes a new one (framer); until then an idle connection
	// holds none, 336 bytes less than an empty one.
	c.fr = nil
	return n
}

// framer returns the connection's frame codec over its input and output
// buffers, making a new one if ReleaseIdle let go of the last.
func (c *ServerConn) framer() *http2.Framer {
	if c.fr == nil {
		c.fr = http2.NewFramer(&c.out, &c.rd)
		c.fr.SetMaxReadFrameSize(ourMaxFrameSize)
		c.fr.SetReuseFrames()
	}
	return c.fr
}

// encoder returns the HPACK encoder, making a new one if ReleaseIdle let go
// of the last. The client's decoder still holds the entries the old encoder
// added, which the new one does not know, so its first header block starts
// with a dynamic table size update to 0, emptying the client's table (RFC
// 7541 §4.2), then one back to the size the client allows.
func (c *ServerConn) encoder() *hpack.Encoder {
	if c.henc == nil {
		c.henc = hpack.NewEncoder(&c.hbuf)
		c.henc.SetMaxDynamicTableSize(0)
		c.henc.SetMaxDynamicTableSize(c.encTableSize)
	}
	return c.henc
}

// frameReader hands the Framer exactly one buffered frame.
type frameReader struct{ b []byte }

func (r *frameReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errShortFrame
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

var errShortFrame = &ConnError{Code: http2.ErrCodeInternal, Reason: "framer read past the frame"}

// outBuf collects the frames of one batch.
type outBuf struct{ b []byte }

func (o *outBuf) Write(p []byte) (int, error) {
	o.b = append(o.b, p...)
	return len(p), nil
}
