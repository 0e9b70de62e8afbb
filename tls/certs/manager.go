package certs

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"

	pptls "github.com/pollproxy/pollproxy/tls"
)

// ACMETLSALPNProtocol is the ALPN protocol of ACME TLS-ALPN-01 validations
// (RFC 8737). TLSConfig offers it; a connection that negotiates it carries
// no HTTP and is closed once the handshake is done.
const ACMETLSALPNProtocol = "acme-tls/1"

// StorageEnv is the environment variable that overrides the default storage
// directory.
const StorageEnv = "POLLPROXY_DATA"

// addTimeout bounds AddInternal and AddFilePair, which take no context:
// long enough to wait for another instance holding the storage lock.
const addTimeout = time.Minute

// Config configures a Manager. The zero value is usable: default storage,
// Let's Encrypt production for ACME names, no account email.
type Config struct {
	// StorageDir is the root of certmagic's file storage: ACME account,
	// certificates and their keys, the local CA. Default: $POLLPROXY_DATA,
	// else os.UserConfigDir()/pollproxy (DefaultStorageDir).
	StorageDir string

	// Storage, when set, replaces the file storage at StorageDir: a
	// storage shared by several instances, such as Redis
	// (tls/redisstore). Close closes it when it is an io.Closer.
	Storage certmagic.Storage

	// Email is the ACME account's contact address (optional).
	Email string

	// CA is the ACME directory URL; "" is Let's Encrypt production. Using
	// ACME means agreeing to the CA's subscriber agreement.
	CA string

	// CARoots are the roots trusted for the ACME server's own HTTPS
	// (nil: the system's). Tests set it to their test CA's.
	CARoots *x509.CertPool

	// DisableHTTPChallenge and DisableTLSALPNChallenge turn off the ACME
	// HTTP-01 and TLS-ALPN-01 challenges.
	DisableHTTPChallenge, DisableTLSALPNChallenge bool

	// HTTPPort and TLSALPNPort are the ports where challenges are answered
	// on this machine when not 80 and 443 (the CA still connects to 80 and
	// 443: forward those ports here). If pollproxy already listens on the
	// port, it must answer: HTTPChallengeHandler on HTTP, TLSConfig on
	// TLS; otherwise certmagic listens on it for the time of a challenge.
	HTTPPort, TLSALPNPort int

	// DefaultServerName names the certificate for a ClientHello without
	// SNI (clients connecting to an IP address) when the listener's own
	// address matches no certificate, as with a wildcard listen address.
	DefaultServerName string

	// Logger receives certmagic's logs. Nil: slog.Default(), warnings and
	// errors only.
	Logger *slog.Logger
}

// Manager manages pollproxy's server certificates with certmagic: names with
// certificates from an ACME CA (obtained, stored and renewed), names with
// certificates from pollproxy's local development CA (like Caddy's "tls
// internal"), and certificate files. TLSConfig serves all of them by SNI.
//
// # Storage and clustering
//
// Everything lives in certmagic's file storage under StorageDir: the ACME
// account, each certificate with its key and metadata, and the local CA's
// root and intermediate (under pollproxy/ca/local/). Several pollproxy
// instances that point StorageDir at one shared file system (NFS, a shared
// volume) therefore share the CA, the ACME account and the certificates:
// certmagic takes a storage lock around each issuance and renewal, so one
// instance obtains a certificate and the others load it from storage; the
// local CA is created and its intermediate replaced under a lock of its
// own, and every issuance reads the CA back from storage. HTTP-01 challenge
// tokens are written to storage too, so the instance the CA happens to
// reach can answer a challenge that another one started. An instance picks
// up a certificate renewed by another when its own copy comes due: its
// maintenance pass (every 10 minutes) reads storage before renewing.
//
// A shared storage that can be away (tls/redisstore) is not waited for:
// a name whose certificate cannot be loaded or issued because it does not
// answer is put aside, its handshakes fail, every other name is served,
// and it is loaded, issued or ordered as soon as the storage says it
// answers again. Nothing is issued meanwhile, so the local CA stays the
// one in the shared storage.
//
// Whoever can read the storage can mint certificates that machines trusting
// the local root accept: keep it private (certmagic writes directories 0700
// and files 0600).
//
// # Handshakes
//
// TLSConfig's GetCertificate looks certificates up in memory; it may touch
// storage or wait on a lock when a certificate is missing or an ACME
// TLS-ALPN-01 challenge is being answered. pollproxy runs handshakes on the
// HandshakePool, off the event loops, and passes the handshake's context
// (ClientHelloInfo.Context) along, so that never blocks a loop and is
// bounded by the handshake timeout.
type Manager struct {
	storage  certmagic.Storage
	files    *certmagic.FileStorage // storage, when it is a directory
	cache    *certmagic.Cache
	acme     *certmagic.Config
	internal *certmagic.Config
	issuer   *certmagic.ACMEIssuer
	ca       *localCA

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu    sync.RWMutex
	modes map[string]string // name → "internal" or "acme"

	wait *waitList // names waiting for a storage that was away; nil for files

	closeOnce sync.Once
}

