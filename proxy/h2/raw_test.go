package h2

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// rawClient speaks frames to the server, hostile ones included.
type rawClient struct {
	t    testing.TB
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	ebuf bytes.Buffer
	ts   *testServer
	// allowRST lets expectGoAway skip RST_STREAM frames.
	allowRST bool
}

func newRaw(t testing.TB, h stream.Handler, cfg Config, settings ...http2.Setting) *rawClient {
	t.Helper()
	return newRawSplit(t, h, cfg, -1, settings...)
}

// newRawSplit is newRaw over TCP, the server fed in pieces of at most
// splitMax bytes (0: as read); splitMax -1 is newRaw's in-memory pipe.
func newRawSplit(t testing.TB, h stream.Handler, cfg Config, splitMax int, settings ...http2.Setting) *rawClient {
	t.Helper()
	conn, ts := startServer(t, h, cfg, splitMax >= 0, max(splitMax, 0))
	rc := &rawClient{t: t, conn: conn, ts: ts}
	rc.fr = http2.NewFramer(conn, conn)
	rc.fr.AllowIllegalWrites = true
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rc.enc = hpack.NewEncoder(&rc.ebuf)
	rc.deadline()
	if _, err := io.WriteString(conn, clientPreface); err != nil {
		t.Fatal(err)
	}
	rc.fr.WriteSettings(settings...)
	// Server preface: SETTINGS, WINDOW_UPDATE, then the ACK of ours.
	gotAck, gotSettings := false, false
	for !gotAck || !gotSettings {
		f := rc.read()
		if sf, ok := f.(*http2.SettingsFrame); ok {
			if sf.IsAck() {
				gotAck = true
			} else {
				gotSettings = true
				rc.fr.WriteSettingsAck()
			}
		}
	}
	return rc
}

func (rc *rawClient) deadline() {
	rc.conn.SetDeadline(time.Now().Add(5 * time.Second))
}

func (rc *rawClient) read() http2.Frame {
	rc.t.Helper()
	rc.deadline()
	f, err := rc.fr.ReadFrame()
	if err != nil {
		rc.t.Fatalf("read frame: %v", err)
	}
	return f
}

// block HPACK-encodes name/value pairs.
func (rc *rawClient) block(kv ...string) []byte {
	rc.ebuf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), rc.ebuf.Bytes()...)
}

var getReq = []string{":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", "/"}

func (rc *rawClient) headers(id uint32, end bool, kv ...string) {
	rc.deadline()
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block(kv...), EndStream: end, EndHeaders: true})
}

func (rc *rawClient) get(id uint32, end bool, extra ...string) {
	rc.headers(id, end, append(append([]string(nil), getReq...), extra...)...)
}

func (rc *rawClient) raw(typ http2.FrameType, flags http2.Flags, id uint32, payload []byte) {
	rc.deadline()
	rc.fr.WriteRawFrame(typ, flags, id, payload)
}

// expectGoAway reads until GOAWAY and checks its code and the close after.
func (rc *rawClient) expectGoAway(code http2.ErrCode) {
	rc.t.Helper()
	for {
		rc.deadline()
		f, err := rc.fr.ReadFrame()
		if err != nil {
			rc.t.Fatalf("no GOAWAY(%v): %v", code, err)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			if f.ErrCode != code {
				rc.t.Fatalf("GOAWAY %v (%s), want %v", f.ErrCode, f.DebugData(), code)
			}
			rc.expectClosed()
			return
		case *http2.RSTStreamFrame:
			if !rc.allowRST {
				rc.t.Fatalf("RST_STREAM %v on %d, want GOAWAY(%v)", f.ErrCode, f.StreamID, code)
			}
		}
	}
}

func (rc *rawClient) expectClosed() {
	rc.t.Helper()
	for {
		rc.deadline()
		_, err := rc.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				rc.t.Fatal("connection not closed")
			}
			return
		}
	}
}

