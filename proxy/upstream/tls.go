package upstream

import (
	stdtls "crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	pptls "github.com/pollproxy/pollproxy/tls"
)

// TLS is one transport's TLS to its upstreams: Caddy's https:// upstreams
// and transport http { tls … } options. Connections to every upstream of
// the transport share its configuration and its session cache, on every
// loop, so a new connection to an origin resumes the session of an earlier
// one.
type TLS struct {
	// Config is the client configuration: trusted roots (nil: the
	// system's), client certificate, InsecureSkipVerify, and ServerName
	// (empty: each upstream's host, as in Caddy). NewTLS gives it a
	// session cache.
	Config *stdtls.Config
	// Timeout bounds a handshake (tls_timeout), counted from the
	// connect's completion; 0 uses the connect timeout, so that nothing
	// waits for an origin without bound.
	Timeout time.Duration
	// Handshakes runs the handshakes off the loops.
	Handshakes *pptls.HandshakePool

	log *FailureLog
}

// sessionCacheSize is how many origins' sessions a transport remembers.
const sessionCacheSize = 256

// NewTLS returns a transport's TLS over cfg (which it keeps and gives a
// session cache when it has none), running handshakes on pool and
// logging each failed handshake to log (nil: none logged).
func NewTLS(cfg *stdtls.Config, timeout time.Duration, pool *pptls.HandshakePool, log *FailureLog) *TLS {
	if cfg.ClientSessionCache == nil {
		cfg.ClientSessionCache = stdtls.NewLRUClientSessionCache(sessionCacheSize)
	}
	return &TLS{Config: cfg, Timeout: timeout, Handshakes: pool, log: log}
}

// ClientConfig is the configuration for connections to u: the
// transport's, with the server name set to u's host unless the transport
// names one (tls_server_name).
func (t *TLS) ClientConfig(u *Upstream) *stdtls.Config {
	if t.Config.ServerName != "" {
		return t.Config
	}
	c := t.Config.Clone()
	c.ServerName = u.ServerName()
	return c
}

// ServerName is the host part of the upstream's name, which a TLS
// connection to it verifies the certificate for (empty for a Unix
// socket).
func (u *Upstream) ServerName() string {
	if u.Path != "" {
		return ""
	}
	host, _, err := net.SplitHostPort(u.Name)
	if err != nil {
		return strings.Trim(u.Name, "[]")
	}
	return host
}

// Failed reports a failed handshake with u: one log line, written off the
// loop (it never blocks).
func (t *TLS) Failed(u *Upstream, err error) {
	if t.log != nil {
		t.log.add(u.Name, err)
	}
}

// FailureLog writes the upstream failures that deserve a line of their
// own (a certificate that does not verify) on a goroutine of its own, so
// that a loop never waits for a log write.
type FailureLog struct {
	log    *slog.Logger
	queue  chan failure
	done   chan struct{}
	mu     sync.Mutex
	closed bool
}

type failure struct {
	upstream string
	err      error
}

// failureQueue bounds the lines waiting to be written.
const failureQueue = 256

// NewFailureLog starts a failure log writing to l.
func NewFailureLog(l *slog.Logger) *FailureLog {
	f := &FailureLog{log: l, queue: make(chan failure, failureQueue), done: make(chan struct{})}
	go f.run()
	return f
}

func (f *FailureLog) run() {
	defer close(f.done)
	for e := range f.queue {
		f.log.Error("upstream TLS handshake failed", "upstream", e.upstream, "error", e.err.Error())
	}
}

func (f *FailureLog) add(upstream string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	select {
	case f.queue <- failure{upstream, err}:
	default:
	}
}

// Close writes what waits and stops the log.
func (f *FailureLog) Close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.queue)
	}
	f.mu.Unlock()
	<-f.done
}
