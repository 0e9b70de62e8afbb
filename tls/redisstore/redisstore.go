package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultKeyPrefix      = "pollproxy"
	DefaultTimeout        = 5 * time.Second
	DefaultLockTTL        = 60 * time.Second
	DefaultLockPoll       = time.Second
	DefaultHealthInterval = 10 * time.Second
	DefaultDownInterval   = time.Second
)

// Options configure a Storage. Only Addrs is required.
type Options struct {
	// Addrs are host:port addresses: one for a single server (Redis or
	// Valkey), several for a Redis Cluster, or sentinels with MasterName.
	Addrs []string
	// MasterName selects Sentinel failover: Addrs are then the sentinels.
	MasterName string
	// DB is the database number (single server and sentinel only).
	DB int
	// Username and Password authenticate (AUTH, ACL users).
	Username, Password string
	// KeyPrefix namespaces every key; instances that share certificates
	// share it. Default DefaultKeyPrefix.
	KeyPrefix string
	// TLS, when set, connects with TLS (Redis 6's tls-port).
	TLS *tls.Config
	// Timeout bounds the dial and each command's read and write.
	Timeout time.Duration
	// LockTTL is how long a lock outlives its holder's last renewal;
	// renewals come every LockTTL/3.
	LockTTL time.Duration
	// LockPoll is how often Lock retries a lock held by another owner.
	LockPoll time.Duration
	// HealthInterval is how often an idle storage PINGs Redis, so that an
	// outage is reported even when nothing reads or writes.
	HealthInterval time.Duration
	// DownInterval is how often the health check PINGs while Redis does
	// not answer, so that its return is noticed (and OnReachable's
	// functions run) soon after. Default DefaultDownInterval.
	DownInterval time.Duration
	// Logger receives the outage and lock reports. Nil: slog.Default().
	Logger *slog.Logger
}

// Storage is a certmagic.Storage, TryLocker and LockLeaseRenewer on Redis.
// It is safe for concurrent use. Close it when done.
type Storage struct {
	rdb    redis.UniversalClient
	prefix string // "{P}:"
	opts   Options
	log    *slog.Logger
	stats  *stats

	mu     sync.Mutex
	locks  map[string]*heldLock // by lock name, locks this Storage holds
	closed bool                 // Close released the locks
	onUp   []func()             // OnReachable's functions

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var (
	_ certmagic.Storage          = (*Storage)(nil)
	_ certmagic.TryLocker        = (*Storage)(nil)
	_ certmagic.LockLeaseRenewer = (*Storage)(nil)
)

// New returns a Storage for opts. It does not wait for Redis: an
// unreachable server is reported (log, metric) and every operation fails
// until it answers.
func New(opts Options) (*Storage, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("redisstore: no address")
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(opts.KeyPrefix, "{}") {
		return nil, fmt.Errorf("redisstore: key prefix %q: braces are not allowed", opts.KeyPrefix)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = DefaultLockTTL
	}
	if opts.LockPoll <= 0 {
		opts.LockPoll = DefaultLockPoll
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	if opts.DownInterval <= 0 {
		opts.DownInterval = DefaultDownInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	quietClientLog()
	s := &Storage{
		rdb: redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs:        opts.Addrs,
			MasterName:   opts.MasterName,
			DB:           opts.DB,
			Username:     opts.Username,
			Password:     opts.Password,
			TLSConfig:    opts.TLS,
			DialTimeout:  opts.Timeout,
			ReadTimeout:  opts.Timeout,
			WriteTimeout: opts.Timeout,
			// One attempt per command: the callers (certmagic's retries,
			// Lock's polling, the health check) decide when to try again,
			// and an outage is reported at once.
			MaxRetries: -1,
			// RESP2: CLIENT SETINFO and HELLO differ between servers and
			// versions; nothing here needs RESP3.
			Protocol:        2,
			DisableIdentity: true,
		}),
		prefix: "{" + opts.KeyPrefix + "}:",
		opts:   opts,
		log:    opts.Logger.With("storage", "redis"),
		stats:  newStats(),
		locks:  map[string]*heldLock{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go s.health()
	return s, nil
}

// Close stops the health check, releases the locks still held (so that
// another instance need not wait for them to expire; an Unlock after
// Close is then a no-op) and closes the connections.
func (s *Storage) Close() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		held := s.locks
		s.locks = map[string]*heldLock{}
		s.closed = true
		s.mu.Unlock()
		for name, l := range held {
			l.cancel()
			<-l.done
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
			unlockScript.Run(ctx, s.rdb, []string{s.lockKey(name)}, l.token)
			cancel()
		}
		s.rdb.Close()
	})
	return nil
}