// expectRST reads until RST_STREAM on id.
func (rc *rawClient) expectRST(id uint32, code http2.ErrCode) {
	rc.t.Helper()
	for {
		switch f := rc.read().(type) {
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				if f.ErrCode != code {
					rc.t.Fatalf("RST_STREAM %v on %d, want %v", f.ErrCode, id, code)
				}
				return
			}
		case *http2.GoAwayFrame:
			rc.t.Fatalf("GOAWAY %v (%s), want RST_STREAM(%v) on %d", f.ErrCode, f.DebugData(), code, id)
		}
	}
}

// expectStatus reads until the response head of id.
func (rc *rawClient) expectStatus(id uint32) (string, *http2.MetaHeadersFrame) {
	rc.t.Helper()
	for {
		switch f := rc.read().(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				return f.PseudoValue("status"), f
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				rc.t.Fatalf("RST_STREAM %v on %d, want a response", f.ErrCode, id)
			}
		case *http2.GoAwayFrame:
			rc.t.Fatalf("GOAWAY %v (%s), want a response on %d", f.ErrCode, f.DebugData(), id)
		}
	}
}

// ping checks the connection is alive and everything before it answered.
func (rc *rawClient) ping() {
	rc.t.Helper()
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	rc.fr.WritePing(false, data)
	for {
		switch f := rc.read().(type) {
		case *http2.PingFrame:
			if f.IsAck() && f.Data == data {
				return
			}
		case *http2.GoAwayFrame:
			rc.t.Fatalf("GOAWAY %v (%s) instead of PING ack", f.ErrCode, f.DebugData())
		}
	}
}

func okHandler() stream.Handler {
	return handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, nil, false)
		w.Write([]byte("ok"))
		w.Close(nil)
		return nil
	})
}

// holdHandler never answers on its own.
func holdHandler(ws *[]stream.ResponseWriter) stream.Handler {
	return handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		if ws != nil {
			*ws = append(*ws, w)
		}
		return &events{}
	})
}

func TestRequestValidation(t *testing.T) {
	base := func(extra ...string) []string { return append(append([]string(nil), getReq...), extra...) }
	cases := []struct {
		name string
		kv   []string
		want string // "" for RST_STREAM(PROTOCOL_ERROR), else the status
	}{
		{"ok", base(), "200"},
		{"missing method", []string{":scheme", "https", ":path", "/"}, ""},
		{"missing path", []string{":method", "GET", ":scheme", "https"}, ""},
		{"missing scheme", []string{":method", "GET", ":path", "/"}, ""},
		{"empty path", []string{":method", "GET", ":scheme", "https", ":path", ""}, ""},
		{"relative path", []string{":method", "GET", ":scheme", "https", ":path", "a"}, ""},
		{"asterisk GET", []string{":method", "GET", ":scheme", "https", ":path", "*"}, ""},
		{"asterisk OPTIONS", []string{":method", "OPTIONS", ":scheme", "https", ":path", "*", ":authority", "a"}, "200"},
		{"path with space", []string{":method", "GET", ":scheme", "https", ":path", "/a b"}, ""},
		{"duplicate path", base(":path", "/x"), ""},
		{"unknown pseudo", []string{":method", "GET", ":scheme", "https", ":path", "/", ":foo", "x"}, ""},
		{"response pseudo", []string{":method", "GET", ":scheme", "https", ":path", "/", ":status", "200"}, ""},
		{"protocol pseudo on GET", []string{":method", "GET", ":protocol", "websocket", ":scheme", "https", ":path", "/", ":authority", "a"}, ""},
		{"extended CONNECT without path", []string{":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":authority", "a"}, ""},
		{"extended CONNECT bad protocol", []string{":method", "CONNECT", ":protocol", "web socket", ":scheme", "https", ":path", "/", ":authority", "a"}, ""},
		{"pseudo after regular", []string{":method", "GET", ":scheme", "https", "x-a", "1", ":path", "/"}, ""},
		{"uppercase name", base("X-Foo", "1"), ""},
		{"space in name", base("x foo", "1"), ""},
		{"empty name", base("", "1"), ""},
		{"connection", base("connection", "close"), ""},
		{"proxy-connection", base("proxy-connection", "x"), ""},
		{"keep-alive", base("keep-alive", "5"), ""},
		{"transfer-encoding", base("transfer-encoding", "chunked"), ""},
		{"upgrade", base("upgrade", "h2c"), ""},
		{"te gzip", base("te", "gzip"), ""},
		{"te trailers", base("te", "trailers"), "200"},
		{"value NUL", base("x-a", "a\x00b"), ""},
		{"value CR", base("x-a", "a\rb"), ""},
		{"value LF", base("x-a", "a\nb"), ""},
		{"value leading space", base("x-a", " a"), ""},
		{"value trailing tab", base("x-a", "a\t"), ""},
		{"value inner space", base("x-a", "a b"), "200"},
		{"content-length letters", base("content-length", "12a"), ""},
		{"content-length negative", base("content-length", "-1"), ""},
		{"content-length without body", base("content-length", "3"), ""},
		{"content-length conflicting", append(append([]string(nil), getReq...), "content-length", "0", "content-length", "1"), ""},
		{"host differs", base("host", "b.test"), ""},
		{"host same", base("host", "a.test"), "200"},
		{"userinfo", []string{":method", "GET", ":scheme", "https", ":authority", "u@a", ":path", "/"}, ""},
		{"connect no authority", []string{":method", "CONNECT"}, ""},
		{"connect with path", []string{":method", "CONNECT", ":authority", "a:443", ":path", "/"}, ""},
		{"connect", []string{":method", "CONNECT", ":authority", "a:443"}, "405"},
		{"bad method", []string{":method", "G T", ":scheme", "https", ":path", "/"}, ""},
	}
	rc := newRaw(t, okHandler(), Config{})
	id := uint32(1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc.t = t
			rc.headers(id, true, tc.kv...)
			if tc.want == "" {
				rc.expectRST(id, http2.ErrCodeProtocol)
			} else if st, _ := rc.expectStatus(id); st != tc.want {
				t.Fatalf("status %s, want %s", st, tc.want)
			}
			rc.ping()
		})
		id += 2
	}
}

