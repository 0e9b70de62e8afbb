package proxy

// Tunnels: a request that asked to switch protocols (an HTTP/1.1 Upgrade,
// or an RFC 8441 extended CONNECT on h2) goes to the origin as an
// HTTP/1.1 Upgrade; when the origin answers 101 the exchange's backend
// connection leaves the pool for good and both sides become a byte
// tunnel on the loop. Backpressure is the body's: the client's window
// (h2 flow control, the h1 body window) is reopened only as bytes reach
// the origin's socket, and the origin is not read while the client is
// not taking bytes. Each direction ends on its own: the client's end
// (END_STREAM, or EOF on HTTP/1.1) shuts the origin connection's write
// side once what was queued is written, and the origin's EOF ends ours
// (END_STREAM, or close_notify and shutdown(SHUT_WR)). The tunnel is over
// when both have ended, or at the first reset on either side.

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// tunnelState is what an exchange keeps for a request that asked to
// upgrade. Whether the tunnel is open is the exchange's phase
// (phaseTunnel).
type tunnelState struct {
	extended   bool   // an h2 extended CONNECT: 200 to the client, key checked
	key        string // the Sec-WebSocket-Key pollproxy sent (extended websocket)
	accept     string // the Sec-WebSocket-Accept pollproxy answers an HTTP/1.1 client with (to an h2 origin)
	clientDone bool   // the client's direction ended
	originDone bool   // the origin's direction ended
	bytesIn    int64  // client → origin bytes written
	idx        int    // its index in the handler's tunnel set, while open
}

// webSocketGUID is RFC 6455 §1.3's.
const webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// startUpgrade builds the origin's request head for a request that asked
// to switch protocols. It reports false when it answered the client
// itself.
func (ex *exchange) startUpgrade(req *stream.Request, trusted bool) bool {
	h := ex.h
	t := &tunnelState{extended: req.Method == "CONNECT"}
	ex.tun = t
	ex.method = "GET"
	if t.extended && !field.UpgradeToken(req.Upgrade) {
		ex.tun = nil
		ex.end(answer(400, observe.ReasonBadProtocol, ""))
		return false
	}
	fs := h.requestFields(req, trusted)
	if t.extended {
		// The h2 client sends no key (RFC 8441 §5): the handshake with
		// the origin is pollproxy's, so the key is too, and the answer
		// is checked before the client hears of success.
		kept := fs[:0]
		for _, f := range fs {
			if f.Name != "sec-websocket-key" {
				kept = append(kept, f)
			}
		}
		fs = kept
		if strings.EqualFold(req.Upgrade, "websocket") {
			t.key = newWebSocketKey()
			fs = append(fs, stream.Field{Name: "sec-websocket-key", Value: t.key})
		}
	}
	fs = append(fs,
		stream.Field{Name: "connection", Value: "upgrade"},
		stream.Field{Name: "upgrade", Value: req.Upgrade})
	ex.head = h1.AppendRequestHeadFramed(make([]byte, 0, headCap), "GET", originTarget(ex.h.upstreamTarget(req)), fs, h1.LengthNone)
	ex.chunked = false
	return true
}

