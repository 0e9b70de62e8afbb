package proxy

// Panic containment on the origin side. The loop blames a panic on the
// owner of the work it interrupted (netpoll.Owner): a backend connection
// for its events and flushes, an exchange for its timers, a pool for the
// waiter it was serving. Each passes the blame on to the exchange, and the
// exchange to the client connection it serves, so that whatever the panic
// left half-updated on the way from the origin to the client is discarded
// whole: the backend connection is closed with a reset and never goes back
// to its pool (what it was in the middle of is unknown), and the client
// connection is abandoned, which aborts its front end and so ends the
// exchange through its one end, where the gauges are released.

import (
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

var (
	_ netpoll.Owner = (*backendConn)(nil)
	_ netpoll.Owner = (*exchange)(nil)
	_ netpoll.Owner = (*pool)(nil)
)

// Abandon implements netpoll.Owner for the exchange's own work (its
// timers) and for the work of its backend connection and pool, which
// hand it over. The client connection is abandoned only while the
// exchange still serves it: once the front end released the request, an
// exchange reading the rest of an origin's response works for nobody
// but itself.
func (ex *exchange) Abandon(v any) (site, request string) {
	if !ex.released && ex.req != nil {
		site, request = ex.req.Authority, ex.req.RequestLine()
	}
	if bc := ex.bc; bc != nil {
		ex.bc = nil
		bc.abort()
	}
	if c := ex.conn; c != nil && !ex.released {
		ex.conn = nil
		c.Abandon(v) // its front end's OnAbort ends the exchange
	}
	// Nothing ended it (a released exchange, a transport that cannot be
	// abandoned): its stream, if still there, is reset.
	ex.end(resetting(stream.CodeInternal, observe.ReasonClientGone, "abandoned after a panic"))
	return site, request
}

// Abandon implements netpoll.Owner: a panic in the connection's event or
// flush. The connection is closed with a reset, off its pool's books, and
// its exchange abandoned.
func (bc *backendConn) Abandon(v any) (site, request string) {
	ex := bc.ex
	bc.abort()
	if ex == nil {
		return "", ""
	}
	if ex.bc == bc {
		ex.bc = nil
	}
	return ex.Abandon(v)
}

// Abandon implements netpoll.Owner: a panic while the pool served its
// waiters (Flush) is the waiter's, whose exchange is abandoned; the
// waiters behind it are served next iteration.
func (p *pool) Abandon(v any) (site, request string) {
	ex := p.serving
	p.serving, p.kicked = nil, false
	if len(p.waiters) > 0 {
		p.kick()
	}
	if ex == nil {
		return "", ""
	}
	return ex.Abandon(v)
}