func TestTrailersValidation(t *testing.T) {
	var ws []stream.ResponseWriter
	rc := newRaw(t, holdHandler(&ws), Config{})
	rc.get(1, false)
	rc.headers(1, true, ":path", "/")
	rc.expectRST(1, http2.ErrCodeProtocol)
	rc.get(3, false)
	rc.headers(3, false, "x-t", "1") // trailers must end the stream
	rc.expectRST(3, http2.ErrCodeProtocol)
	rc.get(5, false, "content-length", "4")
	rc.fr.WriteData(5, false, []byte("abc"))
	rc.headers(5, true, "x-t", "1")
	rc.expectRST(5, http2.ErrCodeProtocol)
	rc.get(7, false, "content-length", "2")
	rc.fr.WriteData(7, true, []byte("abc"))
	rc.expectRST(7, http2.ErrCodeProtocol)
	rc.ping()
}

type connCase struct {
	name string
	cfg  Config
	run  func(rc *rawClient)
	h    stream.Handler // default: holdHandler
}

func TestConnectionErrors(t *testing.T) {
	cases := []connCase{
		{"even stream", Config{}, func(rc *rawClient) {
			rc.get(2, true)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"lower stream id", Config{}, func(rc *rawClient) {
			rc.get(5, true)
			rc.expectStatus(5)
			rc.get(3, true)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, okHandler()},
		{"HEADERS on closed stream", Config{}, func(rc *rawClient) {
			rc.get(1, true)
			rc.expectStatus(1)
			rc.get(1, true)
			rc.expectGoAway(http2.ErrCodeStreamClosed)
		}, okHandler()},
		{"DATA on closed stream", Config{}, func(rc *rawClient) {
			rc.get(1, true)
			rc.expectStatus(1)
			rc.ping()
			rc.fr.WriteData(1, true, []byte("x"))
			rc.expectGoAway(http2.ErrCodeStreamClosed)
		}, okHandler()},
		{"DATA on idle stream", Config{}, func(rc *rawClient) {
			rc.fr.WriteData(1, true, []byte("x"))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"RST_STREAM on idle stream", Config{}, func(rc *rawClient) {
			rc.fr.WriteRSTStream(1, http2.ErrCodeCancel)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"WINDOW_UPDATE on idle stream", Config{}, func(rc *rawClient) {
			rc.fr.WriteWindowUpdate(1, 10)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"CONTINUATION without HEADERS", Config{}, func(rc *rawClient) {
			rc.fr.WriteContinuation(1, true, rc.block(getReq...))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"CONTINUATION after END_HEADERS", Config{}, func(rc *rawClient) {
			rc.get(1, false)
			rc.fr.WriteContinuation(1, true, rc.block("x-a", "1"))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"DATA inside a header block", Config{}, func(rc *rawClient) {
			rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq...)})
			rc.fr.WriteData(1, true, []byte("x"))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"CONTINUATION on another stream", Config{}, func(rc *rawClient) {
			rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq...)})
			rc.fr.WriteContinuation(3, true, nil)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"SETTINGS length", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameSettings, 0, 0, []byte{0, 1, 0, 0, 0})
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"SETTINGS ACK with payload", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameSettings, http2.FlagSettingsAck, 0, []byte{0, 1, 0, 0, 0, 0})
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"SETTINGS on a stream", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameSettings, 0, 1, nil)
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"PING length", Config{}, func(rc *rawClient) {
			rc.raw(http2.FramePing, 0, 0, make([]byte, 7))
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"PING on a stream", Config{}, func(rc *rawClient) {
			rc.raw(http2.FramePing, 0, 1, make([]byte, 8))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"WINDOW_UPDATE length", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameWindowUpdate, 0, 0, make([]byte, 3))
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"RST_STREAM length", Config{}, func(rc *rawClient) {
			rc.get(1, false)
			rc.raw(http2.FrameRSTStream, 0, 1, make([]byte, 3))
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"GOAWAY on a stream", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameGoAway, 0, 1, make([]byte, 8))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"DATA too large", Config{}, func(rc *rawClient) {
			rc.get(1, false)
			rc.raw(http2.FrameData, 0, 1, make([]byte, 16385))
			rc.expectGoAway(http2.ErrCodeFrameSize)
		}, nil},
		{"ENABLE_PUSH 2", Config{}, func(rc *rawClient) {
			rc.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 2})
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"INITIAL_WINDOW_SIZE too large", Config{}, func(rc *rawClient) {
			rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
			rc.expectGoAway(http2.ErrCodeFlowControl)
		}, nil},
		{"MAX_FRAME_SIZE too small", Config{}, func(rc *rawClient) {
			rc.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 100})
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"PUSH_PROMISE", Config{}, func(rc *rawClient) {
			rc.get(1, false)
			rc.raw(http2.FramePushPromise, http2.FlagPushPromiseEndHeaders, 1, append([]byte{0, 0, 0, 2}, rc.block(getReq...)...))
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"HPACK garbage", Config{}, func(rc *rawClient) {
			rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, EndHeaders: true})
			rc.expectGoAway(http2.ErrCodeCompression)
		}, nil},
		{"HPACK truncated", Config{}, func(rc *rawClient) {
			b := rc.block(append(getReq, "x-a", "a-literal-value")...)
			rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:len(b)-3], EndHeaders: true})
			rc.expectGoAway(http2.ErrCodeCompression)
		}, nil},
		{"HEADERS padding too long", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameHeaders, http2.FlagHeadersPadded|http2.FlagHeadersEndHeaders, 1, []byte{10, 1, 2})
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"connection window 0 increment", Config{}, func(rc *rawClient) {
			rc.raw(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0})
			rc.expectGoAway(http2.ErrCodeProtocol)
		}, nil},
		{"connection window overflow", Config{}, func(rc *rawClient) {
			rc.fr.WriteWindowUpdate(0, 1<<31-1)
			rc.expectGoAway(http2.ErrCodeFlowControl)
		}, nil},
		{"connection receive window", Config{StreamWindow: 1 << 20, ConnWindow: 65535}, func(rc *rawClient) {
			rc.get(1, false)
			rc.get(3, false)
			chunk := make([]byte, 16384)
			for i := 0; i < 3; i++ {
				rc.fr.WriteData(1, false, chunk)
			}
			rc.fr.WriteData(3, false, chunk)
			rc.expectGoAway(http2.ErrCodeFlowControl)
		}, nil},
		{"settings timeout", Config{SettingsTimeout: 50 * time.Millisecond}, nil, nil},
		{"idle timeout", Config{IdleTimeout: 50 * time.Millisecond}, func(rc *rawClient) {
			rc.ts.advance(49 * time.Millisecond)
			rc.ping() // not yet
			rc.ts.advance(time.Millisecond)
			rc.expectGoAway(http2.ErrCodeNo)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.run == nil { // settings timeout: never ACK
				conn, ts := startServer(t, okHandler(), tc.cfg, false, 0)
				rc := &rawClient{t: t, conn: conn, fr: http2.NewFramer(conn, conn)}
				io.WriteString(conn, clientPreface)
				rc.fr.WriteSettings()
				ts.advance(tc.cfg.SettingsTimeout)
				rc.expectGoAway(http2.ErrCodeSettingsTimeout)
				return
			}
			h := tc.h
			if h == nil {
				h = holdHandler(nil)
			}
			tc.run(newRaw(t, h, tc.cfg))
		})
	}
}