const (
	modeInternal = "internal"
	modeACME     = "acme"
)

// DefaultStorageDir is where a Manager keeps its files when Config's
// StorageDir is empty: $POLLPROXY_DATA, else os.UserConfigDir()/pollproxy.
func DefaultStorageDir() (string, error) {
	if d := os.Getenv(StorageEnv); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("tls: no storage directory (set %s): %w", StorageEnv, err)
	}
	return filepath.Join(d, "pollproxy"), nil
}

// New returns a Manager over cfg's storage, creating the directory if
// needed. Close stops its background renewal.
func New(cfg Config) (*Manager, error) {
	var files *certmagic.FileStorage
	if cfg.Storage == nil {
		dir := cfg.StorageDir
		if dir == "" {
			d, err := DefaultStorageDir()
			if err != nil {
				return nil, err
			}
			dir = d
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("tls: certificate storage: %w", err)
		}
		files = &certmagic.FileStorage{Path: dir}
	}
	for _, p := range []int{cfg.HTTPPort, cfg.TLSALPNPort} {
		if p < 0 || p > 65535 {
			return nil, fmt.Errorf("tls: challenge port %d out of range", p)
		}
	}

	logger := cfg.Logger
	minLevel := slog.LevelDebug
	if logger == nil {
		logger, minLevel = slog.Default(), slog.LevelWarn
	}
	zl := newZapLogger(logger, minLevel)

	c := &Manager{storage: cfg.Storage, files: files, modes: map[string]string{}}
	if files != nil {
		c.storage = files
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ca = &localCA{storage: c.storage, now: time.Now}
	c.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: c.configFor,
		Logger:           zl,
	})
	base := certmagic.Config{
		Storage:           c.storage,
		Logger:            zl,
		DefaultServerName: cfg.DefaultServerName,
	}

	internal := base
	internal.Issuers = []certmagic.Issuer{c.ca}
	c.internal = certmagic.New(c.cache, internal)

	acme := base
	acme.Issuers = []certmagic.Issuer{c.ca} // replaced just below
	c.acme = certmagic.New(c.cache, acme)
	c.issuer = certmagic.NewACMEIssuer(c.acme, certmagic.ACMEIssuer{
		CA:                      cfg.CA,
		Email:                   cfg.Email,
		Agreed:                  true,
		TrustedRoots:            cfg.CARoots,
		DisableHTTPChallenge:    cfg.DisableHTTPChallenge,
		DisableTLSALPNChallenge: cfg.DisableTLSALPNChallenge,
		AltHTTPPort:             cfg.HTTPPort,
		AltTLSALPNPort:          cfg.TLSALPNPort,
		Logger:                  zl,
	})
	c.acme.Issuers = []certmagic.Issuer{c.issuer}
	c.watchStorage(logger)
	return c, nil
}

// configFor is the cache's GetConfigForCert: the internal config for
// names added with AddInternal, the ACME one otherwise (ACME names and
// certificate files, which are never renewed).
func (c *Manager) configFor(cert certmagic.Certificate) (*certmagic.Config, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, n := range cert.Names {
		if c.modes[n] == modeInternal {
			return c.internal, nil
		}
	}
	return c.acme, nil
}

