package certs

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"time"

	"github.com/caddyserver/certmagic"
)

// The local CA's lifetimes. The root lives long because people install it
// into trust stores; the intermediate and the leaves are short-lived and
// replaced without anyone noticing (certmagic renews leaves once a third of
// their lifetime is left; the intermediate is replaced at issuance time
// when it could not outlive a fresh leaf twice over).
const (
	LocalRootValidity         = 10 * 365 * 24 * time.Hour
	LocalIntermediateValidity = 30 * 24 * time.Hour
	LocalLeafValidity         = 7 * 24 * time.Hour

	// localBackdate is how far NotBefore is set in the past, for clients
	// whose clock is a little behind.
	localBackdate = 5 * time.Minute
)

// Storage keys of the local CA, under certmagic's storage root (for the file
// storage, relative file names). Only the first two need to leave the
// machine: the root certificate is what clients trust.
const (
	localCAPrefix         = "pollproxy/ca/local/"
	localRootCertKey      = localCAPrefix + "root.crt"
	localCAOrganization   = "pollproxy local CA"
	localRootCommonPrefix = "pollproxy local root "
)

// DefaultCA is the id of the local CA that tls internal uses unless its
// issuer names another (Caddy's "local").
const DefaultCA = "local"

// LocalCA configures one of pollproxy's local CAs, by id (Caddy's pki {
// ca ID { ... } }). The names and lifetimes apply to certificates the CA
// makes from then on: a root already in storage is kept.
type LocalCA struct {
	// Name is the CA's organization ("": "pollproxy local CA").
	Name string
	// RootCN and IntermediateCN are the common names of the root and the
	// intermediates it makes ("": a name with the date).
	RootCN, IntermediateCN string
	// IntermediateLifetime is the intermediates' validity (0:
	// LocalIntermediateValidity).
	IntermediateLifetime time.Duration
	// RootCertFile and RootKeyFile, when set, are the root, in PEM,
	// brought by the operator rather than made and kept in storage;
	// IntermCertFile and IntermKeyFile likewise the intermediate, which
	// is otherwise made under the root and kept in storage.
	RootCertFile, RootKeyFile     string
	IntermCertFile, IntermKeyFile string
}

// caKeys are a local CA's storage keys.
type caKeys struct {
	rootCert, rootKey, intermCert, intermKey, lock string
}

func keysFor(id string) caKeys {
	prefix := "pollproxy/ca/" + id + "/"
	lock := "pollproxy_local_ca"
	if id != DefaultCA {
		lock += "_" + id
	}
	return caKeys{prefix + "root.crt", prefix + "root.key", prefix + "intermediate.crt", prefix + "intermediate.key", lock}
}

// localCA is a certmagic.Issuer that signs certificates with one of
// pollproxy's development CAs (by id; DefaultCA unless pki names
// another): an ECDSA P-256 root and intermediate generated on first use
// and kept in certmagic's storage, or a root the operator brings. Several
// pollproxy instances that share a storage share the CA: creation and
// replacement of its keys happen under a storage lock, and every issuance
// reads the CA back from storage, so an intermediate replaced by one
// instance is used by all.
type localCA struct {
	storage certmagic.Storage
	now     func() time.Time
	id      string // "" is DefaultCA
	params  LocalCA
	// leaf is the leaves' validity (0: LocalLeafValidity); withRoot
	// signs them with the root.
	leaf     time.Duration
	withRoot bool
}

func (ca *localCA) keys() caKeys {
	if ca.id == "" {
		return keysFor(DefaultCA)
	}
	return keysFor(ca.id)
}

func (ca *localCA) leafValidity() time.Duration {
	if ca.leaf > 0 {
		return ca.leaf
	}
	return LocalLeafValidity
}

func (ca *localCA) intermValidity() time.Duration {
	if ca.params.IntermediateLifetime > 0 {
		return ca.params.IntermediateLifetime
	}
	return LocalIntermediateValidity
}

func (ca *localCA) organization() string {
	if ca.params.Name != "" {
		return ca.params.Name
	}
	return localCAOrganization
}

var _ certmagic.Issuer = (*localCA)(nil)

// IssuerKey implements certmagic.Issuer. certmagic stores the certificates
// of this issuer under it, apart from ACME ones.
func (ca *localCA) IssuerKey() string {
	if ca.id == "" || ca.id == DefaultCA {
		return "pollproxy-local"
	}
	return "pollproxy-" + ca.id
}

