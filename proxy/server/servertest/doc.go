// Package servertest starts a pollproxy server on loopback for tests, the
// way net/http/httptest does for net/http: a loop group over one poller
// backend, a fresh self-signed certificate, and the caller's handler, all
// torn down when the test ends; and WatchHeap, which bounds what a test's
// traffic makes the process hold.
//
// It is also the one place for what every suite needs around the proxy:
// the origin behind it (Origin, Says, ServeConns), a request read whole
// (Get, Do, Fetch, GetH2), a wait for a state another goroutine or process
// reaches (Within, Eventually) instead of a sleep, and ShortBackends for
// the suites -short runs on one backend.
//
// One job per file:
//
//   - servertest.go: Env and Start, a group and a TLS server on loopback,
//     with TLSConfig and ShortBackends.
//   - origin.go: Origin, a plain HTTP/1.1 application on loopback, and
//     Says; conns.go: ServeConns, a listener that hands every connection
//     to the test.
//   - client.go: H2Client, and a request read whole (Do, Fetch, Get,
//     GetH2).
//   - certfiles.go: CertFiles, a self-signed certificate written for a
//     Caddyfile's tls directive.
//   - delayrelay.go: DelayRelay, a loopback relay that delays each chunk
//     both ways; dialdelayed.go: DialDelayed, TLS through one.
//   - eventually.go: Within and Eventually (internal/eventually's).
//   - heap.go: WatchHeap and the HeapWatch it returns.
//   - port.go: FreePort, a loopback port nothing listened on.
//   - stall.go: AwaitStall, the wait for a writer that stopped making
//     progress.
//   - syncbuffer.go: SyncBuffer, a bytes.Buffer safe for a writer
//     goroutine.
package servertest