func TestStreamErrors(t *testing.T) {
	var ws []stream.ResponseWriter
	rc := newRaw(t, holdHandler(&ws), Config{StreamWindow: 65535, MaxConcurrentStreams: 4})
	// DATA after END_STREAM: half-closed (remote).
	rc.get(1, true)
	rc.fr.WriteData(1, false, []byte("x"))
	rc.expectRST(1, http2.ErrCodeStreamClosed)
	// HEADERS after END_STREAM.
	rc.get(3, true)
	rc.headers(3, true, "x-t", "1")
	rc.expectRST(3, http2.ErrCodeStreamClosed)
	// DATA after the client's own RST_STREAM.
	rc.get(5, false)
	rc.fr.WriteRSTStream(5, http2.ErrCodeCancel)
	rc.fr.WriteData(5, false, []byte("x"))
	rc.expectRST(5, http2.ErrCodeStreamClosed)
	// Self-dependency, in HEADERS and PRIORITY.
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: rc.block(getReq...), EndHeaders: true,
		EndStream: true, Priority: http2.PriorityParam{StreamDep: 7, Weight: 1}})
	rc.expectRST(7, http2.ErrCodeProtocol)
	rc.get(9, false)
	rc.fr.WritePriority(9, http2.PriorityParam{StreamDep: 9})
	rc.expectRST(9, http2.ErrCodeProtocol)
	// PRIORITY of the wrong length: a stream error.
	rc.get(11, false)
	rc.raw(http2.FramePriority, 0, 11, make([]byte, 4))
	rc.expectRST(11, http2.ErrCodeFrameSize)
	// PRIORITY for another stream is fine.
	rc.fr.WritePriority(13, http2.PriorityParam{StreamDep: 1, Weight: 3})
	// WINDOW_UPDATE with 0 and overflowing.
	rc.get(15, false)
	rc.raw(http2.FrameWindowUpdate, 0, 15, []byte{0, 0, 0, 0})
	rc.expectRST(15, http2.ErrCodeProtocol)
	rc.get(17, false)
	rc.fr.WriteWindowUpdate(17, 1<<31-1)
	rc.expectRST(17, http2.ErrCodeFlowControl)
	// DATA beyond the stream window.
	rc.get(19, false)
	chunk := make([]byte, 16384)
	for i := 0; i < 4; i++ {
		rc.fr.WriteData(19, false, chunk)
	}
	rc.fr.WriteData(19, false, []byte("xx"))
	rc.expectRST(19, http2.ErrCodeFlowControl)
	// Unknown frame types are ignored.
	rc.raw(0x42, 0, 0, []byte("hello"))
	rc.ping()
	// Too many concurrent streams: REFUSED_STREAM.
	for id := uint32(21); id <= 29; id += 2 {
		rc.get(id, false)
	}
	rc.expectRST(29, http2.ErrCodeRefusedStream)
	rc.ping()
}