// Issue implements certmagic.Issuer: a leaf for the CSR's names, valid for
// LocalLeafValidity, with the intermediate after it in the PEM chain.
func (ca *localCA) Issue(ctx context.Context, csr *x509.CertificateRequest) (*certmagic.IssuedCertificate, error) {
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("tls: local CA: certificate request signature: %w", err)
	}
	if len(csr.DNSNames)+len(csr.IPAddresses) == 0 {
		return nil, errors.New("tls: local CA: certificate request names no DNS name or IP address")
	}
	chain, err := ca.load(ctx, true)
	if err != nil {
		return nil, err
	}
	now := ca.now()
	signer, signerKey := chain.interm, chain.intermKey
	if ca.withRoot {
		signer, signerKey = chain.root, chain.rootKey
	}
	notAfter := now.Add(ca.leafValidity())
	if notAfter.After(signer.NotAfter) {
		notAfter = signer.NotAfter
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	usage := x509.KeyUsageDigitalSignature
	if _, ok := csr.PublicKey.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: csr.Subject.CommonName},
		NotBefore:      now.Add(-localBackdate),
		NotAfter:       notAfter,
		KeyUsage:       usage,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:       csr.DNSNames,
		IPAddresses:    csr.IPAddresses,
		URIs:           csr.URIs,
		EmailAddresses: csr.EmailAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, csr.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("tls: local CA: signing certificate: %w", err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if !ca.withRoot {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: chain.interm.Raw})...)
	}
	return &certmagic.IssuedCertificate{Certificate: out}, nil
}

// caChain is the loaded CA.
type caChain struct {
	root, interm       *x509.Certificate
	rootKey, intermKey crypto.Signer
}

// intermUsable reports whether the intermediate can sign a full-length leaf
// twice over from now (or, for leaves longer than a quarter of an
// intermediate's life, still has half its life): if not, it is replaced.
func (c *caChain) intermUsable(now time.Time, leaf, interm time.Duration) bool {
	return c.interm != nil && c.interm.NotAfter.Sub(now) > min(2*leaf, interm/2) &&
		c.interm.CheckSignatureFrom(c.root) == nil
}

// rootPEM returns the root certificate in PEM, creating the CA when
// storage holds none.
func (ca *localCA) rootPEM(ctx context.Context) ([]byte, error) {
	if f := ca.params.RootCertFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("tls: local CA: %w", err)
		}
		return b, nil
	}
	if b, err := ca.storage.Load(ctx, ca.keys().rootCert); err == nil {
		return b, nil
	}
	if _, err := ca.load(ctx, false); err != nil {
		return nil, err
	}
	return ca.storage.Load(ctx, ca.keys().rootCert)
}

