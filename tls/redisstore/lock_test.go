package redisstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/tls/redisstore"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

// The helper process: the test binary run again with these variables
// takes a lock, says "locked", and releases it when its stdin closes
// (or never, when it is killed).
const (
	helperAddr = "REDISSTORE_HELPER_ADDR"
	helperLock = "REDISSTORE_HELPER_LOCK"
	helperTTL  = "REDISSTORE_HELPER_TTL"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperAddr); addr != "" {
		os.Exit(lockHelper(addr))
	}
	os.Exit(m.Run())
}

func lockHelper(addr string) int {
	ttl, err := time.ParseDuration(os.Getenv(helperTTL))
	if err != nil {
		fmt.Println("bad ttl:", err)
		return 2
	}
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, KeyPrefix: "test", LockTTL: ttl,
		LockPoll: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := os.Getenv(helperLock)
	if err := s.Lock(ctx, name); err != nil {
		fmt.Println("lock:", err)
		return 1
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	if err := s.Unlock(ctx, name); err != nil {
		fmt.Println("unlock:", err)
		return 1
	}
	fmt.Println("unlocked")
	s.Close()
	return 0
}

// holder is a helper process holding a lock.
type holder struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	out   *bufio.Reader
}

// startHolder runs a helper process that takes name on addr with ttl and
// returns once it holds it.
func startHolder(t *testing.T, addr, name string, ttl time.Duration) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperAddr+"="+addr, helperLock+"="+name, helperTTL+"="+ttl.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		cmd.Process.Kill() // by its PID; harmless when it has exited
		cmd.Wait()
	})
	if line, err := h.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper process: %q %v", line, err)
	}
	return h
}

