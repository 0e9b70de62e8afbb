package h2

import (
	"golang.org/x/net/http2"
)

// This file holds one method per frame type. Each returns nil, a streamErr
// or a connErr; handleError turns the errors into frames.

// processData handles the header of a DATA frame on stream id: n is the
// frame's length (padding included: it counts against the windows),
// dataLen the body bytes it carries, end its END_STREAM flag. It takes the
// whole frame from the windows and checks it against the stream, before
// any of the body arrives (see dataRead): nil means the body goes to the
// stream as it comes, errSkipData that the frame is dropped (its bytes are
// already credited back), other errors are a streamErr or a connErr, and
// the body is dropped too.
func (c *ServerConn) processData(id, n uint32, dataLen int, end bool) error {
	if id > c.maxClientID {
		return connErr{http2.ErrCodeProtocol, "DATA on an idle stream"}
	}
	if !c.inflow.take(n) {
		return connErr{http2.ErrCodeFlowControl, "DATA beyond the connection window"}
	}
	c.tuneData(n)
	s := c.streams[id]
	if s == nil || s.remoteEnded {
		c.creditConn(int(n))
		if s != nil {
			return streamErr{id, http2.ErrCodeStreamClosed, "DATA after END_STREAM"}
		}
		switch c.closedHow(id) {
		case closedByUs:
			return errSkipData // in flight when we reset it
		case closedDone:
			return connErr{http2.ErrCodeStreamClosed, "DATA on a closed stream"}
		}
		return streamErr{id, http2.ErrCodeStreamClosed, "DATA on a closed stream"}
	}
	if !s.inflow.take(n) {
		c.creditConn(int(n))
		return streamErr{id, http2.ErrCodeFlowControl, "DATA beyond the stream window"}
	}
	if pad := int(n) - dataLen; pad > 0 {
		s.credit(pad)
	}
	if dataLen == 0 && !end {
		if err := c.glitch(); err != nil {
			return err
		}
	}
	s.recv += int64(dataLen)
	if s.declared >= 0 && (s.recv > s.declared || end && s.recv != s.declared) {
		c.creditConn(dataLen)
		return streamErr{id, http2.ErrCodeProtocol, "body length differs from content-length"}
	}
	if c.settingsAckPending {
		c.tuneFirstFlight(s, n, end)
	}
	return nil
}

// dataBody hands body bytes of the DATA frame being read to its open
// stream s, or gives their window back when nobody reads them.
func (c *ServerConn) dataBody(s *h2Stream, b []byte) {
	if s.events == nil || s.localEnded && !s.tunnel {
		// Nobody reads it: give the window back at once.
		s.credit(len(b))
		return
	}
	s.unconsumed += len(b)
	c.serving = s.id
	s.events.OnBody(b)
}

// remoteEnd handles the client's END_STREAM.
func (c *ServerConn) remoteEnd(s *h2Stream, trailers []streamField) {
	s.remoteEnded = true
	if s.events != nil && (!s.localEnded || s.tunnel) {
		s.events.OnBodyEnd(trailers)
	}
	if !s.closed && s.localEnded {
		c.closeStream(s, closedDone, nil)
	}
}

// processHeaders starts a header block with a HEADERS frame on stream id
// (its flags, whether its priority names the stream itself, its block
// fragment).
func (c *ServerConn) processHeaders(id uint32, flags http2.Flags, selfDep bool, frag []byte) error {
	ended := flags.Has(http2.FlagHeadersEndStream)
	if id%2 == 0 {
		return connErr{http2.ErrCodeProtocol, "HEADERS on an even stream ID"}
	}
	hb := &c.hdr
	hb.reset(id, ended)
	c.dec.SetEmitEnabled(true)
	if s := c.streams[id]; s != nil {
		switch {
		case s.remoteEnded:
			hb.fail(http2.ErrCodeStreamClosed, "HEADERS after END_STREAM")
		case !ended:
			hb.fail(http2.ErrCodeProtocol, "trailers without END_STREAM")
		default:
			hb.kind = blockTrailers
			hb.s = s
		}
	} else if id <= c.maxClientID {
		switch {
		case c.closedHow(id) == closedByUs:
			hb.kind = blockDiscard // trailers in flight when we reset it
		case c.isSkipped(id):
			return connErr{http2.ErrCodeProtocol, "stream ID lower than a previous one"}
		default:
			return connErr{http2.ErrCodeStreamClosed, "HEADERS on a closed stream"}
		}
	} else {
		c.openedID(id)
		switch {
		case id > c.goAwayLastID:
			hb.kind = blockRefuse
		case uint32(len(c.streams)) >= c.cfg.MaxConcurrentStreams:
			hb.kind = blockRefuse
		default:
			hb.kind = blockRequest
			hb.s = c.newStream(id)
		}
	}
	if selfDep {
		hb.fail(http2.ErrCodeProtocol, "stream depends on itself")
	}
	return c.headerFragment(frag, flags.Has(http2.FlagHeadersEndHeaders))
}

// processContinuation goes on with the header block: frag is a
// CONTINUATION's payload, end its END_HEADERS.
func (c *ServerConn) processContinuation(frag []byte, end bool) error {
	if !c.hdr.active {
		return connErr{http2.ErrCodeProtocol, "CONTINUATION without HEADERS"}
	}
	return c.headerFragment(frag, end)
}

