package proxy

// Tunnels to an HTTP/2 origin: a WebSocket (an HTTP/1.1 Upgrade, or an
// RFC 8441 extended CONNECT from an h2 client) to an h2c:// upstream goes
// to the origin as an extended CONNECT on a stream of a shared origin
// connection, when the origin's SETTINGS allow it
// (SETTINGS_ENABLE_CONNECT_PROTOCOL). The tunnel's bytes are DATA frames
// under flow control both ways, as a body's are: the client's window
// reopens as its bytes are framed for the origin (OnSent), and the
// stream's window as the client takes the origin's. Each direction ends
// on its own with END_STREAM. An origin that does not allow extended
// CONNECT gets the client a 502, as Caddy's (which cannot send an Upgrade
// over h2c and has no HTTP/1.1 to such an origin) does. Over TLS a
// tunnel takes an HTTP/1.1 connection without ALPN h2, as in Caddy
// (tunnel.go).

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// startH2Upgrade builds the extended CONNECT head for a request that asked
// to switch protocols. It reports false when it answered the client
// itself.
func (ex *exchange) startH2Upgrade(req *stream.Request, trusted bool) bool {
	t := &tunnelState{extended: req.Method == "CONNECT"}
	ex.tun = t
	ex.method = "CONNECT"
	if !field.UpgradeToken(req.Upgrade) {
		ex.tun = nil
		ex.end(answer(400, observe.ReasonBadProtocol, ""))
		return false
	}
	r := ex.h2Request(req, "CONNECT", trusted)
	r.Protocol = req.Upgrade
	websocket := strings.EqualFold(req.Upgrade, "websocket")
	if websocket {
		r.Protocol = "websocket" // RFC 8441 §4's token
	}
	kept := r.Header[:0]
	for _, f := range r.Header {
		if f.Name == "sec-websocket-key" {
			// An HTTP/1.1 client's key is answered by pollproxy: over
			// RFC 8441 the origin sees none and sends no Accept.
			if websocket && !t.extended {
				t.accept = webSocketAccept(f.Value)
			}
			continue
		}
		kept = append(kept, f)
	}
	r.Header = kept
	ex.h2req = r
	return true
}

// h2Switched: the origin answered the extended CONNECT with 2xx. The
// stream becomes the tunnel's and the client is told: 200 over h2, 101
// with pollproxy's Sec-WebSocket-Accept over HTTP/1.1.
func (ex *exchange) h2Switched(fields []stream.Field) {
	t, os := ex.tun, ex.os
	ex.timer.Stop()
	fields = ex.h.responseFields(fields)
	kept := fields[:0:0]
	for _, f := range fields {
		// A 2xx to CONNECT has no content (RFC 9110 §9.3.6).
		if f.Name != "content-length" && f.Name != "sec-websocket-accept" {
			kept = append(kept, f)
		}
	}
	fields = kept
	status := 200
	if !t.extended {
		status = 101
		if t.accept != "" {
			fields = append(fields, stream.Field{Name: "sec-websocket-accept", Value: t.accept})
		}
	}
	if !ex.openTunnel(status, fields) {
		return
	}
	if len(ex.early) > 0 {
		early := ex.early
		ex.early, ex.earlyBody = nil, 0
		os.cs.Write(early)
		os.hc.later()
	}
	if ex.bodyEnded && !t.clientDone {
		ex.clientEnded()
	}
}

// h2ClientEnded passes the client's end of its direction on as the
// stream's END_STREAM, once its bytes are framed.
func (os *originStream) h2ClientEnded() {
	os.cs.End(nil)
	os.hc.later()
}

// tunnelSent: the client's bytes were framed for the origin.
func (os *originStream) tunnelSent(n int) {
	ex := os.ex
	ex.tun.bytesIn += int64(n)
	ex.tunnelActive()
	ex.w.Consumed(n)
	ex.tunnelMaybeDone()
}