func newWebSocketKey() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// webSocketAccept is the Sec-WebSocket-Accept an origin must answer key
// with (RFC 6455 §4.2.2).
func webSocketAccept(key string) string {
	sum := sha1.Sum([]byte(key + webSocketGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// upgradeRefused: the origin answered an upgrade request with an ordinary
// response, which goes to the client as such. Bytes an h2 client sent
// ahead on the stream were never the origin's: they are dropped.
func (ex *exchange) upgradeRefused() {
	if n := ex.earlyBody; n > 0 {
		ex.early, ex.earlyBody = nil, 0
		ex.w.Consumed(n)
	}
	ex.tun = nil
}

// switched: the origin answered 101. The connection becomes the tunnel's
// and the client is told, after the WebSocket handshake is checked for
// an extended CONNECT.
func (ex *exchange) switched(p *h1.ResponseParser) {
	t, bc := ex.tun, ex.bc
	ex.timer.Stop()
	fields := ex.h.responseFields(p.Header())
	status := 101
	if t.extended {
		status = 200
		if t.key != "" {
			accept, ok := "", false
			kept := fields[:0]
			for _, f := range fields {
				if f.Name == "sec-websocket-accept" {
					accept, ok = f.Value, true
					continue // the h2 client never sent a key
				}
				kept = append(kept, f)
			}
			fields = kept
			if !ok || accept != webSocketAccept(t.key) {
				ex.upstreamFailed(observe.ReasonBadHandshake)
				ex.tun = nil
				ex.end(answer(502, observe.ReasonBadHandshake, ""))
				return
			}
		}
	}
	bc.becomeTunnel()
	if !ex.openTunnel(status, fields) {
		return
	}
	if len(ex.early) > 0 {
		early, n := ex.early, ex.earlyBody
		ex.early, ex.earlyBody = nil, 0
		bc.send(early, n)
	}
	if ex.bodyEnded && !t.clientDone {
		ex.clientEnded()
	}
}

// tunnelActive notes bytes moving: the idle timer starts again.
func (ex *exchange) tunnelActive() {
	if ex.h.cfg.StreamTimeout > 0 && ex.phase == phaseTunnel {
		ex.timer.Reset(ex.h.cfg.StreamTimeout)
	}
}

// clientEnded: the client ended its direction. The origin's write side is
// shut once what the client sent is written.
func (ex *exchange) clientEnded() {
	t := ex.tun
	if ex.phase != phaseTunnel || t.clientDone {
		return
	}
	t.clientDone = true
	if bc := ex.bc; bc != nil {
		bc.shutWrite()
	}
	if os := ex.os; os != nil {
		os.h2ClientEnded()
		ex.tunnelMaybeDone()
	}
}

// originEnded: the origin closed its direction (EOF); the client hears it
// as the end of ours.
func (ex *exchange) originEnded() {
	t := ex.tun
	if ex.phase != phaseTunnel || t.originDone {
		return
	}
	t.originDone = true
	ex.w.Close(nil)
	ex.tunnelMaybeDone()
}

// tunnelMaybeDone ends the tunnel once both directions have ended and
// the client's last bytes are on the origin's socket.
func (ex *exchange) tunnelMaybeDone() {
	t, bc, os := ex.tun, ex.bc, ex.os
	if ex.phase != phaseTunnel || !t.clientDone || !t.originDone || bc != nil && !bc.writeShut() ||
		os != nil && os.cs.Buffered() > 0 {
		return
	}
	// The origin's own end: ReasonNone. A stream's END_STREAM to the
	// origin goes on after it (ClientStream.Finish).
	ex.end(outcome{tell: tellNothing, reusable: os != nil})
}

// tunnelOut hands the origin's bytes to the client, and reports how many
// it took; false when the client's stream failed and the tunnel ended.
func (ex *exchange) tunnelOut(p []byte) (int, bool) {
	n, err := ex.w.Write(p)
	if err != nil {
		ex.end(resetting(stream.CodeCancel, observe.ReasonClientGone, err.Error()))
		return 0, false
	}
	ex.bytesOut += int64(n)
	return n, true
}

// readTunnel moves the origin's bytes to the client while it takes them.
// Reading stops while bytes wait (stalled), and resumes on OnWritable.
// An idle tunnel holds no read buffer: it goes back to the loop's free
// list whenever the socket is drained, so ten thousand quiet WebSockets
// cost descriptors, not 32 KiB each.
func (bc *backendConn) readTunnel() {
	for bc.phase == bcTunnel && bc.ex != nil {
		ex := bc.ex
		if bc.inStart < bc.inEnd {
			n, ok := ex.tunnelOut(bc.in[bc.inStart:bc.inEnd])
			if !ok {
				return
			}
			bc.inStart += n
			if bc.inStart < bc.inEnd {
				bc.setInterest() // stalled until OnWritable
				return
			}
			continue
		}
		if bc.eof {
			bc.release()
			bc.setInterest()
			ex.originEnded()
			return
		}
		if bc.in == nil {
			bc.in = bc.pool.h.getBuf()
		}
		bc.inStart, bc.inEnd = 0, 0
		n, err := bc.read(bc.in)
		switch {
		case n > 0:
			bc.inEnd = n
			ex.tunnelActive()
		case n == 0 && err == nil:
			bc.eof = true
		case err == unix.EAGAIN:
			bc.release()
			return
		case err == unix.EINTR:
		default:
			bc.broken(err)
			return
		}
	}
}

// tunnelWritable: the client takes bytes again. The bytes that wait go
// first, from here: while they wait the descriptor has no read interest
// (setInterest), so a kicked read event would be filtered out by the
// loop and the tunnel would stall for good. Reading then goes on until
// the socket is drained or the client stalls again, and the interest is
// brought up to date either way.
func (bc *backendConn) tunnelWritable() {
	bc.readTunnel()
	if bc.phase == bcTunnel && bc.ex != nil {
		bc.setInterest()
	}
}

// release gives an empty read buffer back to the loop's free list.
func (bc *backendConn) release() {
	if bc.in != nil && bc.inStart == bc.inEnd {
		bc.pool.h.putBuf(bc.in)
		bc.in, bc.inStart, bc.inEnd = nil, 0, 0
	}
}

// buffered reports whether bytes read from the origin wait for the
// client.
func (bc *backendConn) buffered() bool { return bc.inStart < bc.inEnd }

// shutWrite: the client ended its direction of the tunnel; ours to the
// origin is shut once what it sent is written.
func (bc *backendConn) shutWrite() {
	if bc.shut == shutOpen {
		bc.shut = shutOwed
	}
	if !bc.outWaiting() {
		bc.tunnelDrained()
	}
}

// shutStep is how far a tunnel's write side to the origin has come
// in passing on the client's half-close.
type shutStep uint8

const (
	shutOpen     shutStep = iota // the client's direction goes on
	shutOwed                     // the client's direction ended: shut ours once out drains
	shutNotified                 // TLS: close_notify queued, the socket's shutdown follows once it is written
	shutDone                     // shutdown(SHUT_WR) done
)

// writeShut reports whether the client's end of its direction reached the
// origin (shutdown(SHUT_WR)).
func (bc *backendConn) writeShut() bool { return bc.shut == shutDone }

// tunnelDrained runs when everything the client sent is on the origin's
// socket: the client's half-close is passed on now, and an idle tunnel
// keeps no large write buffer.
func (bc *backendConn) tunnelDrained() {
	ex := bc.ex
	if cap(bc.out) > 4<<10 {
		bc.out = nil
	}
	if bc.shut == shutOwed || bc.shut == shutNotified {
		if bc.shut == shutOwed && bc.halfCloseNotify() {
			// Over TLS the half-close is a close_notify, then the
			// socket's: flush writes the alert and comes back here.
			bc.shut = shutNotified
			bc.flush()
			return
		}
		bc.shut = shutDone
		bc.desc.Shutdown()
		if ex != nil {
			ex.tunnelMaybeDone()
		}
	}
}

// tunnelSet is one loop's open tunnels, counted for the metrics. A
// reload finds them, with every other exchange in flight, in the
// handler's inflight list (retire.go).
type tunnelSet struct {
	list []*exchange
}

func (s *tunnelSet) add(ex *exchange) {
	ex.tun.idx = len(s.list)
	s.list = append(s.list, ex)
}

func (s *tunnelSet) remove(ex *exchange) {
	i := ex.tun.idx
	last := len(s.list) - 1
	s.list[i] = s.list[last]
	s.list[i].tun.idx = i
	s.list[last] = nil
	s.list = s.list[:last]
}

// Tunnels reports how many tunnels are open on this handler's loop.
func (h *Handler) Tunnels() int { return len(h.tunnels.list) }

// openTunnel makes ex a tunnel, over an HTTP/1.1 origin connection or an
// h2 origin stream alike: counted among the handler's tunnels and
// reported to the observer, the client's answer (status, fields) sent,
// stream_timeout armed as the idle timer. It reports false when the
// client was gone and ex has ended.
func (ex *exchange) openTunnel(status int, fields []stream.Field) bool {
	ex.status = 101
	ex.phase = phaseTunnel
	ex.h.tunnels.add(ex)
	if to, ok := ex.h.cfg.Observer.(observe.TunnelObserver); ok {
		ex.log.Upstream = ex.pool.up.Name
		to.TunnelOpened(&ex.log)
	}
	if err := ex.w.WriteHeader(status, fields, false); err != nil {
		ex.end(resetting(stream.CodeCancel, observe.ReasonClientGone, err.Error()))
		return false
	}
	if ex.h.cfg.StreamTimeout > 0 {
		ex.arm(ex.h.cfg.StreamTimeout)
	}
	return true
}
