// Package tls is pollproxy's non-blocking TLS: a Session runs crypto/tls over
// an in-memory transport so that an event loop can own a TLS connection
// without ever blocking on it. The package also builds the server's
// crypto/tls configuration and the self-signed development certificates.
//
// The package is the loops' hot path, so it imports the standard library
// only, and offload, whose pool runs the handshakes and which imports the
// standard library only itself (golang.org/x packages would be allowed; a
// test keeps it so).
// Certificate management — certmagic, ACME, the local CA, storage — is
// package tls/certs, whose dependencies (zap, and Redis through
// tls/redisstore) never reach a loop.
//
// Files: session.go is the Session the loop drives; wire.go the in-memory
// net.Conn crypto/tls runs over, with the record framer that keeps it from
// reading ahead; buffer.go the reusable byte queue for ciphertext in and
// out; stdinput.go the release of crypto/tls's own input buffers, which it
// has no API for; pool.go the handshake workers, an offload.Pool; config.go the server configuration,
// certificate files and self-signed certificates.
//
// The same Session serves both ends: NewServerSession for client
// connections, NewClientSession for connections to HTTPS origins, whose
// handshakes run on a pool of their own (HandshakePool.StartWithin carries
// each transport's tls_timeout) and whose record layer runs on the loop
// exactly as a server session's does. FeedEOF hands the origin's close to a
// handshake in progress, so an alert it sent before closing is the
// handshake's error rather than a timeout.
//
// # Two phases
//
// Handshake phase. crypto/tls cannot resume a handshake after a would-block,
// so the handshake runs on a HandshakePool worker goroutine. The loop reads
// ciphertext from the socket and hands it over with Feed; the worker's reads
// of the in-memory transport wait until bytes arrive, the session is closed,
// or the handshake deadline passes. Whatever the worker writes lands in the
// output buffer, and the notify callback given to HandshakePool.Start is
// called; the loop then flushes Output to the socket and checks
// HandshakeDone. In this phase the session's fields are guarded by a mutex,
// because two goroutines touch them.
//
// Loop phase. When the handshake is over (successfully or not) the worker
// hands the session to the loop and calls notify a last time. From then on
// only the loop goroutine touches the session and crypto/tls's record layer
// runs on it: the transport's Read returns ErrWouldBlock, a temporary
// net.Error, when no ciphertext is buffered, which crypto/tls treats as
// retryable (it keeps partial records and does not poison the connection).
// No mutex of this package is taken in this phase. (crypto/tls's Read and
// Write still lock its own, always uncontended, per-direction mutexes.)
//
// The hand-off is a single atomic flag, stored by the worker after its last
// access to the session's fields and loaded by every loop-side method. The
// store/load pair is the happens-before edge: a loop method that sees the
// flag set sees everything the worker wrote. The notify → task queue
// hand-off of the loop provides the same edge again, but the code does not
// rely on it, so a loop method that runs for another reason — a readable
// socket before the notify task — is correct too: it either sees the flag
// and runs unlocked, or does not and takes the mutex.
//
// The transport hands crypto/tls ciphertext no further than the end of the
// record it is reading, so crypto/tls never reads ahead. That lets a short
// Read prove that crypto/tls holds nothing more, and the next Read answer
// ErrWouldBlock without entering crypto/tls.
//
// # Driving a session from a loop
//
//	s := tls.NewServerSession(cfg, local, remote)
//	err := pool.Start(s, func() { loop.Post(task) }) // offload.ErrFull: close
//
// On readable: read the socket, Feed the bytes, then run the task below.
// The task (after a notify, or after Feed):
//
//  1. If HandshakeDone reports not done, flush and wait. If it reports an
//     error, flush Output (it may hold an alert) and close.
//  2. Call Read until it returns ErrWouldBlock, handing plaintext to the
//     front end (chosen by ALPN). Call it right after the handshake too:
//     application data may have arrived with the client's Finished. io.EOF
//     is the client's close_notify; any other error is fatal.
//  3. Flush Output to the socket and Consume what was written; arm
//     writability only if some is left.
//
// Write may be called at any time in the loop phase, also while Read has a
// partial record pending (ErrWouldBlock): the two directions of crypto/tls
// are independent. Each Write makes at least one record, so batch the
// plaintext of a loop iteration into one Write.
//
// # crypto/tls behaviour worth knowing
//
//   - A TLS 1.3 KeyUpdate from the client is handled inside Read. If it
//     requests an update, crypto/tls answers with its own KeyUpdate record,
//     which lands in Output during that Read — even when the Read returns
//     ErrWouldBlock. Flush after every Read. Records written afterwards use
//     the new keys, in order, since Output is a single queue.
//   - crypto/tls fails the connection after 16 consecutive records that
//     carry no application data (KeyUpdates, empty records, warning alerts).
//   - TLS 1.2 renegotiation requests are refused with an error from Read.
//   - A server sends its TLS 1.3 session tickets during the handshake, so
//     there is nothing to do for them on the loop; a client reads them on its
//     first Read.
//   - Each time crypto/tls pulls ciphertext from the transport it allocates
//     24 bytes (its atLeastReader escapes), so a received record costs one
//     allocation; writing costs none.
//   - A handshake error from a client speaking plain HTTP is a
//     stdtls.RecordHeaderError whose Conn field is non-nil, if the loop wants
//     to answer with an HTTP 400 as net/http does.
//   - Certificate callbacks (GetCertificate, GetConfigForClient) run on the
//     worker; ClientHelloInfo.Context carries the handshake deadline and is
//     cancelled by Session.Close and HandshakePool.Close. A callback that
//     ignores it keeps its worker busy.
package tls
