package observe

import (
	"net/netip"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// RequestLog describes one finished request, for access logs and metrics.
// It is handed to the Observer on the loop and must not be kept: the
// observer copies what it needs.
type RequestLog struct {
	Loop      int
	Poller    string // the loop's poller backend: the A/B label
	Proto     string
	Method    string
	Authority string
	Path      string
	Remote    netip.AddrPort
	Upstream  string // "" when no upstream was reached
	Status    int    // 0 when the stream was reset after the head
	BytesOut  int64  // response body bytes handed to the client
	Start     time.Time
	Duration  time.Duration
	Reused    bool // served over a kept-alive upstream connection
	// Reason is why pollproxy answered or reset, or the client went away,
	// if one of them ended the request (ReasonNone otherwise); Detail is
	// what the reason names, such as a socket error (see Reason.Text).
	Reason Reason
	Detail string
	// Tunnel is set when the request became a tunnel (a WebSocket): the
	// line is written when it ends, Duration is its life, BytesIn the
	// client's bytes written to the origin, BytesOut the origin's to the
	// client; TunnelEnd says how it ended.
	Tunnel  bool
	BytesIn int64
	// GRPC is set when the response carried a grpc-status (in its
	// trailers, or a trailers-only head); GRPCStatus is its code, an
	// index of GRPCCodes (NoteGRPC).
	GRPC       bool
	GRPCStatus uint8

	// ClientIP is the client's address as the proxy derived it: Remote's,
	// or the one a trusted proxy named (route.ClientAddr).
	ClientIP netip.Addr
	// User is the user basic_auth let in ({http.auth.user.id}), or "".
	User string

	// BytesRead is how many request body bytes the client sent (Caddy's
	// bytes_read).
	BytesRead int64
	// Skip: a log_skip matched the request; access logs leave it out,
	// metrics count it.
	Skip bool
	// Header and RespHeader are the request's fields and the response's
	// as the origin sent them (Caddy's headers and resp_headers); filled
	// only for observers that ask (the proxy's Config.LogHeaders), copies
	// the observer may keep.
	Header, RespHeader []stream.Field
	// TLS is the request's TLS connection (nil over cleartext), shared
	// read-only with the connection.
	TLS *stream.TLSState
}

// Begin records req's facts at its start on a loop (loop, poller), with
// the client address the proxy derived, and its fields when headers is
// set and no log_skip matched.
func (r *RequestLog) Begin(req *stream.Request, loop int, poller string, start time.Time, client netip.Addr, headers bool) {
	*r = RequestLog{
		Loop: loop, Poller: poller, Proto: req.Proto, Method: req.Method,
		Authority: req.Authority, Path: req.Path, Remote: req.RemoteAddr, Start: start,
		ClientIP: client, User: req.AuthUser, Skip: req.LogSkip, TLS: req.TLS,
	}
	if req.OriginalPath != "" {
		r.Path = req.OriginalPath
	}
	if headers && !req.LogSkip {
		r.Header = append([]stream.Field(nil), req.Header...)
	}
}

// ErrorText is why pollproxy answered or reset, in words (Reason.Text),
// or "" when the request ended as the origin meant it.
func (r *RequestLog) ErrorText() string { return r.Reason.Text(r.Detail) }

// TunnelEnd is how a tunnel ended: "closed" when both sides closed it,
// else the reason in words.
func (r *RequestLog) TunnelEnd() string {
	if r.Reason == ReasonNone {
		return "closed"
	}
	return r.Reason.Text(r.Detail)
}

// Observer receives every finished request. It runs on the loop, so it
// must not block: counters, histograms and buffered log writes only.
type Observer interface {
	Observe(*RequestLog)
}

// TunnelObserver is implemented by an Observer that also wants to hear
// when a tunnel opens (the metrics' active-tunnel gauge); the tunnel's
// end is the Observe of its RequestLog, with Tunnel set.
type TunnelObserver interface {
	TunnelOpened(*RequestLog)
}

// FailureObserver is implemented by an Observer that also counts upstream
// failures by reason (the metrics' pollproxy_upstream_failures_total). It
// hears every failure, also those that did not end a request: a connect
// that failed before another upstream answered, a response the passive
// health checks count as a failure. It runs on the loop, as Observe does.
type FailureObserver interface {
	UpstreamFailed(upstream string, r Reason)
}

// UpstreamStats is a snapshot of one upstream's counters, summed over
// every loop, for metrics and pool statistics.
type UpstreamStats struct {
	Name      string // how the upstream was configured ("host:port")
	Requests  uint64 // requests sent to the upstream
	Connects  uint64 // new connections opened
	Reuses    uint64 // requests sent over a kept-alive connection
	Failures  uint64 // connect errors, timeouts, broken responses
	Retries   uint64 // requests retried after a reused connection failed
	Broken    uint64 // responses the upstream broke off after their head
	OpenConns int64  // connections open now, on every loop
}

// ReuseRatio is the share of requests that went over a kept-alive
// connection rather than a new one.
func (s UpstreamStats) ReuseRatio() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Reuses) / float64(s.Requests)
}

// Upstream is an upstream as observers see it: something whose counters
// can be read at any time, from any goroutine.
type Upstream interface {
	Stats() UpstreamStats
}

// Upstreams converts a slice of upstreams of one concrete type (the
// []*upstream.Upstream of proxy/upstream) for the APIs that take []Upstream.
func Upstreams[U Upstream](ups []U) []Upstream {
	out := make([]Upstream, len(ups))
	for i, u := range ups {
		out[i] = u
	}
	return out
}
