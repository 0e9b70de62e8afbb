package h2

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// clientEvents records a client stream's events.
type clientEvents struct {
	heads    []int
	fields   []stream.Field
	ended    bool
	body     bytes.Buffer
	trailers []stream.Field
	reset    http2.ErrCode
	wasReset bool
	unproc   bool
	sent     int
}

func (e *clientEvents) OnHead(status int, fields []stream.Field, end bool) {
	e.heads = append(e.heads, status)
	e.fields = fields
	e.ended = e.ended || end
}
func (e *clientEvents) OnData(p []byte)                 { e.body.Write(p) }
func (e *clientEvents) OnEnd(trailers []stream.Field)   { e.ended, e.trailers = true, trailers }
func (e *clientEvents) OnSent(n int)                    { e.sent += n }
func (e *clientEvents) OnReset(c http2.ErrCode, u bool) { e.reset, e.wasReset, e.unproc = c, true, u }

// origin writes frames as an origin would, for the client to Feed.
type origin struct {
	buf bytes.Buffer
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

func newTestOrigin() *origin {
	o := &origin{}
	o.fr = http2.NewFramer(&o.buf, nil)
	o.enc = hpack.NewEncoder(&o.hb)
	return o
}

// block encodes name, value pairs.
func (o *origin) block(kv ...string) []byte {
	o.hb.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		o.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), o.hb.Bytes()...)
}

func (o *origin) take() []byte {
	b := append([]byte(nil), o.buf.Bytes()...)
	o.buf.Reset()
	return b
}

// sent parses what the client wrote (after its preface) into frames.
func sentFrames(t *testing.T, c *ClientConn) []http2.Frame {
	t.Helper()
	out := c.Output()
	if bytes.HasPrefix(out, []byte(clientPreface)) {
		out = out[len(clientPreface):]
	}
	fr := http2.NewFramer(nil, bytes.NewReader(append([]byte(nil), out...)))
	c.Wrote(len(c.Output()))
	var fs []http2.Frame
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return fs
		}
		fs = append(fs, f)
	}
}

func rstCode(fs []http2.Frame, id uint32) (http2.ErrCode, bool) {
	for _, f := range fs {
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == id {
			return r.ErrCode, true
		}
	}
	return 0, false
}

// settled is a client connection whose origin sent SETTINGS (with
// settings), and a stream on it with its events.
func settled(t *testing.T, settings ...http2.Setting) (*ClientConn, *origin, *ClientStream, *clientEvents) {
	c := NewClientConn(ClientConfig{StreamWindow: 1 << 16})
	o := newTestOrigin()
	o.fr.WriteSettings(settings...)
	c.Feed(o.take())
	if !c.Settled() {
		t.Fatal("not settled after SETTINGS")
	}
	ev := &clientEvents{}
	s := c.Open(&Request{Method: "GET", Scheme: "http", Authority: "a.test", Path: "/"}, true, ev)
	sentFrames(t, c)
	return c, o, s, ev
}

// TestClientResponses: heads (informational, then final, split over
// CONTINUATION), padded body, trailers, and a trailers-only answer.
func TestClientResponses(t *testing.T) {
	c, o, s, ev := settled(t)
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(":status", "103", "link", "</a>"), EndHeaders: true})
	blk := o.block(":status", "200", "content-type", "text/plain", "x-long", strings.Repeat("v", 40))
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: blk[:10]})
	o.fr.WriteContinuation(s.ID(), true, blk[10:])
	o.fr.WriteDataPadded(s.ID(), false, []byte("hello "), make([]byte, 100))
	o.fr.WriteData(s.ID(), false, []byte("world"))
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block("grpc-status", "0"), EndHeaders: true, EndStream: true})
	for _, b := range o.take() { // a byte at a time: frames buffered across Feeds
		c.Feed([]byte{b})
	}
	if len(ev.heads) != 2 || ev.heads[0] != 103 || ev.heads[1] != 200 || ev.body.String() != "hello world" || !ev.ended ||
		len(ev.trailers) != 1 || ev.trailers[0] != (stream.Field{Name: "grpc-status", Value: "0"}) {
		t.Fatalf("events %+v body %q", ev, ev.body.String())
	}
	if c.Active() != 0 {
		t.Fatalf("%d streams open after the response ended", c.Active())
	}

	ev2 := &clientEvents{}
	s2 := c.Open(&Request{Method: "POST", Scheme: "http", Authority: "a.test", Path: "/svc/M"}, true, ev2)
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s2.ID(), BlockFragment: o.block(":status", "200", "grpc-status", "5"), EndHeaders: true, EndStream: true})
	c.Feed(o.take())
	if len(ev2.heads) != 1 || !ev2.ended || ev2.fields[0].Name != "grpc-status" || c.Active() != 0 {
		t.Fatalf("trailers-only: %+v", ev2)
	}
}

