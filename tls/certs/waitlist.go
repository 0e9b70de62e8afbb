package certs

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// storageHealth is implemented by a shared storage that can be away, as
// Redis (tls/redisstore): Up reports whether its last command succeeded,
// Ping asks it, and OnReachable registers a function to run, on a
// goroutine of its own, when it answers again after it did not.
// Before its first command it is neither Up nor Down.
type storageHealth interface {
	Up() bool
	Down() bool
	Ping(context.Context) error
	OnReachable(func())
}

// waitRetryInterval is how often names waiting for the storage are tried
// again when no "reachable again" notice came: a storage that answers
// PING but failed the certificate's commands, or a notice that raced with
// the names being put aside.
const waitRetryInterval = time.Minute

// waitRetrySpacing is the least time between two retries that left names
// waiting: a Redis that answers PING but fails other commands (out of
// memory, say) comes back and goes away with every command, and each
// return would otherwise set off another round.
const waitRetrySpacing = 5 * time.Second

// waitList holds the names whose certificates could not be loaded,
// issued or ordered because the storage did not answer when they were
// added. Handshakes for them fail meanwhile; every other name is served.
// They are tried again as soon as the storage answers (OnReachable), so
// an instance started while Redis is down serves them moments after Redis
// returns, not after certmagic's retry backoff (a minute, then longer).
//
// Nothing is issued while the storage is away: the local CA's root is the
// one in the shared storage, and a root made up meanwhile would split the
// cluster's trust.
type waitList struct {
	health storageHealth
	log    *slog.Logger
	kick   chan struct{} // capacity 1: a retry is due

	mu    sync.Mutex
	names map[string]waiting
}

// waiting is a name put aside: its policy and, for ACME, the context of
// the AddACMEAsync call that bounds its background work.
type waiting struct {
	m   *managed
	ctx context.Context
}

// watchStorage sets up the wait list when c's storage can be away, and
// starts the goroutine that retries it, which ends with c.ctx.
func (c *Manager) watchStorage(log *slog.Logger) {
	h, ok := c.storage.(storageHealth)
	if !ok {
		return
	}
	w := &waitList{health: h, log: log, kick: make(chan struct{}, 1), names: map[string]waiting{}}
	c.wait = w
	h.OnReachable(w.wake)
	go c.retryWaiting()
}

func (w *waitList) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// storageAway reports whether c's storage is one that can be away and
// does not answer now. It asks only a storage not yet heard from: one
// last seen down is taken as down (its health check notices its return
// within a second or so, and OnReachable then retries), so that a server
// that drops packets, where each command waits out its timeout, costs
// one timeout at start rather than one per site.
func (c *Manager) storageAway() bool {
	w := c.wait
	switch {
	case w == nil || w.health.Up():
		return false
	case w.health.Down():
		return true
	}
	// Bounded by the storage's own command timeout; c.ctx ends it at
	// Close.
	return w.health.Ping(c.ctx) != nil
}

// deferWhileAway puts names aside, to be tried again when the storage
// answers, if the storage is away; it reports whether it did. The names
// stay claimed by m.
func (c *Manager) deferWhileAway(m *managed, ctx context.Context, names []string) bool {
	if !c.storageAway() {
		return false
	}
	w := c.wait
	// A name already in memory (a reload) keeps being served and
	// renewed from there: it does not wait.
	var missing []string
	for _, n := range names {
		if len(c.cache.AllMatchingCertificates(n)) == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return true
	}
	names = missing
	w.mu.Lock()
	for _, n := range names {
		w.names[n] = waiting{m: m, ctx: ctx}
	}
	w.mu.Unlock()
	w.log.Warn("certificate storage unreachable: these names get their certificates when it answers; their handshakes fail until then",
		"names", strings.Join(names, ","), "from", m.desc)
	// The storage may have come back between the failure and now, its
	// notice finding nothing to retry.
	if w.health.Up() {
		w.wake()
	}
	return true
}

// retryWaiting tries the waiting names again whenever the storage says
// it is back, and every waitRetryInterval while some remain.
func (c *Manager) retryWaiting() {
	w := c.wait
	t := time.NewTicker(waitRetryInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
		if c.retryOnce() {
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(waitRetrySpacing):
			}
		}
	}
}

// retryOnce loads or obtains every waiting name's certificate, if the
// storage answers: a local CA name synchronously (the CA itself comes
// from storage), an ACME name by loading it from storage or, when storage
// has none, by starting certmagic's background order. Names that fail
// again wait for the next notice or tick; it reports whether some did.
func (c *Manager) retryOnce() bool {
	w := c.wait
	w.mu.Lock()
	todo := make([]string, 0, len(w.names))
	for n := range w.names {
		todo = append(todo, n)
	}
	w.mu.Unlock()
	if len(todo) == 0 || c.storageAway() {
		return false
	}
	sort.Strings(todo)
	var done []string
	failed := false
	for _, n := range todo {
		w.mu.Lock()
		it, ok := w.names[n]
		w.mu.Unlock()
		if !ok {
			continue
		}
		err := c.retryName(n, it)
		if err != nil {
			failed = true
			w.log.Warn("certificate still waiting for the storage", "name", n, "error", err)
			continue
		}
		w.mu.Lock()
		if cur, ok := w.names[n]; ok && cur == it {
			delete(w.names, n)
		}
		w.mu.Unlock()
		done = append(done, n)
	}
	if len(done) > 0 {
		w.log.Info("certificate storage answers: certificates loaded, issued or ordered for the names that waited",
			"names", strings.Join(done, ","))
	}
	return failed
}

func (c *Manager) retryName(n string, it waiting) error {
	if it.m.sync {
		ctx, cancel := context.WithTimeout(c.ctx, addTimeout)
		defer cancel()
		return it.m.cfg.ManageSync(ctx, []string{n})
	}
	if it.ctx.Err() != nil {
		return nil // its configuration is gone: nothing to do
	}
	_, err := it.m.cfg.CacheManagedCertificate(it.ctx, n)
	if errors.Is(err, fs.ErrNotExist) {
		// Storage answers and has none: order it, in the background
		// with certmagic's retries and under its lock, as AddACMEAsync
		// does.
		return it.m.cfg.ManageAsync(it.ctx, []string{n})
	}
	return err
}
