package app

import (
	"fmt"
	"log/slog"
	"runtime"

	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/upstream"
	pptls "github.com/pollproxy/pollproxy/tls"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

// upstreamTLS is what the instance's HTTPS upstreams share: one pool of
// handshake workers, off the loops, and the log their failed handshakes
// are written to. Both start with the first HTTPS upstream.
type upstreamTLS struct {
	pool *pptls.HandshakePool
	log  *upstream.FailureLog
}

// upstreamHandshakeQueue bounds the handshakes to origins waiting for a
// worker; beyond it a new connection fails at once (a 502, or another
// upstream).
const upstreamHandshakeQueue = 1024

// transport builds one reverse_proxy's TLS: its configuration read from
// files (and the local CAs of certs, for a pki trust pool) now, a session
// cache of its own.
func (u *upstreamTLS) transport(certs *tlscerts.Manager, t *config.UpstreamTLS, l *slog.Logger) (*upstream.TLS, error) {
	pki, err := pkiCerts(certs, t.PKI)
	if err != nil {
		return nil, fmt.Errorf("tls_trust_pool %w", err)
	}
	cfg, err := t.ClientConfig(pki...)
	if err != nil {
		return nil, err
	}
	if u.pool == nil {
		// A worker is held for a whole handshake, a round trip to the
		// origin included: several per core, as the server's pool.
		u.pool = pptls.NewHandshakePool(max(16, 4*runtime.GOMAXPROCS(0)), upstreamHandshakeQueue, 0)
		u.log = upstream.NewFailureLog(l)
	}
	return upstream.NewTLS(cfg, t.Timeout, u.pool, u.log), nil
}

// close stops the workers: handshakes in progress end with their last
// notify, which the loops, still running, take.
func (u *upstreamTLS) close() {
	if u.pool != nil {
		u.pool.Close()
		u.log.Close()
		u.pool, u.log = nil, nil
	}
}