// String names the storage in logs: its addresses and prefix.
func (s *Storage) String() string {
	return fmt.Sprintf("redis %s prefix %s", strings.Join(s.opts.Addrs, ","), s.opts.KeyPrefix)
}

// Ping reports whether Redis answers.
func (s *Storage) Ping(ctx context.Context) error {
	return s.check(ctx, "ping", s.rdb.Ping(ctx).Err())
}

// OnReachable registers f to run each time Redis answers again after it
// did not (a failed command or PING, then a successful one), on a
// goroutine of its own: the storage's users retry then what failed,
// rather than on a timer of their own. An instance whose Redis is
// unreachable when it starts learns this way that it is back.
func (s *Storage) OnReachable(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onUp = append(s.onUp, f)
}

func (s *Storage) health() {
	defer close(s.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		// The client's own dial and read timeouts (Timeout) end a PING to
		// a silent server before this context does, so that check counts
		// it as an outage rather than as a caller giving up.
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.Timeout)
		s.Ping(ctx)
		cancel()
		// An absent Redis is probed more often, so that its return is
		// noticed soon; failed PINGs to a refusing port cost nothing.
		next := s.opts.HealthInterval
		if !s.Up() {
			next = min(next, s.opts.DownInterval)
		}
		t.Reset(next)
	}
}

// check records the outcome of a command run with ctx: err nil or
// redis.Nil means Redis answered. A failure after ctx was done says only
// that the caller gave up (a handshake's deadline, Unlock stopping a
// renewal); the health check's own PINGs report a slow Redis.
func (s *Storage) check(ctx context.Context, op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		if s.stats.markUp() {
			s.log.Info("certificate storage reachable again", "addr", strings.Join(s.opts.Addrs, ","))
			s.mu.Lock()
			fns := s.onUp
			s.mu.Unlock()
			for _, f := range fns {
				go f()
			}
		}
		return err
	}
	if ctx.Err() != nil {
		return err
	}
	s.stats.errors.WithLabelValues(op).Inc()
	if s.stats.markDown() {
		s.log.Error("certificate storage unreachable: certificates cannot be loaded, stored or locked", "addr", strings.Join(s.opts.Addrs, ","), "op", op, "error", err)
	}
	return err
}

// normalize turns a certmagic key into its canonical form: slash
// separated, no leading, trailing or doubled slashes; "" is the root.
func normalize(key string) string {
	key = strings.Trim(path.Clean("/"+key), "/")
	return key
}

func (s *Storage) dataKey(key string) string { return s.prefix + "k:" + key }
func (s *Storage) indexKey() string          { return s.prefix + "index" }
func (s *Storage) lockKey(name string) string {
	return s.prefix + "lock:" + name
}

// Store puts value at key.
func (s *Storage) Store(ctx context.Context, key string, value []byte) error {
	key = normalize(key)
	if key == "" {
		return errors.New("redisstore: store: empty key")
	}
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.dataKey(key), "v", value, "t", now)
		p.ZAdd(ctx, s.indexKey(), redis.Z{Member: key})
		return nil
	})
	if err := s.check(ctx, "store", err); err != nil {
		return fmt.Errorf("redisstore: store %s: %w", key, err)
	}
	return nil
}

// Load returns the value at key, or an error wrapping fs.ErrNotExist.
func (s *Storage) Load(ctx context.Context, key string) ([]byte, error) {
	key = normalize(key)
	v, err := s.rdb.HGet(ctx, s.dataKey(key), "v").Bytes()
	if err := s.check(ctx, "load", err); err != nil {
		if errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redisstore: load %s: %w", key, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("redisstore: load %s: %w", key, err)
	}
	return v, nil
}

// under returns up to limit keys below dir (every key when dir is the
// root), in lexical order; limit 0 means all.
func (s *Storage) under(ctx context.Context, op, dir string, limit int64) ([]string, error) {
	r := &redis.ZRangeBy{Min: "-", Max: "+", Count: limit}
	if dir != "" {
		// "/" is 0x2f and "0" 0x30: every key starting with dir+"/" sorts
		// at or after "[dir/" and before "(dir0".
		r.Min, r.Max = "["+dir+"/", "("+dir+"0"
	}
	keys, err := s.rdb.ZRangeByLex(ctx, s.indexKey(), r).Result()
	return keys, s.check(ctx, op, err)
}

