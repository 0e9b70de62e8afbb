package proxy

// A proxied response without a Content-Type gets one sniffed from its
// first body bytes, as Caddy's answer does: Caddy's reverse_proxy passes
// the origin's fields on as they are, and Go's HTTP server sniffs a type
// for a response that has none (package sniff) when its first body bytes
// go out; never for one without body bytes (HEAD, 204, 304). Caddy's own
// answers (respond, file_server) set their type or forbid the sniff, so
// the proxied response is the one pollproxy sniffs.
//
// The head waits in the exchange (held) for those bytes. With a
// Content-Length, Go's output buffer gathers the body's first bytes
// before the head goes, so Go sniffs the first 512 (or the whole body
// when shorter): the exchange keeps (copies) body bytes while it has
// fewer, at most 512 of them. Without a length Caddy flushes as the
// origin sends, so Go sniffs the first bytes the origin sent, and an
// origin that goes quiet after its head gets the head without a type.
// An origin that sends a Content-Type costs nothing: its head goes on at
// once, as before.

import (
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/sniff"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// holdHead keeps the head of a response that sniffs until its first body
// bytes arrive (sniffBody), or the response ends (sendHeld).
func (ex *exchange) holdHead(fields []stream.Field, p *h1.ResponseParser) {
	ex.holding, ex.held = true, fields
	ex.heldLength = p.ContentLength()
}

// sniffBody takes body bytes while the head is held. While a response
// with a length has brought fewer than Go sniffs from, it keeps them;
// then the head goes with the type sniffed, and the kept bytes after it.
// goOn: body is to be written as usual; otherwise responseBody returns
// ok (false: the client stalled, with body in after, or the exchange
// ended).
func (ex *exchange) sniffBody(body []byte) (goOn, ok bool) {
	kept := ex.kept
	if ex.heldLength >= 0 && int64(len(kept)+len(body)) < min(sniff.Len, ex.heldLength) {
		if kept == nil {
			kept = make([]byte, 0, sniff.Len) // a response without a type whose first bytes came apart
		}
		ex.kept = append(kept, body...)
		return false, true
	}
	first := body
	if len(kept) > 0 {
		// Within kept's capacity: kept itself stays as it was.
		first = append(kept, body[:min(len(body), sniff.Len-len(kept))]...)
	}
	ex.kept = nil
	if !ex.sendHeld(first) {
		return false, false
	}
	if len(kept) == 0 {
		return true, true
	}
	if !ex.writeBody(kept) {
		if ex.phase != phaseDone {
			ex.after = body // goes once the rest of kept has (OnWritable)
		}
		return false, false
	}
	return true, true
}

// sendHeld passes the held head on, with the Content-Type sniffed from
// first when it has bytes. It reports whether the client took the head
// (writeHead).
func (ex *exchange) sendHeld(first []byte) bool {
	fields := ex.held
	ex.holding, ex.held = false, nil
	if len(first) > 0 {
		fields = append(fields, stream.Field{Name: "content-type", Value: sniff.ContentType(first)})
	}
	return ex.writeHead(fields, false)
}
