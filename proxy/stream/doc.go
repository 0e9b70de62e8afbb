// Package stream is the contract between pollproxy's front ends (the HTTP/2 and
// HTTP/1.1 server connections) and the handlers that serve requests.
//
// Everything here runs on the event loop that owns the client connection: a
// front end calls the handler, the handler calls back into the front end, and
// neither ever blocks. Bodies stream in both directions with backpressure:
// a handler that stops calling Consumed stops the client's uploads (h2
// windows, or h1 reads), and a ResponseWriter that accepts fewer bytes than
// offered stops the handler until OnWritable.
//
// # The re-entrancy rule
//
// Calls go one way at a time. The connection calls the front end
// (ServerConn), the front end calls the handler (Handler, Events), and the
// handler calls the front end back (ResponseWriter) — but a ResponseWriter
// call never calls Events synchronously, and a front end never calls the
// connection in a way that calls it back:
//
//   - A ResponseWriter call only changes the stream's state and queues
//     output. Output is produced and written at the end of the loop
//     iteration: the front end asks for it with Transport.FlushLater, and
//     the connection calls ServerConn.Flush before it encrypts and writes.
//     OnWritable is delivered from there (or from OnDrained), never from
//     inside Write.
//   - Resuming reads (Transport.PauseRead(false)) only re-arms the
//     descriptor. The loop delivers the read event in the same iteration or
//     the next, and the connection calls Feed from there — with no new
//     bytes when none arrived, so the front end takes up input it held
//     back.
//
// So no front end needs depth counters or deferred-callback flags: every
// entry point (Feed, Flush, OnDrained, Shutdown, Abort, PeerEOF, a timer)
// starts from the loop with nothing of the front end's on the stack.
//
// # Tunnels
//
// A request whose Upgrade is set (an HTTP/1.1 Upgrade, or an RFC 8441
// extended CONNECT on h2) may become a tunnel: a stream whose body flows
// both ways for as long as either side wants. The handler accepts it with
// WriteHeader(101, fields, false) on an HTTP/1.1 request and with a 2xx on
// an extended CONNECT; any other status is an ordinary response. From
// then on the same calls carry the tunnel, under the same rules:
//
//   - Write sends tunnel bytes, with the same backpressure (n < len(p),
//     then OnWritable); OnBody delivers the client's, counted against a
//     window until Consumed.
//   - Close(nil) ends the handler's direction only: END_STREAM on h2, a
//     TLS close_notify and shutdown(SHUT_WR) on HTTP/1.1 (see HalfCloser).
//     OnBodyEnd reports the client's end of its direction (END_STREAM, or
//     the end of its byte stream: see EOFReceiver). The tunnel is over
//     when both directions have ended, or at Reset or OnAbort.
//   - A front end's request timers (head, idle between requests) never
//     run while a tunnel is open; a tunnel's idle limit is the handler's.
//
// The tunnel adds no call in the other direction: the re-entrancy rule
// holds unchanged, and PeerEOF is one more entry point from the loop.
//
// # Wrapping a ResponseWriter
//
// Handlers wrap the writer they are given (response edits, an encoder,
// an access log, the error routes' watch), and the optional interfaces
// (ErrorRouter, BodyRefuser, Flusher, Replacer) belong to whichever
// writer in the chain has them. One rule, as net/http's
// ResponseController has it: every wrapper implements Unwrapper, and a
// caller reaches an optional method only through the helpers that walk
// the chain (RouteError, RefuseBody, Flush, Replaced, Find), never by a
// type assertion on the writer in hand. So a wrapper implements an
// optional method only to change what it does (the encoder's Flush sends
// what it holds, then passes on); one that merely passes it on
// implements nothing, and a new optional interface needs no change to
// any wrapper.
//
// One job per file:
//
//   - stream.go: the contract itself: Request, Field, ResponseWriter,
//     Events, Handler, Transport, Clock and the optional interfaces.
//   - shutdown.go: Shutdown, the stop a process has scheduled, read by
//     the loops without a lock.
//   - unwrap.go: Unwrapper, and the helpers that walk a writer's chain
//     (Find, RouteError, RefuseBody, Flush).
package stream