// claim lowercases names, drops a trailing dot and IPv6 brackets,
// and refuses empty ones and names already managed the other way; it
// records the rest as managed in mode.
func (c *Manager) claim(mode string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("tls: no names given")
	}
	out := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSuffix(strings.Trim(strings.TrimSpace(n), "[]"), "."))
		if n == "" {
			return nil, errors.New("tls: empty certificate name")
		}
		if ip := net.ParseIP(n); ip != nil {
			n = ip.String()
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range out {
		if m, ok := c.modes[n]; ok && m != mode {
			return nil, fmt.Errorf("tls: %s already has a certificate from %s", n, describeMode(m))
		}
	}
	for _, n := range out {
		c.modes[n] = mode
	}
	return out, nil
}

func (c *Manager) unclaim(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		delete(c.modes, n)
	}
}

func describeMode(m string) string {
	if m == modeInternal {
		return "the local CA"
	}
	return "ACME"
}

// UsesInternalByDefault reports whether name gets a certificate from the
// local CA rather than ACME when nothing says otherwise: IP addresses,
// localhost and names no public CA issues for (*.localhost, *.local,
// *.internal, *.home.arpa, single labels).
func UsesInternalByDefault(name string) bool {
	name = strings.TrimSuffix(strings.Trim(strings.TrimSpace(name), "[]"), ".")
	return net.ParseIP(name) != nil || !strings.Contains(name, ".") ||
		!certmagic.SubjectQualifiesForPublicCert(name)
}

// Add manages names the default way: UsesInternalByDefault names with
// AddInternal, the others with AddACME.
func (c *Manager) Add(ctx context.Context, names ...string) error {
	return c.add(ctx, c.AddACME, names)
}

// AddAsync is Add with AddACMEAsync for the public names: local CA
// certificates are ready when it returns, ACME ones are obtained in the
// background.
func (c *Manager) AddAsync(ctx context.Context, names ...string) error {
	return c.add(ctx, c.AddACMEAsync, names)
}

func (c *Manager) add(ctx context.Context, addACME func(context.Context, ...string) error, names []string) error {
	var internal, public []string
	for _, n := range names {
		if UsesInternalByDefault(n) {
			internal = append(internal, n)
		} else {
			public = append(public, n)
		}
	}
	if len(internal) > 0 {
		if err := c.AddInternal(internal...); err != nil {
			return err
		}
	}
	if len(public) > 0 {
		return addACME(ctx, public...)
	}
	return nil
}

