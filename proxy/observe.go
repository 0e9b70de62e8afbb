package proxy

import (
	"net/netip"
	"time"
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
	Reused    bool   // served over a kept-alive upstream connection
	Error     string // why pollproxy answered or reset, if it did
}

// Observer receives every finished request. It runs on the loop, so it
// must not block: counters, histograms and buffered log writes only.
type Observer interface {
	Observe(*RequestLog)
}