// Delete removes key, or everything below it when it is a directory. A
// key that does not exist is no error.
func (s *Storage) Delete(ctx context.Context, key string) error {
	key = normalize(key)
	keys, err := s.under(ctx, "delete", key, 0)
	if err != nil {
		return fmt.Errorf("redisstore: delete %s: %w", key, err)
	}
	if key != "" {
		keys = append(keys, key)
	}
	// Bounded batches keep one transaction small however many keys a
	// directory holds.
	for len(keys) > 0 {
		n := min(len(keys), 256)
		batch := keys[:n]
		keys = keys[n:]
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			dk := make([]string, len(batch))
			members := make([]any, len(batch))
			for i, k := range batch {
				dk[i], members[i] = s.dataKey(k), k
			}
			p.Del(ctx, dk...)
			p.ZRem(ctx, s.indexKey(), members...)
			return nil
		})
		if err := s.check(ctx, "delete", err); err != nil {
			return fmt.Errorf("redisstore: delete %s: %w", key, err)
		}
	}
	return nil
}

// Exists reports whether key is a value or a directory (a prefix of
// values). It is false when Redis cannot be asked.
func (s *Storage) Exists(ctx context.Context, key string) bool {
	key = normalize(key)
	if key != "" {
		n, err := s.rdb.Exists(ctx, s.dataKey(key)).Result()
		if s.check(ctx, "exists", err) != nil {
			return false
		}
		if n > 0 {
			return true
		}
	}
	keys, err := s.under(ctx, "exists", key, 1)
	return err == nil && len(keys) > 0
}

// List returns the keys in the directory dir: its direct children (values
// and directories) or, when recursive, every value below it. Keys are
// full paths, as certmagic's FileStorage returns them. A directory that
// does not exist is an error wrapping fs.ErrNotExist.
func (s *Storage) List(ctx context.Context, dir string, recursive bool) ([]string, error) {
	dir = normalize(dir)
	keys, err := s.under(ctx, "list", dir, 0)
	if err != nil {
		return nil, fmt.Errorf("redisstore: list %s: %w", dir, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("redisstore: list %s: %w", dir, fs.ErrNotExist)
	}
	if recursive {
		return keys, nil
	}
	base := dir + "/"
	if dir == "" {
		base = ""
	}
	out := keys[:0]
	last := ""
	for _, k := range keys {
		child, _, _ := strings.Cut(k[len(base):], "/")
		if child == last {
			continue
		}
		last = child
		out = append(out, base+child)
	}
	return out, nil
}

// Stat describes key: a value with its size and the time it was stored,
// or a directory. A key that is neither is an error wrapping
// fs.ErrNotExist.
func (s *Storage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	key = normalize(key)
	var size *redis.IntCmd
	var stored *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		size = p.HStrLen(ctx, s.dataKey(key), "v")
		stored = p.HGet(ctx, s.dataKey(key), "t")
		return nil
	})
	if err := s.check(ctx, "stat", err); err != nil && !errors.Is(err, redis.Nil) {
		return certmagic.KeyInfo{}, fmt.Errorf("redisstore: stat %s: %w", key, err)
	}
	if t, err := stored.Int64(); err == nil {
		return certmagic.KeyInfo{Key: key, Modified: time.Unix(0, t), Size: size.Val(), IsTerminal: true}, nil
	}
	keys, err := s.under(ctx, "stat", key, 1)
	if err != nil {
		return certmagic.KeyInfo{}, fmt.Errorf("redisstore: stat %s: %w", key, err)
	}
	if len(keys) == 0 {
		return certmagic.KeyInfo{}, fmt.Errorf("redisstore: stat %s: %w", key, fs.ErrNotExist)
	}
	return certmagic.KeyInfo{Key: key, IsTerminal: false}, nil
}

// newToken is a lock's owner token: 128 random bits.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var quietOnce sync.Once

// quietClientLog routes go-redis's own log lines (dial failures, pool
// notices) to slog at debug level: the storage reports outages itself,
// once, rather than on every reconnect attempt.
func quietClientLog() {
	quietOnce.Do(func() { redis.SetLogger(clientLog{}) })
}

type clientLog struct{}

func (clientLog) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().Log(ctx, slog.LevelDebug, fmt.Sprintf(format, v...), "logger", "go-redis")
}