// TestClientMalformed: a response the client must refuse resets its
// stream (PROTOCOL_ERROR), and the connection goes on.
func TestClientMalformed(t *testing.T) {
	for _, c := range []struct {
		name  string
		block []string
		end   bool
	}{
		{"no status", []string{"content-type", "x"}, false},
		{"bad status", []string{":status", "2000"}, false},
		{"request pseudo-header", []string{":status", "200", ":path", "/"}, false},
		{"status after a field", []string{"x-a", "1", ":status", "200"}, false},
		{"connection-specific", []string{":status", "200", "connection", "close"}, false},
		{"upper-case name", []string{":status", "200", "X-A", "1"}, false},
		{"informational ending the stream", []string{":status", "100"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc, o, s, ev := settled(t)
			o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(c.block...), EndHeaders: true, EndStream: c.end})
			cc.Feed(o.take())
			code, ok := rstCode(sentFrames(t, cc), s.ID())
			if !ok || code != http2.ErrCodeProtocol || !ev.wasReset || ev.reset != http2.ErrCodeProtocol || len(ev.heads) != 0 {
				t.Fatalf("RST %v %v, events %+v", code, ok, ev)
			}
			if cc.Dead() || cc.Free() == 0 {
				t.Fatal("a stream's error ended the connection")
			}
		})
	}
}

// TestClientFlowControl: the stream's window bounds what the origin may
// send until Consumed gives it back; padding is given back at once; a
// request body goes out within the origin's windows.
func TestClientFlowControl(t *testing.T) {
	cc, o, s, ev := settled(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(":status", "200"), EndHeaders: true})
	chunk := make([]byte, 16000)
	for i := 0; i < 4; i++ {
		o.fr.WriteData(s.ID(), false, chunk) // 64000 of the 65536 window
	}
	o.fr.WriteDataPadded(s.ID(), false, []byte("x"), make([]byte, 200))
	cc.Feed(o.take())
	if ev.body.Len() != 64001 || ev.wasReset { // 64000 + 202 of the 65536 window
		t.Fatalf("body %d, reset %v", ev.body.Len(), ev.wasReset)
	}
	// The padding (and its length byte) is the stream's again; the body
	// bytes are not, until Consumed.
	if got := s.inflow.avail + s.inflow.unsent; got != 1<<16-64001 {
		t.Fatalf("stream window %d, want %d", got, 1<<16-64001)
	}
	o.fr.WriteData(s.ID(), false, make([]byte, 2000)) // over the window
	cc.Feed(o.take())
	if code, ok := rstCode(sentFrames(t, cc), s.ID()); !ok || code != http2.ErrCodeFlowControl {
		t.Fatalf("DATA past the window: RST %v %v", code, ok)
	}

	// A request body against an origin window of 10 bytes.
	ev2 := &clientEvents{}
	s2 := cc.Open(&Request{Method: "PUT", Scheme: "http", Authority: "a.test", Path: "/"}, false, ev2)
	s2.Write([]byte("0123456789abcdef"))
	s2.End(nil)
	cc.Flush()
	var got []byte
	ended := false
	for _, f := range sentFrames(t, cc) {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == s2.ID() {
			got = append(got, d.Data()...)
			ended = ended || d.StreamEnded()
		}
	}
	if string(got) != "0123456789" || ended || ev2.sent != 10 {
		t.Fatalf("sent %q ended %v OnSent %d, want the window's 10 bytes", got, ended, ev2.sent)
	}
	o.fr.WriteWindowUpdate(s2.ID(), 100)
	cc.Feed(o.take())
	got, ended = nil, false
	for _, f := range sentFrames(t, cc) {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == s2.ID() {
			got = append(got, d.Data()...)
			ended = ended || d.StreamEnded()
		}
	}
	if string(got) != "abcdef" || !ended || ev2.sent != 16 {
		t.Fatalf("after WINDOW_UPDATE: sent %q ended %v OnSent %d", got, ended, ev2.sent)
	}
}

