package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// heldLock is a lock this Storage holds, and the goroutine renewing it.
type heldLock struct {
	token  string
	cancel context.CancelFunc
	done   chan struct{}
}

// renewScript extends a lock to at least ARGV[2] ms, if ARGV[1] still
// owns it: it never shortens a lease RenewLockLease made longer.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
local want = tonumber(ARGV[2])
if redis.call("PTTL", KEYS[1]) < want then
  redis.call("PEXPIRE", KEYS[1], want)
end
return 1`)

// unlockScript deletes a lock if ARGV[1] still owns it.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
redis.call("DEL", KEYS[1])
return 1`)

// ErrLockLost is returned by Unlock and RenewLockLease for a lock whose
// lease ran out (the holder could not renew it) and may now belong to
// another owner.
var ErrLockLost = errors.New("redisstore: lock lost: its lease expired")

// TryLock takes the lock name if nobody holds it, without waiting.
func (s *Storage) TryLock(ctx context.Context, name string) (bool, error) {
	token := newToken()
	ok, err := s.rdb.SetNX(ctx, s.lockKey(name), token, s.opts.LockTTL).Result()
	if err := s.check(ctx, "lock", err); err != nil {
		return false, fmt.Errorf("redisstore: lock %s: %w", name, err)
	}
	if !ok {
		return false, nil
	}
	rctx, cancel := context.WithCancel(context.Background())
	l := &heldLock{token: token, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.locks[name] = l
	s.mu.Unlock()
	go s.keepAlive(rctx, name, l)
	return true, nil
}

// Lock takes the lock name, waiting while another owner holds it, until
// ctx is done. It fails at once when Redis cannot be reached.
func (s *Storage) Lock(ctx context.Context, name string) error {
	for {
		ok, err := s.TryLock(ctx, name)
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(s.opts.LockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redisstore: lock %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// Unlock releases the lock name, which this Storage must hold. If its
// lease ran out meanwhile, the lock is left to whoever holds it now and
// the error wraps ErrLockLost.
func (s *Storage) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	l := s.locks[name]
	delete(s.locks, name)
	closed := s.closed
	s.mu.Unlock()
	if l == nil && closed {
		return nil // Close released it
	}
	if l == nil {
		return fmt.Errorf("redisstore: unlock %s: not held by this instance", name)
	}
	l.cancel()
	<-l.done
	n, err := unlockScript.Run(ctx, s.rdb, []string{s.lockKey(name)}, l.token).Int()
	if err := s.check(ctx, "unlock", err); err != nil {
		return fmt.Errorf("redisstore: unlock %s (it expires by itself): %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: unlock %s: %w", name, ErrLockLost)
	}
	return nil
}

// RenewLockLease makes the lock lockKey, which this Storage holds, last
// at least leaseDuration from now. certmagic calls it between the retries
// of a long ACME order; the lock is renewed every LockTTL/3 anyway.
func (s *Storage) RenewLockLease(ctx context.Context, lockKey string, leaseDuration time.Duration) error {
	s.mu.Lock()
	l := s.locks[lockKey]
	s.mu.Unlock()
	if l == nil {
		return fmt.Errorf("redisstore: renew lock %s: not held by this instance", lockKey)
	}
	return s.renew(ctx, ctx, lockKey, l.token, leaseDuration)
}

// renew extends the lease of a lock held with token. A failure is logged
// and counted unless stop is done (Unlock or Close ended the renewal, or
// the caller gave up).
func (s *Storage) renew(ctx, stop context.Context, name, token string, lease time.Duration) error {
	n, err := renewScript.Run(ctx, s.rdb, []string{s.lockKey(name)}, token, lease.Milliseconds()).Int()
	if err := s.check(stop, "renew", err); err != nil {
		if stop.Err() != nil {
			return err
		}
		s.stats.renewals.WithLabelValues("unreachable").Inc()
		s.log.Error("certificate storage lock not renewed: it expires unless Redis answers in time", "lock", name, "error", err)
		return fmt.Errorf("redisstore: renew lock %s: %w", name, err)
	}
	if n == 0 {
		s.stats.renewals.WithLabelValues("lost").Inc()
		s.log.Error("certificate storage lock lost: its lease expired and another instance may hold it", "lock", name)
		return fmt.Errorf("redisstore: renew lock %s: %w", name, ErrLockLost)
	}
	return nil
}

// keepAlive renews a held lock every LockTTL/3 until Unlock or Close.
// A failed renewal is retried at the next tick; a lost lock is not.
func (s *Storage) keepAlive(ctx context.Context, name string, l *heldLock) {
	defer close(l.done)
	t := time.NewTicker(s.opts.LockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		err := s.renew(rctx, ctx, name, l.token, s.opts.LockTTL)
		cancel()
		if errors.Is(err, ErrLockLost) {
			return
		}
	}
}
