// Package h1 is pollproxy's HTTP/1.1 wire format, written for an event loop.
//
// Every parser here is incremental: it is fed byte slices as they arrive from
// a socket, split anywhere (down to one byte at a time), keeps only the state
// it needs to resume, never blocks and never starts a goroutine. Every
// buffer it keeps has a hard limit, so a connection's memory is bounded no
// matter what the peer sends.
//
// The package holds four pieces:
//
//   - RequestParser reads requests from HTTP/1.x clients (the front end;
//     request.go).
//   - ServerConn is the HTTP/1.1 front end itself: a stream.ServerConn that
//     drives a stream.Handler over a stream.Transport (serverconn.go, its
//     input state machine; responsewriter.go, the handler's
//     ResponseWriter; tunnel.go, both after a 101).
//   - ResponseParser reads responses from HTTP/1.1 origins (the backend side
//     of the reverse proxy; response.go).
//   - AppendRequestHeadFramed, AppendChunk and friends serialise requests
//     for origins into reusable byte slices (write.go).
//
// Both parsers read a head with head.go's headReader and a body with
// body.go's bodyReader (Content-Length, chunked, or to the end), and share
// h1.go's Limits, Event and Error.
//
// The parsers are strict on purpose. pollproxy sits between clients and
// origins, and any message the two could frame differently is a request
// smuggling vector, so everything RFC 9112 allows a recipient to reject is
// rejected: obsolete line folding, bare CR or LF, whitespace before a colon,
// Content-Length together with Transfer-Encoding, conflicting lengths,
// transfer codings other than a lone "chunked", malformed chunk sizes. Lines
// must end in CRLF; the RFC 9112 §2.2 tolerance for a bare LF is not
// extended, because origins disagree about it. The framing rules are
// written once (framing.go): one scan of a head's fields serves the
// request parser, the response parser and the ServerConn's
// ResponseWriter, and each side only maps a defect to its own answer
// (a 400, 417 or 501 to a client, a 502 for an origin's response). Which
// fields are hop-by-hop, framing or forbidden in trailers, what a token
// or field value may hold and which protocol an upgrade may ask for is
// proxy/field's, shared with the HTTP/2 front end.
package h1