// TestClientStreamsAndGoAway: until SETTINGS a connection takes one
// stream, then as many as they allow; a GOAWAY leaves the streams above
// its last unprocessed and the rest to finish.
func TestClientStreamsAndGoAway(t *testing.T) {
	c := NewClientConn(ClientConfig{})
	if c.Free() != 1 || c.Settled() {
		t.Fatalf("before SETTINGS: %d free", c.Free())
	}
	o := newTestOrigin()
	o.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 2})
	c.Feed(o.take())
	evs := []*clientEvents{{}, {}}
	var ss []*ClientStream
	for _, ev := range evs {
		ss = append(ss, c.Open(&Request{Method: "GET", Scheme: "http", Authority: "a", Path: "/"}, true, ev))
	}
	if c.Free() != 0 {
		t.Fatalf("%d free with 2 of 2 streams open", c.Free())
	}
	o.fr.WriteGoAway(ss[0].ID(), http2.ErrCodeNo, nil)
	c.Feed(o.take())
	if !evs[1].wasReset || !evs[1].unproc || evs[0].wasReset {
		t.Fatalf("after GOAWAY: %+v %+v", evs[0], evs[1])
	}
	if !c.Closing() || c.Free() != 0 || c.Dead() {
		t.Fatal("a GOAWAY with a stream left: closing, not dead")
	}
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: ss[0].ID(), BlockFragment: o.block(":status", "204"), EndHeaders: true, EndStream: true})
	c.Feed(o.take())
	if !evs[0].ended || !c.Dead() {
		t.Fatalf("the last stream finished: ended %v dead %v", evs[0].ended, c.Dead())
	}
}

// TestClientPing: the origin's PING is answered with its data.
func TestClientPing(t *testing.T) {
	c, o, _, _ := settled(t)
	o.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	c.Feed(o.take())
	for _, f := range sentFrames(t, c) {
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
			return
		}
	}
	t.Fatal("no PING acknowledgement")
}

// TestClientExtendedConnect: an extended CONNECT opened before the
// origin's SETTINGS waits for them, with the body written meanwhile, and
// goes once they allow it; one they do not allow is refused unsent
// (REFUSED_STREAM, unprocessed, no frame for the origin); a stream both
// of whose directions ended keeps its END_STREAM through Finish; and an
// origin that withdraws ENABLE_CONNECT_PROTOCOL is a connection error.
func TestClientExtendedConnect(t *testing.T) {
	connect := &Request{Method: "CONNECT", Protocol: "websocket", Scheme: "http", Authority: "a.test", Path: "/ws"}
	allow := http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1}

	c := NewClientConn(ClientConfig{})
	sentFrames(t, c)
	ev := &clientEvents{}
	s := c.Open(connect, false, ev)
	s.Write([]byte("early"))
	c.Flush()
	if fs := sentFrames(t, c); len(fs) != 0 {
		t.Fatalf("sent before SETTINGS: %v", fs)
	}
	o := newTestOrigin()
	o.fr.WriteSettings(allow)
	c.Feed(o.take())
	var block, data []byte
	out := c.Output()
	for len(out) >= frameHeaderLen {
		n := frameHeaderLen + frameLen(out)
		switch http2.FrameType(out[3]) {
		case http2.FrameHeaders:
			if streamID(out) == s.ID() {
				block = append(block, out[frameHeaderLen:n]...)
			}
		case http2.FrameData:
			data = append(data, out[frameHeaderLen:n]...)
		}
		out = out[n:]
	}
	c.Wrote(len(c.Output()))
	fields, _ := hpack.NewDecoder(4096, nil).DecodeFull(block)
	if string(data) != "early" || len(fields) < 5 || fields[0].Value != "CONNECT" || fields[4] != (hpack.HeaderField{Name: ":protocol", Value: "websocket"}) {
		t.Fatalf("after SETTINGS: head %v data %q", fields, data)
	}
	// Both directions end; Finish leaves the END_STREAM queued, not a reset.
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(":status", "200"), EndHeaders: true})
	o.fr.WriteData(s.ID(), true, nil)
	c.Feed(o.take())
	s.End(nil)
	s.Finish()
	c.Flush()
	fs := sentFrames(t, c)
	if _, ok := rstCode(fs, s.ID()); ok || len(fs) != 1 || !fs[0].Header().Flags.Has(http2.FlagDataEndStream) || c.Active() != 0 {
		t.Fatalf("end after Finish: %v (active %d)", fs, c.Active())
	}

	for _, settings := range [][]http2.Setting{nil, {{ID: http2.SettingEnableConnectProtocol, Val: 0}}} {
		for _, early := range []bool{true, false} {
			c := NewClientConn(ClientConfig{})
			o := newTestOrigin()
			o.fr.WriteSettings(settings...)
			ev := &clientEvents{}
			if !early {
				c.Feed(o.take())
			}
			c.Open(connect, false, ev)
			if early {
				c.Feed(o.take())
			}
			c.Flush()
			if !ev.wasReset || ev.reset != http2.ErrCodeRefusedStream || !ev.unproc || c.Active() != 0 || c.ExtendedConnect() {
				t.Fatalf("settings %v early %v: %+v", settings, early, ev)
			}
			for _, f := range sentFrames(t, c) {
				if f.Header().StreamID != 0 {
					t.Fatalf("settings %v early %v: sent %v", settings, early, f)
				}
			}
		}
	}

	c, o, _, _ = settled(t, allow)
	o.fr.WriteSettings(http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 0})
	c.Feed(o.take())
	if !c.Dead() {
		t.Fatal("withdrawn ENABLE_CONNECT_PROTOCOL: connection goes on")
	}
}

