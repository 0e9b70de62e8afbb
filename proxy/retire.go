package proxy

// Reload and long streams. A reload gives every loop new handlers; the
// old ones keep serving what they started (requests, streaming
// responses, tunnels) on the same pools and backend connections, so a
// WebSocket, an SSE stream or a long download keeps running across any
// number of reloads. The app then tells each old handler which of its
// upstreams the new configuration still routes its site to (Retire).
// What is in flight to any other upstream is closed after
// stream_close_delay, in a way the client can see:
//
//   - An open tunnel ends as if its origin had closed: the origin
//     connection is closed, and the client gets what the origin had sent
//     followed by the end of our direction (END_STREAM on h2; close_notify
//     and FIN on HTTP/1.1). WebSocket clients read that as the server's
//     end and close; an RST_STREAM(CANCEL) would read as an error. A
//     client that keeps its own direction open past removedLinger gets
//     RST_STREAM(NO_ERROR) (RFC 9113 §8.1: the response is complete, stop
//     sending), or the HTTP/1.1 connection closed.
//   - A response whose head went out (SSE, a download) is reset
//     (RST_STREAM(CANCEL), or the HTTP/1.1 connection closed without its
//     last chunk): it is incomplete, and the client must not take it for
//     whole. An EventSource reconnects, to the new configuration.
//   - A request still waiting for its response head is left to finish,
//     as any request in flight across a reload: an ordinary response is
//     short, and one that only starts after the close is not closed
//     (a known limit: a stream whose head arrives after
//     stream_close_delay runs until it ends).

import (
	"time"

	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// removedLinger bounds how long a removed tunnel waits for the client to
// end its direction after ours ended.
const removedLinger = 2 * time.Second

// inflight is one handler's exchanges in flight, as an intrusive list:
// joining and leaving cost a few pointer writes and no allocation.
type inflight struct {
	head *exchange
}

// inflightLink is an exchange's place in its handler's inflight list.
type inflightLink struct {
	prev, next *exchange
	listed     bool
}

func (l *inflight) add(ex *exchange) {
	ex.link = inflightLink{next: l.head, listed: true}
	if l.head != nil {
		l.head.link.prev = ex
	}
	l.head = ex
}

func (l *inflight) remove(ex *exchange) {
	if !ex.link.listed {
		return
	}
	if p := ex.link.prev; p != nil {
		p.link.next = ex.link.next
	} else {
		l.head = ex.link.next
	}
	if n := ex.link.next; n != nil {
		n.link.prev = ex.link.prev
	}
	ex.link = inflightLink{}
}

// Retire is called on the handler's loop after a reload replaced it:
// no new request reaches it. What it has in flight keeps running when
// keep reports its upstream as still routed to by the same site in the
// new configuration; everything else is closed after the handler's
// StreamCloseDelay (see the comment at the top of this file). A nil keep
// keeps nothing: the site is gone.
func (h *Handler) Retire(keep func(*upstream.Upstream) bool) {
	// The new handlers have pools of their own: the idle connections of
	// these would only be closed by their idle timeout (php-fpm keeps a
	// worker per connection until then), and those in flight are closed
	// when their exchange ends.
	h.retirePools()
	if h.cfg.StreamCloseDelay <= 0 {
		h.closeRemoved(keep)
		return
	}
	h.loop.AfterFunc(h.cfg.StreamCloseDelay, func() { h.closeRemoved(keep) })
}

// Close is called on the handler's loop when what serves it (its server,
// its instance) closes, before the loop stops: its idle origin
// connections are closed now, so that the origins see them end (a loop
// that stops closes no descriptor of its own), and any still in flight
// closes when its exchange ends. The handler takes no new request.
func (h *Handler) Close() { h.retirePools() }

// retirePools retires every pool of the handler (pool.retire).
func (h *Handler) retirePools() {
	for _, p := range h.group.pools {
		p.retire()
	}
}

// InFlight reports how many exchanges (requests, streaming responses and
// tunnels) are in flight on this handler; it must be called on its loop.
func (h *Handler) InFlight() int {
	n := 0
	for ex := h.live.head; ex != nil; ex = ex.link.next {
		n++
	}
	return n
}

func (h *Handler) closeRemoved(keep func(*upstream.Upstream) bool) {
	var doomed []*exchange
	for ex := h.live.head; ex != nil; ex = ex.link.next {
		if up := ex.upstream(); up == nil || keep == nil || !keep(up) {
			doomed = append(doomed, ex)
		}
	}
	// Closing changes the list: walk a copy.
	for _, ex := range doomed {
		ex.streamRemoved()
	}
}

// upstream is where the exchange is going, or nil before it picked one.
func (ex *exchange) upstream() *upstream.Upstream {
	if ex.pool != nil {
		return ex.pool.up
	}
	return nil
}

// streamRemoved closes an exchange whose site or upstream a reload
// removed. A request still waiting for its head finishes as it would
// have: bounded by response_header_timeout, and the listener's drain when
// its port went away with the site.
func (ex *exchange) streamRemoved() {
	switch ex.phase {
	case phaseStreaming:
		ex.end(resetting(stream.CodeCancel, observe.ReasonRemoved, ""))
	case phaseTunnel:
		ex.end(outcome{tell: tellEndOurs, reason: observe.ReasonRemoved})
	}
}

// removedTimedOut: the client kept its direction of a removed tunnel
// open; the stream (or HTTP/1.1 connection) is closed under it.
func (ex *exchange) removedTimedOut() { ex.w.Reset(stream.CodeNo) }
