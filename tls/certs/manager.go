package certs

import (
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
	"go.uber.org/zap"

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

	// LocalCerts gives every name without a policy of its own a
	// certificate from the local CA, public names too (local_certs).
	LocalCerts bool

	// KeyType is the default key type of certificates (key_type; "":
	// certmagic's, p256); CertLifetime the validity asked of issuers
	// (cert_lifetime; 0: each issuer's); RenewalWindowRatio the part of
	// a lifetime left when certificates are renewed (0: a third).
	KeyType            string
	CertLifetime       time.Duration
	RenewalWindowRatio float64

	// EAB and PreferredChains are the ACME issuers' defaults (acme_eab,
	// preferred_chains).
	EAB             *acme.EAB
	PreferredChains *certmagic.ChainPreference

	// CAs configure local CAs by id (pki); DefaultCA is used when none
	// configures it.
	CAs map[string]LocalCA

	// DisableOCSPStapling stops fetching and stapling OCSP responses
	// (ocsp_stapling off); OCSPInterval and RenewInterval are how often
	// staples and certificates are checked (0: certmagic's, an hour and
	// ten minutes); StorageCleanInterval how often expired certificates
	// are removed from storage (0: a day, as Caddy's).
	DisableOCSPStapling         bool
	OCSPInterval, RenewInterval time.Duration
	StorageCleanInterval        time.Duration

	// FallbackServerName names the certificate for a ClientHello whose
	// SNI matches no certificate (fallback_sni).
	FallbackServerName string

	// OnDemand decides which names an on-demand policy may obtain
	// certificates for (on_demand_tls); nil: only names of the
	// policy's own (no wildcard, no catch-all) or local CA names.
	OnDemand *OnDemand
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
// # Policies
//
// Add, AddInternal and AddACME use the default policies (the local CA,
// ACME with Config's account); Manage takes a Policy of a site's own
// (issuers, key type, on-demand), built once into a certmagic
// configuration that every site with an equal policy shares. A name
// belongs to one policy; handshakes for it are answered by that policy's
// configuration, an on-demand policy's wildcard or catch-all taking the
// names no other policy claims. SetConnPolicies sets how the handshakes
// of some names are answered (protocols, client certificates ...).
//
// # Handshakes
//
// TLSConfig's GetCertificate looks certificates up in memory; it may touch
// storage or wait on a lock when a certificate is missing or an ACME
// TLS-ALPN-01 challenge is being answered, and it obtains an on-demand
// certificate (asking the permission endpoint, then the issuer) while the
// handshake waits. pollproxy runs handshakes on the HandshakePool, off the
// event loops, and passes the handshake's context
// (ClientHelloInfo.Context) along, so that never blocks a loop and is
// bounded by the handshake timeout.
type Manager struct {
	cfg     Config
	storage certmagic.Storage
	files   *certmagic.FileStorage // storage, when it is a directory
	cache   *certmagic.Cache
	base    certmagic.Config // the template of every policy's
	zl      *zap.Logger

	internal *managed // the default local CA, and the default issuers of
	acme     *managed // other names
	issuer   *certmagic.ACMEIssuer
	ca       *localCA // the default local CA

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu       sync.RWMutex
	policies map[string]*managed // by Policy.key
	names    map[string]*managed // name → its policy
	patterns []pattern           // wildcards and catch-alls of on-demand policies, first first
	cas      map[string]*localCA // by id and leaf parameters

	wait *waitList // names waiting for a storage that was away; nil for files

	cleaning sync.WaitGroup // the storage cleaner, which Close waits for

	conn    atomic.Pointer[connPolicies] // SetConnPolicies's; nil: none
	keyLogs map[string]*os.File          // insecure_secrets_log files by absolute name; c.mu

	closeOnce sync.Once
}

// pattern is a host of an on-demand policy that is not one name: a
// wildcard ("*.example.com") or "" for any name.
type pattern struct {
	host string
	m    *managed
}

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
	if cfg.KeyType != "" && !ValidKeyType(cfg.KeyType) {
		return nil, fmt.Errorf("tls: key type %q: want ed25519, p256, p384, rsa2048 or rsa4096", cfg.KeyType)
	}

	c := &Manager{cfg: cfg, storage: cfg.Storage, files: files, zl: zl,
		policies: map[string]*managed{}, names: map[string]*managed{}, cas: map[string]*localCA{}}
	if files != nil {
		c.storage = files
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   c.configFor,
		OCSPCheckInterval:  cfg.OCSPInterval,
		RenewCheckInterval: cfg.RenewInterval,
		Logger:             zl,
	})
	c.base = certmagic.Config{
		Storage:            c.storage,
		Logger:             zl,
		DefaultServerName:  cfg.DefaultServerName,
		FallbackServerName: cfg.FallbackServerName,
		RenewalWindowRatio: cfg.RenewalWindowRatio,
		OCSP:               certmagic.OCSPConfig{DisableStapling: cfg.DisableOCSPStapling},
	}
	var err error
	if c.ca, err = c.localCA(&InternalIssuer{}); err != nil {
		return nil, err
	}
	if c.internal, err = c.policy(Policy{Issuers: []Issuer{{Internal: &InternalIssuer{}}}}); err != nil {
		return nil, err
	}
	if c.acme, err = c.policy(Policy{Issuers: []Issuer{{ACME: &ACMEIssuer{}}}}); err != nil {
		return nil, err
	}
	c.issuer = c.acme.acme
	c.watchStorage(logger)
	c.cleanStorage(cfg.StorageCleanInterval)
	return c, nil
}