// TestClientFramesByHand: HEADERS and WINDOW_UPDATE are read by hand:
// padding and priority are skipped, the reserved bit is masked, and a
// frame that cannot be read gets the error the Framer gave it.
func TestClientFramesByHand(t *testing.T) {
	c, o, s, ev := settled(t)
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(":status", "200", "x-a", "1"), EndHeaders: true, EndStream: true,
		PadLength: 7, Priority: http2.PriorityParam{StreamDep: 0, Weight: 3}})
	c.Feed(o.take())
	if len(ev.heads) != 1 || ev.heads[0] != 200 || !ev.ended || len(ev.fields) != 1 || ev.fields[0].Value != "1" {
		t.Fatalf("padded HEADERS with priority: %+v", ev)
	}
	// The reserved bit of an increment is not part of it.
	before := c.outWin
	o.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 0, []byte{0x80, 0, 0, 10})
	c.Feed(o.take())
	if c.outWin != before+10 || c.Dead() {
		t.Fatalf("connection window %d after %d + 10", c.outWin, before)
	}

	const onStream = 1 // the test's stream, whatever its ID
	for _, tc := range []struct {
		name    string
		typ     http2.FrameType
		id      uint32
		flags   http2.Flags
		payload []byte
		goAway  bool // a connection error; else the stream's reset
		code    http2.ErrCode
	}{
		{"HEADERS on stream 0", http2.FrameHeaders, 0, http2.FlagHeadersEndHeaders, []byte{0x88}, true, http2.ErrCodeProtocol},
		{"HEADERS without its pad length", http2.FrameHeaders, onStream, http2.FlagHeadersEndHeaders | http2.FlagHeadersPadded, nil, true, http2.ErrCodeFrameSize},
		{"HEADERS with a short priority", http2.FrameHeaders, onStream, http2.FlagHeadersEndHeaders | http2.FlagHeadersPriority, []byte{0, 0, 0}, true, http2.ErrCodeFrameSize},
		{"HEADERS padded past its payload", http2.FrameHeaders, onStream, http2.FlagHeadersEndHeaders | http2.FlagHeadersPadded, []byte{5, 0x88}, true, http2.ErrCodeProtocol},
		{"WINDOW_UPDATE of 3 bytes", http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 1}, true, http2.ErrCodeFrameSize},
		{"WINDOW_UPDATE of 0 on the connection", http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0}, true, http2.ErrCodeProtocol},
		{"WINDOW_UPDATE of 0 on a stream", http2.FrameWindowUpdate, onStream, 0, []byte{0x80, 0, 0, 0}, false, http2.ErrCodeProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o, s, ev := settled(t)
			id := tc.id
			if id == onStream {
				id = s.ID()
			}
			o.fr.WriteRawFrame(tc.typ, tc.flags, id, tc.payload)
			c.Feed(o.take())
			fs := sentFrames(t, c)
			if !tc.goAway {
				code, ok := rstCode(fs, id)
				if !ok || code != tc.code || !ev.wasReset || c.Dead() {
					t.Fatalf("RST %v %v, events %+v, dead %v: want the stream reset with %v", ok, code, ev, c.Dead(), tc.code)
				}
				return
			}
			var code http2.ErrCode
			found := false
			for _, f := range fs {
				if g, ok := f.(*http2.GoAwayFrame); ok {
					code, found = g.ErrCode, true
				}
			}
			if !found || code != tc.code || !c.Dead() {
				t.Fatalf("GOAWAY %v %v, dead %v: want %v", found, code, c.Dead(), tc.code)
			}
		})
	}
}
