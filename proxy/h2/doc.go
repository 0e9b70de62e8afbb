// Package h2 is pollproxy's HTTP/2 server connection (RFC 9113), run on the
// event loop that owns the client connection, and its client connection to
// HTTP/2 origins (ClientConn), run on the same loop.
//
// A ServerConn is a state machine: the connection beneath it hands over
// plaintext with Feed, and it answers through stream.Transport.Write. It
// starts no goroutine and takes no lock; every method, every handler call and
// every timer callback runs on the owning loop. Frames are parsed only once
// they are completely buffered, by an http2.Framer reading from a reader over
// exactly those bytes, so the Framer never sees a short read. Header blocks
// (HEADERS plus CONTINUATION) are decoded fragment by fragment with one
// hpack.Decoder per connection, bounded by Config.MaxHeaderListSize (decoded)
// and Config.MaxHeaderBlockBytes (encoded).
//
// Files: conn.go is the connection (Feed, Flush, shutdown, idle release)
// and frames.go its handling of each frame type; headerdecode.go decodes
// and validates request header blocks, headerencode.go encodes and frames
// response heads (appendHeaderBlock frames a block for either end); dataread.go reads DATA by hand; stream.go is a stream,
// the handler's ResponseWriter; flow.go and window.go are flow control and
// receive-window autotuning; config.go the limits, errors.go the errors.
// client.go is the client side, for origins that speak HTTP/2: the same
// frame, HPACK and window code, many streams on one connection;
// fielddecoder.go the HPACK decoder of the origins' response heads (a
// ring for the dynamic table, a per-connection cache of decoded strings),
// fieldencoder.go the HPACK encoder of its request heads (a literal
// indexed the second time it is seen);
// freestreams.go the free list its streams' structs are reused from.
//
// Output follows the re-entrancy rule of package stream. Frames accumulate
// in one reusable buffer and reach the transport with one Write per batch.
// The entry points from the connection and the loop (Feed, Flush, Abort,
// the timers) may call the handler, and each ends with at most one flush:
// DATA produced within the windows and the output budget, OnWritable for
// the streams owed it, then one Transport.Write (and Transport.Close after
// a GOAWAY that ends the connection). They are never called from inside
// one another, so nothing here counts depth. A ResponseWriter call only
// changes state and appends to the buffer — body bytes framed directly
// while the windows and the budget allow, the rest queued on its stream —
// and asks for the batch with Transport.FlushLater; it never calls the
// handler's Events. The connection calls Flush at the end of the loop
// iteration and writes the batch in the same socket write. Shutdown and
// OnDrained call no handler either: they ask for a Flush the same way,
// OnDrained only when there is something to produce. Time is read only
// through the transport's stream.Clock.
//
// Every protocol error is mapped to an RFC 9113 code in one place
// (handleError): a connection error sends GOAWAY and closes after the flush,
// a stream error sends RST_STREAM.
//
// pollproxy is not a forward proxy: a well-formed plain CONNECT request is
// answered with 405 and no handler sees it. Extended CONNECT (RFC 8441) is
// advertised (SETTINGS_ENABLE_CONNECT_PROTOCOL) unless
// Config.NoExtendedConnect: such a request reaches the handler with
// Method "CONNECT" and Request.Upgrade set to :protocol, and its stream is
// a tunnel — after the handler's 2xx, DATA flows both ways and each side's
// END_STREAM ends only its own direction (stream's package doc). With it
// off, :protocol makes a request malformed.
package h2