// headerFragment decodes one fragment of the current header block.
func (c *ServerConn) headerFragment(frag []byte, end bool) error {
	hb := &c.hdr
	hb.bytes += len(frag)
	if hb.bytes > c.cfg.MaxHeaderBlockBytes {
		return connErr{http2.ErrCodeEnhanceYourCalm, "header block too large"}
	}
	if len(frag) == 0 && !end {
		if err := c.glitch(); err != nil {
			return err
		}
	}
	if _, err := c.dec.Write(frag); err != nil {
		return hpackError(err)
	}
	if !end {
		return nil
	}
	hb.active = false
	if err := c.dec.Close(); err != nil {
		return hpackError(err)
	}
	return c.endHeaderBlock()
}

func hpackError(err error) error {
	if err == errHPACKStringLength {
		return connErr{http2.ErrCodeEnhanceYourCalm, "header field too large"}
	}
	return connErr{http2.ErrCodeCompression, "HPACK: " + err.Error()}
}

func (c *ServerConn) processSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		if c.settingsAckPending {
			c.settingsAckPending = false
			stopTimer(c.settingsTimer)
			c.settingsTimer = nil
		}
		return nil
	}
	if c.settingsSeen {
		if err := c.glitch(); err != nil {
			return err
		}
	}
	c.settingsSeen = true
	for i := 0; i < f.NumSettings(); i++ {
		st := f.Setting(i)
		if err := st.Valid(); err != nil {
			return connErr{http2.ErrCode(err.(http2.ConnectionError)), "invalid setting " + st.ID.String()}
		}
		switch st.ID {
		case http2.SettingHeaderTableSize:
			c.encTableSize = min(st.Val, headerTableSize)
			if c.henc != nil {
				c.forgetHead() // the next block starts with a size update
				c.henc.SetMaxDynamicTableSize(c.encTableSize)
			}
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - c.peerInitialWindow
			c.peerInitialWindow = int64(st.Val)
			for _, s := range c.streams {
				s.outWin += delta
				if s.outWin > maxWindow {
					return connErr{http2.ErrCodeFlowControl, "INITIAL_WINDOW_SIZE overflows a stream window"}
				}
				if delta > 0 {
					c.enqueue(s)
				}
			}
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = st.Val
		}
	}
	c.framer().WriteSettingsAck()
	return nil
}

func (c *ServerConn) processPing(f *http2.PingFrame) error {
	if f.IsAck() {
		// Ours (the shutdown's, the window tuner's) or unsolicited, which
		// RFC 9113 §6.7 has us ignore.
		if f.Data == shutdownPingData && c.shutdown {
			c.sendFinalGoAway()
		} else {
			c.tunePingAck(f.Data)
		}
		return nil
	}
	if err := c.glitch(); err != nil {
		return err
	}
	c.framer().WritePing(true, f.Data)
	return nil
}

// processWindowUpdate adds a WINDOW_UPDATE's increment (not 0) to the
// window of stream id (0: the connection).
func (c *ServerConn) processWindowUpdate(id uint32, inc int64) error {
	if inc < 1024 {
		// Legal but useless: each costs us a frame to parse.
		if err := c.glitch(); err != nil {
			return err
		}
	}
	if id == 0 {
		if c.outWin+inc > maxWindow {
			return connErr{http2.ErrCodeFlowControl, "connection window overflow"}
		}
		c.outWin += inc
		return nil
	}
	if id > c.maxClientID {
		return connErr{http2.ErrCodeProtocol, "WINDOW_UPDATE on an idle stream"}
	}
	s := c.streams[id]
	if s == nil {
		// Legal shortly after a stream ends, and common: not a glitch.
		return nil
	}
	if s.outWin+inc > maxWindow {
		return streamErr{id, http2.ErrCodeFlowControl, "stream window overflow"}
	}
	s.outWin += inc
	c.enqueue(s)
	return nil
}

func (c *ServerConn) processRSTStream(f *http2.RSTStreamFrame) error {
	id := f.StreamID
	if id > c.maxClientID {
		return connErr{http2.ErrCodeProtocol, "RST_STREAM on an idle stream"}
	}
	s := c.streams[id]
	if s == nil {
		return nil
	}
	early := !s.localEnded
	c.closeStream(s, closedRemoteReset, &ResetError{Code: f.ErrCode, Remote: true})
	if early && c.resets.add(c.clock.Now(), c.cfg.ResetWindow, 1) > c.cfg.MaxEarlyResets {
		return connErr{http2.ErrCodeEnhanceYourCalm, "too many streams reset (rapid reset)"}
	}
	return nil
}

func (c *ServerConn) processPriority(f *http2.PriorityFrame) error {
	// Priorities are accepted and ignored (RFC 9113 §5.3.2 deprecates them).
	if f.StreamDep == f.StreamID {
		return streamErr{f.StreamID, http2.ErrCodeProtocol, "stream depends on itself"}
	}
	return c.glitch()
}

func (c *ServerConn) processGoAway(f *http2.GoAwayFrame) error {
	// The client will open no more streams; finish the open ones, then close.
	c.startShutdown(false)
	return nil
}