// load reads the CA from storage. A missing root (and, when needInterm, a
// missing or expiring intermediate) is created under the storage lock,
// after checking again, since another instance may have done it meanwhile.
func (ca *localCA) load(ctx context.Context, needInterm bool) (*caChain, error) {
	c, err := ca.read(ctx)
	if err == nil && (!needInterm || c.intermUsable(ca.now(), ca.leafValidity(), ca.intermValidity())) {
		return c, nil
	}
	if err != nil && (!errors.Is(err, fs.ErrNotExist) || ca.params.RootCertFile != "") {
		return nil, err
	}
	k := ca.keys()
	if err := ca.storage.Lock(ctx, k.lock); err != nil {
		return nil, fmt.Errorf("tls: local CA: locking storage: %w", err)
	}
	defer func() {
		// Unlock even when ctx is done: a stale lock would stall the
		// other instances.
		_ = ca.storage.Unlock(context.WithoutCancel(ctx), k.lock)
	}()
	// Load, not Exists: Exists is false when a shared storage does not
	// answer, and a root created then would replace the cluster's.
	if ca.params.RootCertFile != "" {
		// The operator's root: read again under the lock, which
		// another instance may have made an intermediate under.
		if c, err = ca.read(ctx); err != nil {
			return nil, err
		}
	} else if _, err := ca.storage.Load(ctx, k.rootCert); err == nil {
		// Never replace a root that exists, even if its key is missing
		// or damaged: clients trust it. Say so instead.
		if c, err = ca.read(ctx); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tls: local CA: loading %s: %w", k.rootCert, err)
	} else if c, err = ca.createRoot(ctx); err != nil {
		return nil, err
	}
	if !c.intermUsable(ca.now(), ca.leafValidity(), ca.intermValidity()) {
		if err := ca.createIntermediate(ctx, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// read loads the root and the intermediate. With a root but no (valid)
// intermediate it returns the chain with interm nil and a nil error; with
// no root, a nil chain and an error wrapping fs.ErrNotExist.
func (ca *localCA) read(ctx context.Context) (*caChain, error) {
	k := ca.keys()
	load := ca.storage.Load
	if ca.params.RootCertFile != "" {
		load = loadFile
		k.rootCert, k.rootKey = ca.params.RootCertFile, ca.params.RootKeyFile
		if ca.params.IntermCertFile != "" {
			k.intermCert, k.intermKey = ca.params.IntermCertFile, ca.params.IntermKeyFile
		} else {
			load = func(ctx context.Context, key string) ([]byte, error) {
				if key == k.rootCert || key == k.rootKey {
					return loadFile(ctx, key)
				}
				return ca.storage.Load(ctx, key)
			}
		}
	}
	root, rootKey, err := ca.readPair(ctx, load, k.rootCert, k.rootKey)
	if err != nil {
		return nil, err
	}
	c := &caChain{root: root, rootKey: rootKey}
	interm, intermKey, err := ca.readPair(ctx, load, k.intermCert, k.intermKey)
	if err == nil {
		c.interm, c.intermKey = interm, intermKey
	}
	return c, nil
}

// loadFile reads a CA file the operator brought, as storage's Load.
func loadFile(_ context.Context, name string) ([]byte, error) { return os.ReadFile(name) }

func (ca *localCA) readPair(ctx context.Context, load func(context.Context, string) ([]byte, error), certKey, keyKey string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := load(ctx, certKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: local CA: loading %s: %w", certKey, err)
	}
	keyPEM, err := load(ctx, keyKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: local CA: loading %s: %w", keyKey, err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("tls: local CA: %s holds no PEM certificate", certKey)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: local CA: %s: %w", certKey, err)
	}
	key, err := certmagic.PEMDecodePrivateKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: local CA: %s: %w", keyKey, err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, nil, fmt.Errorf("tls: local CA: %s does not match %s", keyKey, certKey)
	}
	return cert, key, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

func (ca *localCA) createRoot(ctx context.Context) (*caChain, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: local CA: generating root key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := ca.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			Organization: []string{ca.organization()},
			CommonName:   firstNonEmpty(ca.params.RootCN, localRootCommonPrefix+now.UTC().Format("2006-01-02 15:04:05")),
		},
		NotBefore:             now.Add(-localBackdate),
		NotAfter:              now.Add(LocalRootValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            1,
	}
	cert, err := signAndParse(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if err := ca.storePair(ctx, ca.keys().rootCert, ca.keys().rootKey, cert, key); err != nil {
		return nil, err
	}
	return &caChain{root: cert, rootKey: key}, nil
}

func (ca *localCA) createIntermediate(ctx context.Context, c *caChain) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tls: local CA: generating intermediate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := ca.now()
	notAfter := now.Add(ca.intermValidity())
	if notAfter.After(c.root.NotAfter) {
		notAfter = c.root.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			Organization: []string{ca.organization()},
			CommonName:   firstNonEmpty(ca.params.IntermediateCN, "pollproxy local intermediate "+now.UTC().Format("2006-01-02 15:04:05")),
		},
		NotBefore:             now.Add(-localBackdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	cert, err := signAndParse(tmpl, c.root, &key.PublicKey, c.rootKey)
	if err != nil {
		return err
	}
	// The two files are not replaced atomically together: a reader that
	// sees the new certificate with the old key finds that the pair does
	// not match (readPair checks), takes the lock, which this writer holds,
	// and reads again once both are written.
	if err := ca.storePair(ctx, ca.keys().intermCert, ca.keys().intermKey, cert, key); err != nil {
		return err
	}
	c.interm, c.intermKey = cert, key
	return nil
}

func (ca *localCA) storePair(ctx context.Context, certKey, keyKey string, cert *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := certmagic.PEMEncodePrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls: local CA: encoding key: %w", err)
	}
	if err := ca.storage.Store(ctx, keyKey, keyPEM); err != nil {
		return fmt.Errorf("tls: local CA: storing %s: %w", keyKey, err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if err := ca.storage.Store(ctx, certKey, certPEM); err != nil {
		return fmt.Errorf("tls: local CA: storing %s: %w", certKey, err)
	}
	return nil
}

func signAndParse(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("tls: local CA: creating certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tls: local CA: parsing certificate: %w", err)
	}
	return cert, nil
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tls: generating serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never zero
}