// syncData pings and collects the DATA that arrives before the ack.
func (rc *rawClient) syncData(got *[]byte) {
	rc.t.Helper()
	data := [8]byte{8, 7, 6, 5, 4, 3, 2, 1}
	rc.fr.WritePing(false, data)
	for {
		switch f := rc.read().(type) {
		case *http2.DataFrame:
			if len(f.Data()) > 16384 {
				rc.t.Fatalf("DATA of %d bytes", len(f.Data()))
			}
			*got = append(*got, f.Data()...)
		case *http2.PingFrame:
			if f.IsAck() && f.Data == data {
				return
			}
		}
	}
}

func TestFlowControlOut(t *testing.T) {
	body := pattern(200 << 10)
	rc := newRaw(t, staticHandler(body), Config{}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	rc.fr.WriteWindowUpdate(0, 10<<20)
	rc.get(1, true)
	if st, _ := rc.expectStatus(1); st != "200" {
		t.Fatal(st)
	}
	var got []byte
	rc.syncData(&got)
	if len(got) != 0 {
		t.Fatalf("%d bytes of DATA beyond a zero window", len(got))
	}
	rc.fr.WriteWindowUpdate(1, 1000)
	rc.syncData(&got)
	if len(got) != 1000 {
		t.Fatalf("got %d bytes for a 1000-byte window", len(got))
	}
	// INITIAL_WINDOW_SIZE 0 → 3000 opens 3000 more; 3000 → 0 then makes the
	// window -3000 once they are sent: 3500 more allows 500.
	rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 3000})
	rc.syncData(&got)
	if len(got) != 4000 {
		t.Fatalf("got %d bytes, want 4000", len(got))
	}
	rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	rc.fr.WriteWindowUpdate(1, 3500)
	rc.syncData(&got)
	if len(got) != 4500 {
		t.Fatalf("got %d bytes, want 4500", len(got))
	}
	rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	for len(got) < len(body) {
		rc.syncData(&got)
	}
	if !bytes.Equal(got, body) {
		t.Fatal("body differs")
	}
}

