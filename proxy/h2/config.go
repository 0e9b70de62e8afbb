package h2

import (
	"cmp"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Config holds the limits of one HTTP/2 server connection. The zero value of
// every field means "use the default" listed next to it.
type Config struct {
	// Scheme is reported as stream.Request.Scheme: "https" when the
	// connection arrived over TLS, "http" for cleartext (h2c). Default "https".
	Scheme string
	// TLS is reported as stream.Request.TLS: the connection's TLS, nil
	// for none.
	TLS *stream.TLSState

	// MaxConcurrentStreams is advertised as SETTINGS_MAX_CONCURRENT_STREAMS.
	// A HEADERS frame that would open one more stream is answered with
	// RST_STREAM(REFUSED_STREAM). Default 100.
	MaxConcurrentStreams uint32

	// StreamWindow is the receive window of each stream, advertised as
	// SETTINGS_INITIAL_WINDOW_SIZE. It bounds the request body bytes a
	// handler may hold without calling Consumed. Default 1 MiB.
	StreamWindow uint32

	// ConnWindow is the receive window of the whole connection, raised from
	// the protocol's 65535 with a WINDOW_UPDATE right after our SETTINGS.
	// Default 2 MiB. Both windows are where a connection starts: they grow
	// with the measured bandwidth-delay product up to MaxConnWindow.
	ConnWindow uint32

	// MaxConnWindow bounds receive-window autotuning (window.go): the
	// connection window, and with it every stream window, grows only up
	// to it. Default 32 MiB. A window must cover the path's
	// bandwidth-delay product plus the time the credit takes to come
	// back, which here includes the origin's write: 16 MiB (gRPC's limit,
	// about Chromium's 15 MiB session window) held a 50 ms upload under
	// what HTTP/1.1 reaches through pollproxy (docs/performance.md); 32
	// MiB leaves room. It is also the request
	// body bytes one connection can make pollproxy hold when its origin
	// reads slower than the client sends, which WindowBudget bounds across
	// connections. Set it to ConnWindow (or lower) to turn autotuning off.
	MaxConnWindow uint32

	// WindowBudget is shared by the connections that may grow their
	// window: growth beyond ConnWindow is taken from it and given back
	// when the connection ends, so many connections cannot each claim
	// MaxConnWindow. A connection holding some with no stream open goes
	// away (GOAWAY) two seconds after another was refused a grant, as at
	// its IdleTimeout, so that finished uploads do not keep the budget
	// from new ones. Default (nil): DefaultWindowBudget(), one per
	// process.
	WindowBudget *WindowBudget

	// MaxHeaderListSize bounds a decoded request header (or trailer) list,
	// counted as in RFC 9113 §6.5.2 (name + value + 32 per field). It is
	// advertised as SETTINGS_MAX_HEADER_LIST_SIZE. A larger request is
	// answered with 431; a single field over twice the limit closes the
	// connection (ENHANCE_YOUR_CALM). Default 64 KiB.
	MaxHeaderListSize uint32

	// MaxHeaderBlockBytes bounds the encoded bytes of one header block,
	// HEADERS plus all its CONTINUATION frames. Past it the connection is
	// closed with ENHANCE_YOUR_CALM: the CONTINUATION-flood defence.
	// Default 2 × MaxHeaderListSize.
	MaxHeaderBlockBytes int

	// StreamSendBuffer bounds the response body bytes queued per stream
	// (ResponseWriter.Write accepts no more). Default 64 KiB.
	StreamSendBuffer int

	// HighWater: DATA frames are produced only while the transport's
	// buffered output is below it. Default 256 KiB.
	HighWater int

	// MaxBufferedOutput: when the transport's buffered output grows past it
	// (a client that sends frames needing answers but never reads them), the
	// connection is closed. Default 4 × HighWater.
	MaxBufferedOutput int

	// SettingsTimeout is how long the client has to acknowledge our
	// SETTINGS before GOAWAY(SETTINGS_TIMEOUT). Default 10 s.
	SettingsTimeout time.Duration

	// NoExtendedConnect turns RFC 8441 off: SETTINGS_ENABLE_CONNECT_PROTOCOL
	// is not advertised, and a request with :protocol is malformed. For
	// clients that misbehave with it; on by default.
	NoExtendedConnect bool

	// IdleTimeout closes (gracefully) a connection that had no open stream
	// for that long. Default 2 min: an idle connection costs memory and a
	// descriptor, and nginx closes after 75 s; a client reconnects at the
	// price of a handshake. Negative disables it.
	IdleTimeout time.Duration

	// ShutdownPingTimeout is how long the first (advisory) GOAWAY of a
	// graceful shutdown waits for the client's PING acknowledgement before
	// the final GOAWAY names the last stream. Default 1 s.
	ShutdownPingTimeout time.Duration

	// MaxEarlyResets is the number of streams the client may reset before
	// their response completed within ResetWindow before the connection is
	// closed with ENHANCE_YOUR_CALM (Rapid Reset, CVE-2023-44487).
	// Default 200 per 10 s.
	MaxEarlyResets int
	ResetWindow    time.Duration

	// MaxGlitches is the number of suspicious but legal frames (PING,
	// SETTINGS beyond the first, empty DATA/CONTINUATION, PRIORITY, unknown
	// frames, tiny or useless WINDOW_UPDATEs, frames causing stream errors)
	// tolerated within GlitchWindow before ENHANCE_YOUR_CALM.
	// Default 1000 per 10 s.
	MaxGlitches  int
	GlitchWindow time.Duration
}

const (
	defaultMaxConcurrentStreams = 100
	defaultStreamWindow         = 1 << 20
	defaultConnWindow           = 2 << 20
	defaultMaxHeaderListSize    = 64 << 10
	defaultStreamSendBuffer     = 64 << 10
	defaultHighWater            = 256 << 10
	defaultSettingsTimeout      = 10 * time.Second
	defaultIdleTimeout          = 2 * time.Minute
	defaultShutdownPingTimeout  = time.Second
	defaultMaxEarlyResets       = 200
	defaultResetWindow          = 10 * time.Second
	defaultMaxGlitches          = 1000
	defaultGlitchWindow         = 10 * time.Second

	maxWindow = 1<<31 - 1
)

// withDefaults returns c with every zero field set to its default and the
// others clamped to what the protocol allows. cmp.Or(max(v, 0), d) gives a
// negative setting its default too; IdleTimeout keeps a negative value,
// which disables it.
func (c Config) withDefaults() Config {
	c.Scheme = cmp.Or(c.Scheme, "https")
	c.MaxConcurrentStreams = cmp.Or(c.MaxConcurrentStreams, defaultMaxConcurrentStreams)
	c.StreamWindow = cmp.Or(c.StreamWindow, defaultStreamWindow)
	if c.StreamWindow > maxWindow {
		c.StreamWindow = maxWindow
	}
	c.ConnWindow = cmp.Or(c.ConnWindow, defaultConnWindow)
	if c.ConnWindow < initialWindow {
		c.ConnWindow = initialWindow
	}
	if c.ConnWindow > maxWindow {
		c.ConnWindow = maxWindow
	}
	c.MaxConnWindow = cmp.Or(c.MaxConnWindow, defaultMaxConnWindow)
	c.MaxConnWindow = min(max(c.MaxConnWindow, c.ConnWindow), maxWindow)
	if c.WindowBudget == nil {
		c.WindowBudget = defaultWindowBudget
	}
	c.MaxHeaderListSize = cmp.Or(c.MaxHeaderListSize, defaultMaxHeaderListSize)
	c.MaxHeaderBlockBytes = cmp.Or(max(c.MaxHeaderBlockBytes, 0), 2*int(c.MaxHeaderListSize))
	c.StreamSendBuffer = cmp.Or(max(c.StreamSendBuffer, 0), defaultStreamSendBuffer)
	c.HighWater = cmp.Or(max(c.HighWater, 0), defaultHighWater)
	c.MaxBufferedOutput = cmp.Or(max(c.MaxBufferedOutput, 0), 4*c.HighWater)
	c.SettingsTimeout = cmp.Or(max(c.SettingsTimeout, 0), defaultSettingsTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, defaultIdleTimeout)
	c.ShutdownPingTimeout = cmp.Or(max(c.ShutdownPingTimeout, 0), defaultShutdownPingTimeout)
	c.MaxEarlyResets = cmp.Or(max(c.MaxEarlyResets, 0), defaultMaxEarlyResets)
	c.ResetWindow = cmp.Or(max(c.ResetWindow, 0), defaultResetWindow)
	c.MaxGlitches = cmp.Or(max(c.MaxGlitches, 0), defaultMaxGlitches)
	c.GlitchWindow = cmp.Or(max(c.GlitchWindow, 0), defaultGlitchWindow)
	return c
}
