package h1

import "github.com/pollproxy/pollproxy/proxy/stream"

// The HTTP/1.1 side of a tunnel: after a 101 the connection carries raw
// bytes both ways, each direction ending on its own (stream's package
// doc). The request parser is done with the connection; what the client
// sends goes to the handler as body, within the same window, and the
// client's end of stream is OnBodyEnd.

var switchingHead = []byte("HTTP/1.1 101 Switching Protocols\r\n")

// startTunnel writes the 101 and switches the exchange to a tunnel. The
// Connection and Upgrade fields are the front end's, like all connection
// management: the protocol is the one the client asked for.
func (c *ServerConn) startTunnel(fields []stream.Field) {
	b := append(c.wbuf[:0], switchingHead...)
	b = appendResponseFields(b, fields)
	b = append(b, "connection: upgrade\r\nupgrade: "...)
	b = append(b, c.upgrade...)
	b = append(b, "\r\n\r\n"...)
	c.wbuf = b
	c.t.Write(b)
	c.tunnel = true
	c.resp, c.framing = rsBody, fwTunnel
	c.keepAlive = false
	c.expect = false
	c.reqDone = false
	if !c.inServe {
		c.deliver = c.ev != nil
	}
	// Bytes the client sent behind its request are the tunnel's first.
	c.wake()
}

// stepTunnel hands the client's bytes to the handler, no more than its
// window allows, and returns what it could not take yet. After the
// client's end of stream it reports OnBodyEnd once the held bytes are out.
func (c *ServerConn) stepTunnel(data []byte) []byte {
	for c.state == scActive && c.deliver {
		if len(data) == 0 {
			if c.peerEOF {
				c.deliver = false
				c.reqDone = true
				c.ev.OnBodyEnd(nil)
				c.tunnelMaybeDone()
			}
			return nil
		}
		room := c.cfg.BodyWindow - c.unconsumed
		if room <= 0 {
			return data
		}
		n := min(room, len(data))
		c.unconsumed += n
		c.ev.OnBody(data[:n])
		data = data[n:]
	}
	if c.state != scActive {
		return nil
	}
	return data
}

// PeerEOF implements stream.EOFReceiver: in a tunnel the client's end of
// stream is the end of its direction only.
func (c *ServerConn) PeerEOF() bool {
	if c.state != scActive || !c.tunnel || c.reqDone {
		return false
	}
	c.peerEOF = true
	if len(c.in) > 0 {
		// Held bytes go first; the Feed that takes them up ends the
		// direction (stepTunnel).
		c.wake()
		return true
	}
	if c.deliver {
		c.deliver = false
		c.reqDone = true
		c.ev.OnBodyEnd(nil)
	}
	c.tunnelMaybeDone()
	return true
}

// tunnelWriteDone ends the handler's direction: the transport's write
// side closes after what is queued, when it can close alone.
func (c *ServerConn) tunnelWriteDone() {
	if hc, ok := c.t.(stream.HalfCloser); ok && !c.reqDone {
		hc.CloseWrite()
		return
	}
	c.closeNow()
}

// tunnelMaybeDone closes the connection once both directions ended.
func (c *ServerConn) tunnelMaybeDone() {
	if c.state == scActive && c.reqDone && c.resp == rsDone {
		c.closeNow()
	}
}

// CarriesTunnel implements stream.TunnelCarrier: a 101 went out.
func (c *ServerConn) CarriesTunnel() bool { return c.tunnel }