// defaultCA is the default local CA, the placeholder issuer of a
// configuration being built.
func (c *Manager) defaultCA() *localCA { return c.ca }

// localCA returns the local CA the issuer names (with its leaf parameters), one
// value per CA and parameters for the Manager's life.
func (c *Manager) localCA(is *InternalIssuer) (*localCA, error) {
	id := is.CA
	if id == "" {
		id = DefaultCA
	}
	// A CA no pki block configures is made with the defaults, as
	// Caddy's.
	params := c.cfg.CAs[id]
	life := orDuration(is.Lifetime, c.cfg.CertLifetime)
	ca := &localCA{storage: c.storage, now: time.Now, id: id, params: params, leaf: life, withRoot: is.SignWithRoot}
	if life > 0 && life > ca.intermValidity() && !is.SignWithRoot {
		return nil, fmt.Errorf("tls: issuer internal: certificate lifetime %v exceeds the intermediate's (%v)", life, ca.intermValidity())
	}
	key := fmt.Sprintf("%s %v %t", id, life, is.SignWithRoot)
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.cas[key]; ok {
		return have, nil
	}
	c.cas[key] = ca
	return ca, nil
}

// policy returns p's configuration, building it on first use.
func (c *Manager) policy(p Policy) (*managed, error) {
	k := p.key()
	c.mu.RLock()
	m := c.policies[k]
	c.mu.RUnlock()
	if m != nil {
		return m, nil
	}
	m, err := c.build(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if have := c.policies[k]; have != nil {
		return have, nil
	}
	c.policies[k] = m
	return m, nil
}

// cleanStorage removes expired certificates and OCSP staples from storage
// now and every interval (0: a day), as Caddy's storage_clean_interval.
// certmagic's lock keeps instances sharing a storage from doing it at
// once.
func (c *Manager) cleanStorage(interval time.Duration) {
	if interval <= 0 {
		interval = 24 * time.Hour
	}
	opts := certmagic.CleanStorageOptions{
		Logger:                 c.zl,
		Interval:               interval,
		OCSPStaples:            true,
		ExpiredCerts:           true,
		ExpiredCertGracePeriod: 24 * time.Hour * 14,
	}
	c.cleaning.Add(1)
	go func() {
		defer c.cleaning.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := certmagic.CleanStorage(c.ctx, c.storage, opts); err != nil && c.ctx.Err() == nil {
				c.zl.Warn("cleaning certificate storage: " + err.Error())
			}
			select {
			case <-c.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// configFor is the cache's GetConfigForCert: the configuration of the
// policy that manages one of the certificate's names (certificate files,
// which are never renewed, get the default ACME one).
func (c *Manager) configFor(cert certmagic.Certificate) (*certmagic.Config, error) {
	for _, n := range cert.Names {
		if m := c.lookup(n, false); m != nil {
			return m.cfg, nil
		}
	}
	return c.acme.cfg, nil
}

// lookup returns the policy that manages name: the one it was added
// with, else an on-demand policy whose wildcard or catch-all covers it;
// with dflt, else the default one for the name (nil without dflt).
func (c *Manager) lookup(name string, dflt bool) *managed {
	name = normalize(name)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m := c.names[name]; m != nil {
		return m
	}
	for _, p := range c.patterns {
		if p.host == "" || matchWildcard(p.host, name) {
			return p.m
		}
	}
	if !dflt {
		return nil
	}
	if c.cfg.LocalCerts || UsesInternalByDefault(name) {
		return c.internal
	}
	return c.acme
}

// matchWildcard reports whether name is one label under the wildcard
// pattern "*.example.com".
func matchWildcard(pattern, name string) bool {
	rest, ok := strings.CutPrefix(pattern, "*.")
	if !ok {
		return false
	}
	i := strings.IndexByte(name, '.')
	return i > 0 && name[i+1:] == rest
}

func normalize(n string) string {
	n = strings.ToLower(strings.TrimSuffix(strings.Trim(strings.TrimSpace(n), "[]"), "."))
	if ip := net.ParseIP(n); ip != nil {
		n = ip.String()
	}
	return n
}

// claim normalizes names (lowercase, no trailing dot or IPv6 brackets),
// refuses empty ones and names already managed by another policy, and
// records the rest as managed by m.
func (c *Manager) claim(m *managed, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("tls: no names given")
	}
	out := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		n = normalize(n)
		if n == "" {
			return nil, errors.New("tls: empty certificate name")
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range out {
		if have, ok := c.names[n]; ok && have != m {
			return nil, fmt.Errorf("tls: %s already has a certificate from %s", n, have.desc)
		}
	}
	for _, n := range out {
		c.names[n] = m
	}
	return out, nil
}

func (c *Manager) unclaim(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		delete(c.names, n)
	}
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

// Add manages names the default way: UsesInternalByDefault names (every
// name with Config.LocalCerts) with AddInternal, the others with AddACME.
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
		if c.cfg.LocalCerts || UsesInternalByDefault(n) {
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
	return c.manage(c.ctx, c.internal, names)
}

// AddACME obtains certificates for names from the ACME CA, unless storage
// already holds valid ones, and returns when they are ready or ctx is done;
// certmagic renews them in the background afterwards. While pollproxy
// already listens on the challenge ports, its listeners must answer the
// challenges (HTTPChallengeHandler, TLSConfig); otherwise certmagic listens
// on them for the time of a challenge.
func (c *Manager) AddACME(ctx context.Context, names ...string) error {
	names, err := c.claim(c.acme, names)
	if err != nil {
		return err
	}
	if err := c.acme.cfg.ManageSync(ctx, names); err != nil {
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
	return c.manage(ctx, c.acme, names)
}

// Manage manages names (DNS names, wildcards, IP addresses) under p.
// Certificates from local CAs only are ready when it returns; others are
// obtained in the background, bounded by ctx and Close, as AddACMEAsync
// does. With p.OnDemand nothing is obtained now: the first handshake for
// a name obtains its certificate, and a name "" or a wildcard makes p
// the policy of every name, or every name under the wildcard, no other
// policy claims. On-demand policies that could reach a public CA for
// names given by clients need Config.OnDemand, as in Caddy.
func (c *Manager) Manage(ctx context.Context, p Policy, names ...string) error {
	if len(p.Issuers) == 0 && !p.onDemand() && p.KeyType == "" && p.RenewalWindowRatio == 0 && !p.ReusePrivateKeys {
		return c.AddAsync(ctx, names...)
	}
	if len(p.Issuers) == 0 {
		// The default issuers, spelled out: the local CA for names no
		// public CA issues for, ACME otherwise.
		var internal, public []string
		for _, n := range names {
			if n != "" && !strings.HasPrefix(n, "*.") && (c.cfg.LocalCerts || UsesInternalByDefault(n)) {
				internal = append(internal, n)
			} else {
				public = append(public, n)
			}
		}
		ip, pp := p, p
		ip.Issuers = []Issuer{{Internal: &InternalIssuer{}}}
		pp.Issuers = []Issuer{{ACME: &ACMEIssuer{}}}
		if c.cfg.LocalCerts {
			pp.Issuers = ip.Issuers
		}
		if len(internal) > 0 {
			if err := c.Manage(ctx, ip, internal...); err != nil {
				return err
			}
		}
		if len(public) > 0 {
			return c.Manage(ctx, pp, public...)
		}
		return nil
	}
	m, err := c.policy(p)
	if err != nil {
		return err
	}
	if !p.onDemand() {
		return c.manage(ctx, m, names)
	}
	var exact []string
	for _, n := range names {
		n = normalize(n)
		if n != "" && !strings.HasPrefix(n, "*.") {
			exact = append(exact, n)
			continue
		}
		if c.cfg.OnDemand == nil && !p.onlyInternal() && len(p.CertGetters) == 0 {
			return errors.New("tls: on-demand TLS cannot be enabled without a permission module to prevent abuse (on_demand_tls { ask URL }) for a wildcard or a site without a host name")
		}
		c.mu.Lock()
		dup := false
		for _, q := range c.patterns {
			if q.host == n {
				dup = q.m != m
				if dup {
					c.mu.Unlock()
					return fmt.Errorf("tls: on-demand certificates for %q already come from %s", displayPattern(n), q.m.desc)
				}
			}
		}
		c.patterns = append(c.patterns, pattern{n, m})
		// Wildcards before the catch-all, so the more specific wins.
		sort.SliceStable(c.patterns, func(i, j int) bool { return c.patterns[i].host != "" && c.patterns[j].host == "" })
		c.mu.Unlock()
	}
	if len(exact) > 0 {
		if _, err := c.claim(m, exact); err != nil {
			return err
		}
	}
	return nil
}

func displayPattern(p string) string {
	if p == "" {
		return "any name"
	}
	return p
}

// manage claims names for m and obtains their certificates: at once for
// a local CA, in the background otherwise; names wait for a shared
// storage that is away.
func (c *Manager) manage(ctx context.Context, m *managed, names []string) error {
	names, err := c.claim(m, names)
	if err != nil {
		return err
	}
	if m.sync {
		if c.deferWhileAway(m, c.ctx, names) {
			return nil
		}
		ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
		defer cancel()
		if err := m.cfg.ManageSync(ctx, names); err != nil {
			if c.deferWhileAway(m, c.ctx, names) {
				return nil
			}
			c.unclaim(names)
			return fmt.Errorf("tls: local CA certificates for %s: %w", strings.Join(names, ", "), err)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	if c.deferWhileAway(m, ctx, names) {
		return nil
	}
	if err := m.cfg.ManageAsync(ctx, names); err != nil {
		stop()
		cancel()
		c.unclaim(names)
		return fmt.Errorf("tls: certificates from %s for %s: %w", m.desc, strings.Join(names, ", "), err)
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
	if _, err := c.acme.cfg.CacheUnmanagedTLSCertificate(ctx, cert, nil); err != nil {
		return fmt.Errorf("tls: certificate %s: %w", certFile, err)
	}
	return nil
}

// AddFolder serves the certificates of every *.pem file under dirs, each a
// bundle of a chain and its key (Caddy's tls { load }), for the names
// they hold, and returns those names. They are not renewed; a reload
// reads them again.
func (c *Manager) AddFolder(dirs ...string) ([]string, error) {
	var names []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("unable to traverse into path: %s", path)
			}
			if d.IsDir() || !strings.HasSuffix(strings.ToLower(d.Name()), ".pem") {
				return nil
			}
			bundle, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			cert, err := stdtls.X509KeyPair(bundle, bundle)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
			defer cancel()
			if _, err := c.acme.cfg.CacheUnmanagedTLSCertificate(ctx, cert, nil); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if cert.Leaf != nil {
				names = append(names, cert.Leaf.DNSNames...)
				for _, ip := range cert.Leaf.IPAddresses {
					names = append(names, ip.String())
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("tls: walking certificates directory %s: %w", dir, err)
		}
	}
	return names, nil
}

// TLSConfig returns a server configuration like tls.ServerConfig's (TLS
// 1.2 at least, the same TLS 1.2 suites, ALPN h2 then http/1.1) that also
// offers ACMETLSALPNProtocol and picks the certificate by SNI among
// everything added to c. Each call returns a new Config; all share c's
// certificates, including ones added later.
//
// SetConnPolicies changes how the handshakes of some names are answered
// (protocols, ciphers, curves, ALPN, client certificates), also for
// configurations TLSConfig returned before.
func (c *Manager) TLSConfig() *stdtls.Config {
	cfg := c.baseTLSConfig()
	cfg.GetConfigForClient = c.getConfigForClient
	return cfg
}

func (c *Manager) baseTLSConfig() *stdtls.Config {
	cfg := pptls.ServerConfig(nil)
	cfg.NextProtos = append(cfg.NextProtos, ACMETLSALPNProtocol)
	cfg.GetCertificate = c.getCertificate
	return cfg
}

// getCertificate serves hello with the configuration of the policy that
// manages its name: every configuration shares the cache, so any finds a
// certificate already there; the policy's decides what is obtained on
// demand and answers its ACME issuer's TLS-ALPN-01 challenges.
func (c *Manager) getCertificate(hello *stdtls.ClientHelloInfo) (*stdtls.Certificate, error) {
	name := hello.ServerName
	if name == "" {
		name = c.cfg.DefaultServerName
	}
	return c.lookup(name, true).cfg.GetCertificateWithContext(hello.Context(), hello)
}

// HTTPChallengeHandler wraps next with an answer to ACME HTTP-01 challenges
// (GET /.well-known/acme-challenge/<token>) for c's ACME accounts (the
// default one and the sites' issuers): tokens of this instance from
// memory, those of others sharing the storage from it.
// Other requests go to next.
func (c *Manager) HTTPChallengeHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.issuer.HandleHTTPChallenge(w, r) {
			return
		}
		// The sites' own ACME issuers (another CA, account or storage
		// key), each of which finds the tokens it stored.
		c.mu.RLock()
		var issuers []*certmagic.ACMEIssuer
		for _, m := range c.policies {
			if m.acme != nil && m.acme != c.issuer {
				issuers = append(issuers, m.acme)
			}
		}
		c.mu.RUnlock()
		for _, is := range issuers {
			if is.HandleHTTPChallenge(w, r) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
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
	return c.files.Filename(c.ca.keys().rootCert), nil
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
		c.cleaning.Wait()
		c.cache.Stop()
		if cl, ok := c.storage.(io.Closer); ok && c.files == nil {
			cl.Close()
		}
		c.mu.Lock()
		for _, f := range c.keyLogs {
			f.Close()
		}
		c.mu.Unlock()
	})
	return nil
}

// CACertificates returns the root certificate of the local CA id (Caddy's
// pki_root trust pool), or with intermediate its intermediate
// (pki_intermediate), as storage has them: a CA storage holds none of is
// made first, root and intermediate, as Caddy's pki app makes the CAs it
// provisions. It reads storage: never call it on an event loop.
func (c *Manager) CACertificates(id string, intermediate bool) ([]*x509.Certificate, error) {
	ca, err := c.localCA(&InternalIssuer{CA: id})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
	defer cancel()
	chain, err := ca.load(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", id, err)
	}
	if intermediate {
		return []*x509.Certificate{chain.interm}, nil
	}
	return []*x509.Certificate{chain.root}, nil
}