// TestLockExclusiveAcrossProcesses: while another process holds a lock,
// TryLock fails and Lock waits; once it unlocks, Lock gets it.
func TestLockExclusiveAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStorage(t, srv.Addr, func(o *redisstore.Options) { o.LockPoll = 20 * time.Millisecond })

	h := startHolder(t, srv.Addr, "issue_cert_a.example", 5*time.Second)
	if ok, err := s.TryLock(ctx, "issue_cert_a.example"); ok || err != nil {
		t.Fatalf("TryLock while another process holds the lock: %v %v", ok, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err := s.Lock(short, "issue_cert_a.example")
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held elsewhere: %v, want the context's deadline", err)
	}
	// Another name is free.
	if ok, err := s.TryLock(ctx, "issue_cert_b.example"); !ok || err != nil {
		t.Fatalf("TryLock of another name: %v %v", ok, err)
	}
	if err := s.Unlock(ctx, "issue_cert_b.example"); err != nil {
		t.Fatal(err)
	}

	got := make(chan error, 1)
	go func() { got <- s.Lock(ctx, "issue_cert_a.example") }()
	select {
	case err := <-got:
		t.Fatalf("Lock returned while the helper holds the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	h.stdin.Close()
	if line, _ := h.out.ReadString('\n'); strings.TrimSpace(line) != "unlocked" {
		t.Fatalf("helper: %q", line)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after the helper unlocked: %v", err)
	}
	if err := s.Unlock(ctx, "issue_cert_a.example"); err != nil {
		t.Fatal(err)
	}
}

// TestLockOfKilledHolderExpires: a holder killed with SIGKILL stops
// renewing, and its lock is free after its TTL, not before.
func TestLockOfKilledHolderExpires(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStorage(t, srv.Addr, func(o *redisstore.Options) { o.LockPoll = 20 * time.Millisecond })

	const ttl = 1500 * time.Millisecond
	h := startHolder(t, srv.Addr, "issue_cert_k.example", ttl)
	// The holder renews: after more than two TTLs it still holds it.
	time.Sleep(2*ttl + 200*time.Millisecond)
	if ok, err := s.TryLock(ctx, "issue_cert_k.example"); ok || err != nil {
		t.Fatalf("TryLock while a live holder renews: %v %v", ok, err)
	}

	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
	killed := time.Now()
	if err := s.Lock(ctx, "issue_cert_k.example"); err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	waited := time.Since(killed)
	t.Logf("lock free %v after SIGKILL (ttl %v)", waited, ttl)
	if waited > ttl+time.Second {
		t.Fatalf("lock of a dead holder took %v to expire, ttl %v", waited, ttl)
	}
	if err := s.Unlock(ctx, "issue_cert_k.example"); err != nil {
		t.Fatal(err)
	}
}

// TestLockLeaseRenewal: a lock held through a slow order, far longer than
// its TTL, stays held; RenewLockLease extends it beyond the TTL; a lock
// whose lease ran out while Redis was away is reported lost and counted.
func TestLockLeaseRenewal(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs servertest.SyncBuffer
	// The lease and the command timeout leave room for a loaded machine:
	// a command that takes longer than Timeout fails the test's own Lock,
	// and a renewal slower than the TTL loses the lock.
	const ttl = 1500 * time.Millisecond
	a := newStorage(t, srv.Addr, func(o *redisstore.Options) {
		o.LockTTL = ttl
		o.Timeout = 750 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	b := newStorage(t, srv.Addr, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collector())

	if err := a.Lock(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	// Held for four TTLs, or two under -short: either needs renewals.
	hold := 4 * ttl
	if testing.Short() {
		hold = 2 * ttl
	}
	for deadline := time.Now().Add(hold); time.Now().Before(deadline); time.Sleep(ttl / 4) {
		if ok, err := b.TryLock(ctx, "slow"); ok || err != nil {
			t.Fatalf("another instance took a lock during a slow order: %v %v", ok, err)
		}
	}
	if err := a.RenewLockLease(ctx, "slow", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.RenewLockLease(ctx, "not-held", time.Second); err == nil {
		t.Fatal("RenewLockLease of a lock not held succeeded")
	}
	if err := a.Unlock(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx, "slow"); !ok || err != nil {
		t.Fatalf("TryLock after Unlock: %v %v", ok, err)
	}
	if err := b.Unlock(ctx, "slow"); err != nil {
		t.Fatal(err)
	}

	// Redis goes away while a holds a lock: the renewals fail (logged,
	// counted). It comes back empty-handed for the lock (its lease ran
	// out during the outage and b took it): a's next renewal finds the
	// lock lost, and a's Unlock leaves b's lock alone.
	if err := a.Lock(ctx, "outage"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, ok := logs.Await("certificate storage lock not renewed", 5*time.Second, nil); !ok {
		t.Fatalf("no log line for a failed renewal:\n%s", logs.String())
	}
	time.Sleep(ttl) // longer than the lease
	srv.Restart()
	// Redis keeps a key's absolute expiry in its append-only file, so
	// the lock is gone (or about to be) and b takes it.
	if err := b.Lock(ctx, "outage"); err != nil {
		t.Fatal(err)
	}
	// a may still renew at the very moment b takes the lock; either way
	// a no longer holds it.
	if _, ok := logs.Await("certificate storage lock lost", 5*time.Second, nil); !ok {
		t.Fatalf("no log line for a lost lock:\n%s", logs.String())
	}
	if err := a.Unlock(ctx, "outage"); !errors.Is(err, redisstore.ErrLockLost) {
		t.Fatalf("Unlock of a lost lock: %v, want ErrLockLost", err)
	}
	if ok, _ := a.TryLock(ctx, "outage"); ok {
		t.Fatal("a's Unlock released b's lock")
	}
	text := gather(t, reg)
	for _, want := range []string{`pollproxy_storage_lock_renewal_failures_total{reason="unreachable"}`, `pollproxy_storage_lock_renewal_failures_total{reason="lost"} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
	if err := b.Unlock(ctx, "outage"); err != nil {
		t.Fatal(err)
	}
}