func TestLargeHeadersUseContinuation(t *testing.T) {
	big := string(bytes.Repeat([]byte("v"), 40000))
	h := handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, []stream.Field{{Name: "x-big", Value: big}}, true)
		return nil
	})
	rc := newRaw(t, h, Config{})
	rc.fr.ReadMetaHeaders.SetMaxStringLength(1 << 20)
	rc.fr.MaxHeaderListSize = 1 << 20
	rc.get(1, true)
	_, mh := rc.expectStatus(1)
	var v string
	for _, f := range mh.RegularFields() {
		if f.Name == "x-big" {
			v = f.Value
		}
	}
	if v != big {
		t.Fatalf("x-big of %d bytes", len(v))
	}
}

func TestShutdownTwoStep(t *testing.T) {
	var ws []stream.ResponseWriter
	rc := newRaw(t, holdHandler(&ws), Config{})
	rc.get(1, false)
	rc.ping()
	rc.ts.lock(rc.ts.sc.Shutdown)
	f := rc.read().(*http2.GoAwayFrame)
	if f.ErrCode != http2.ErrCodeNo || f.LastStreamID != 1<<31-1 {
		t.Fatalf("first GOAWAY %v %d", f.ErrCode, f.LastStreamID)
	}
	p := rc.read().(*http2.PingFrame)
	rc.get(3, true) // still accepted: sent before the final GOAWAY
	rc.fr.WritePing(true, p.Data)
	for {
		if g, ok := rc.read().(*http2.GoAwayFrame); ok {
			if g.LastStreamID != 3 {
				t.Fatalf("final GOAWAY last stream %d", g.LastStreamID)
			}
			break
		}
	}
	rc.get(5, true)
	rc.expectRST(5, http2.ErrCodeRefusedStream)
	rc.ts.lock(func() {
		for _, w := range ws {
			w.WriteHeader(204, nil, true)
		}
	})
	rc.expectStatus(1)
	rc.expectClosed()
}