// AddInternal manages certificates from pollproxy's local CA for names (DNS
// names, wildcards or IP addresses): one leaf per name, valid
// LocalLeafValidity, renewed in the background, loaded from storage when
// still good. The CA is created on first use. Issuing takes milliseconds.
//
// When a shared storage (Redis) does not answer, the names wait for it
// rather than fail: AddInternal returns nil, their handshakes fail until
// the storage answers, and then their certificates are issued by the CA
// in storage (never by one made up meanwhile).
func (c *Manager) AddInternal(names ...string) error {
	names, err := c.claim(modeInternal, names)
	if err != nil {
		return err
	}
	if c.deferWhileAway(modeInternal, c.ctx, names) {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
	defer cancel()
	if err := c.internal.ManageSync(ctx, names); err != nil {
		if c.deferWhileAway(modeInternal, c.ctx, names) {
			return nil
		}
		c.unclaim(names)
		return fmt.Errorf("tls: local CA certificates for %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}

// AddACME obtains certificates for names from the ACME CA, unless storage
// already holds valid ones, and returns when they are ready or ctx is done;
// certmagic renews them in the background afterwards. While pollproxy
// already listens on the challenge ports, its listeners must answer the
// challenges (HTTPChallengeHandler, TLSConfig); otherwise certmagic listens
// on them for the time of a challenge.
func (c *Manager) AddACME(ctx context.Context, names ...string) error {
	names, err := c.claim(modeACME, names)
	if err != nil {
		return err
	}
	if err := c.acme.ManageSync(ctx, names); err != nil {
		c.unclaim(names)
		return fmt.Errorf("tls: ACME certificates for %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}

// AddACMEAsync is AddACME without the wait: certificates are obtained in
// the background (with certmagic's retries), and handshakes for a name
// fail until its certificate is there. ctx bounds the background work;
// Close cancels it too. When a shared storage (Redis) does not answer,
// the names wait for it, as with AddInternal, and are loaded from it or
// ordered as soon as it answers.
func (c *Manager) AddACMEAsync(ctx context.Context, names ...string) error {
	names, err := c.claim(modeACME, names)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	if c.deferWhileAway(modeACME, ctx, names) {
		return nil
	}
	if err := c.acme.ManageAsync(ctx, names); err != nil {
		stop()
		cancel()
		c.unclaim(names)
		return fmt.Errorf("tls: ACME certificates for %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}

// AddFilePair serves the certificate chain in certFile with the key in
// keyFile, for the names the certificate holds. It is not renewed nor
// reloaded when the files change; call AddFilePair again on a reload.
func (c *Manager) AddFilePair(certFile, keyFile string) error {
	cert, err := pptls.LoadKeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
	defer cancel()
	if _, err := c.acme.CacheUnmanagedTLSCertificate(ctx, cert, nil); err != nil {
		return fmt.Errorf("tls: certificate %s: %w", certFile, err)
	}
	return nil
}

// TLSConfig returns a server configuration like tls.ServerConfig's (TLS
// 1.2 at least, the same TLS 1.2 suites, ALPN h2 then http/1.1) that also
// offers ACMETLSALPNProtocol and picks the certificate by SNI among
// everything added to c. Each call returns a new Config; all share c's
// certificates, including ones added later.
func (c *Manager) TLSConfig() *stdtls.Config {
	cfg := pptls.ServerConfig(nil)
	cfg.NextProtos = append(cfg.NextProtos, ACMETLSALPNProtocol)
	cfg.GetCertificate = c.getCertificate
	return cfg
}

func (c *Manager) getCertificate(hello *stdtls.ClientHelloInfo) (*stdtls.Certificate, error) {
	// The ACME config sees every certificate of the shared cache and
	// answers TLS-ALPN-01 challenges.
	return c.acme.GetCertificateWithContext(hello.Context(), hello)
}

// HTTPChallengeHandler wraps next with an answer to ACME HTTP-01 challenges
// (GET /.well-known/acme-challenge/<token>) for c's ACME account: tokens of
// this instance from memory, those of others sharing the storage from it.
// Other requests go to next.
func (c *Manager) HTTPChallengeHandler(next http.Handler) http.Handler {
	return c.issuer.HTTPChallengeHandler(next)
}

// RootPEM returns the local CA's root certificate in PEM, creating the CA
// in storage on first use. It is what clients (curl --cacert, a trust
// store) need to verify certificates from AddInternal.
func (c *Manager) RootPEM() ([]byte, error) {
	ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
	defer cancel()
	return c.ca.rootPEM(ctx)
}

// RootFile returns the name of the file that holds RootPEM, creating the
// CA on first use. It is inside the storage directory (mode 0600); a
// storage that is not a directory has no such file (use RootPEM).
func (c *Manager) RootFile() (string, error) {
	if c.files == nil {
		return "", errors.New("tls: the certificate storage is not a directory; the local CA root is only in RootPEM")
	}
	if _, err := c.RootPEM(); err != nil {
		return "", err
	}
	return c.files.Filename(localRootCertKey), nil
}

// StorageDir returns the root of c's storage, "" when it is not a
// directory.
func (c *Manager) StorageDir() string {
	if c.files == nil {
		return ""
	}
	return c.files.Path
}

// Close stops renewal and cancels background issuance. TLSConfig keeps
// serving the certificates already in memory.
func (c *Manager) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		c.cache.Stop()
		if cl, ok := c.storage.(io.Closer); ok && c.files == nil {
			cl.Close()
		}
	})
	return nil
}
