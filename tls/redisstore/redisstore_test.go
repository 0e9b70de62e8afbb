package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/tls/redisstore"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

func newStorage(t *testing.T, addr string, mod func(*redisstore.Options)) *redisstore.Storage {
	t.Helper()
	o := redisstore.Options{Addrs: []string{addr}, KeyPrefix: "test", Timeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	if mod != nil {
		mod(&o)
	}
	s, err := redisstore.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// TestStorageContract exercises certmagic's Storage contract against a
// real redis-server: store, load, delete (values and directories), exists,
// list recursive and not, stat.
func TestStorageContract(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := newStorage(t, srv.Addr, nil)

	if _, err := s.Load(ctx, "certificates/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "nothing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.List(ctx, "nothing", true); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if s.Exists(ctx, "certificates") {
		t.Fatal("Exists on an empty storage")
	}

	before := time.Now()
	files := map[string]string{
		"certificates/ca/a.example/a.example.crt":  "cert a",
		"certificates/ca/a.example/a.example.key":  "key a",
		"certificates/ca/a.example/a.example.json": "{}",
		"certificates/ca/b.example/b.example.crt":  "cert b",
		"certificates/ca0/x":                       "a sibling whose name extends ca",
		"acme/account.json":                        "account",
		"top":                                      "",
	}
	for k, v := range files {
		if err := s.Store(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	// Binary values survive byte for byte.
	bin := []byte{0, 1, 2, 0xff, '\r', '\n', 0}
	if err := s.Store(ctx, "/bin//value/", bin); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, "bin/value"); err != nil || !bytes.Equal(got, bin) {
		t.Fatalf("binary value: %q %v", got, err)
	}
	for k, v := range files {
		got, err := s.Load(ctx, k)
		if err != nil || string(got) != v {
			t.Fatalf("Load %s: %q %v, want %q", k, got, err, v)
		}
	}
	if err := s.Store(ctx, "top", []byte("overwritten")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(ctx, "top"); string(got) != "overwritten" {
		t.Fatalf("overwrite: %q", got)
	}

	for _, k := range []string{"certificates", "certificates/ca", "certificates/ca/a.example", "certificates/ca/a.example/a.example.key", "top", "/acme/"} {
		if !s.Exists(ctx, k) {
			t.Errorf("Exists(%q) false", k)
		}
	}
	for _, k := range []string{"certificates/c", "certificates/ca/a", "acme/account", "certificates/ca/a.example/a.example.crt/x"} {
		if s.Exists(ctx, k) {
			t.Errorf("Exists(%q) true", k)
		}
	}

	list := func(dir string, recursive bool) []string {
		t.Helper()
		got, err := s.List(ctx, dir, recursive)
		if err != nil {
			t.Fatalf("List(%q, %v): %v", dir, recursive, err)
		}
		slices.Sort(got)
		return got
	}
	if got, want := list("certificates", false), []string{"certificates/ca", "certificates/ca0"}; !slices.Equal(got, want) {
		t.Errorf("List(certificates) = %q, want %q", got, want)
	}
	if got, want := list("certificates/ca", false), []string{"certificates/ca/a.example", "certificates/ca/b.example"}; !slices.Equal(got, want) {
		t.Errorf("List(certificates/ca) = %q, want %q", got, want)
	}
	if got, want := list("certificates/ca", true), []string{
		"certificates/ca/a.example/a.example.crt", "certificates/ca/a.example/a.example.json",
		"certificates/ca/a.example/a.example.key", "certificates/ca/b.example/b.example.crt",
	}; !slices.Equal(got, want) {
		t.Errorf("List(certificates/ca, recursive) = %q, want %q", got, want)
	}
	if got, want := list("", false), []string{"acme", "bin", "certificates", "top"}; !slices.Equal(got, want) {
		t.Errorf("List(root) = %q, want %q", got, want)
	}
	if got := list("", true); len(got) != len(files)+1 {
		t.Errorf("List(root, recursive) = %q", got)
	}

	st, err := s.Stat(ctx, "certificates/ca/a.example/a.example.key")
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsTerminal || st.Size != int64(len("key a")) || st.Key != "certificates/ca/a.example/a.example.key" ||
		st.Modified.Before(before.Add(-time.Second)) || st.Modified.After(time.Now().Add(time.Second)) {
		t.Fatalf("Stat of a value: %+v", st)
	}
	st, err = s.Stat(ctx, "certificates/ca")
	if err != nil || st.IsTerminal {
		t.Fatalf("Stat of a directory: %+v %v", st, err)
	}

	// Deleting a value leaves its siblings; deleting a directory takes
	// everything below it and nothing beside it.
	if err := s.Delete(ctx, "certificates/ca/b.example/b.example.crt"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "certificates/ca/b.example") {
		t.Error("directory still exists after its only value was deleted")
	}
	if err := s.Delete(ctx, "certificates/ca"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "certificates/ca/a.example/a.example.crt") || s.Exists(ctx, "certificates/ca") {
		t.Error("directory delete left values behind")
	}
	if got, err := s.Load(ctx, "certificates/ca0/x"); err != nil || len(got) == 0 {
		t.Errorf("directory delete took a sibling: %v", err)
	}
	if err := s.Delete(ctx, "never/stored"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}

	// Another Storage with the same prefix sees the same keys; another
	// prefix sees none of them.
	same := newStorage(t, srv.Addr, nil)
	if got, err := same.Load(ctx, "acme/account.json"); err != nil || string(got) != "account" {
		t.Fatalf("same prefix: %q %v", got, err)
	}
	other := newStorage(t, srv.Addr, func(o *redisstore.Options) { o.KeyPrefix = "other" })
	if other.Exists(ctx, "acme") {
		t.Fatal("a storage with another key prefix sees the keys")
	}
}

// TestStorageSurvivesRestart stores, restarts redis-server, and loads.
func TestStorageSurvivesRestart(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStorage(t, srv.Addr, nil)
	if err := s.Store(ctx, "certificates/x/x.crt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	var got []byte
	var err error
	for range 50 { // the client reconnects on the next command
		if got, err = s.Load(ctx, "certificates/x/x.crt"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if string(got) != "x" || !s.Exists(ctx, "certificates/x") {
		t.Fatalf("after a restart: %q %v", got, err)
	}
}

// TestStorageUnreachable checks that an outage is loud: operations fail,
// pollproxy_storage_up goes to 0 with errors counted and one log line, and
// it comes back to 1 with a second line when Redis returns.
func TestStorageUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs servertest.SyncBuffer
	s := newStorage(t, srv.Addr, func(o *redisstore.Options) {
		o.HealthInterval = 100 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	reachable := make(chan struct{}, 4)
	s.OnReachable(func() { reachable <- struct{}{} })
	if err := s.Store(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if !s.Up() {
		t.Fatal("not up after a successful store")
	}

	srv.Stop()
	if _, err := s.Load(ctx, "a"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load with Redis down: %v, want a connection error", err)
	}
	if s.Exists(ctx, "a") {
		t.Fatal("Exists true with Redis down")
	}
	if err := s.Lock(ctx, "l"); err == nil {
		t.Fatal("Lock succeeded with Redis down")
	}
	if s.Up() {
		t.Fatal("Up with Redis down")
	}
	if len(reachable) != 0 {
		t.Fatal("OnReachable's function ran while Redis was up from the start")
	}
	if _, ok := logs.Await("certificate storage unreachable", 10*time.Second, nil); !ok {
		t.Fatalf("no outage log line:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "certificate storage unreachable"); n != 1 {
		t.Errorf("outage logged %d times, want once:\n%s", n, logs.String())
	}
	text := gather(t, reg)
	if !strings.Contains(text, "pollproxy_storage_up 0") || !strings.Contains(text, `pollproxy_storage_errors_total{op="load"} 1`) {
		t.Fatalf("metrics during the outage:\n%s", text)
	}

	srv.Restart()
	// The periodic PING notices the return without any other traffic.
	if _, ok := logs.Await("certificate storage reachable again", 10*time.Second, nil); !ok {
		t.Fatalf("no recovery log line:\n%s", logs.String())
	}
	if text := gather(t, reg); !strings.Contains(text, "pollproxy_storage_up 1") {
		t.Fatalf("metrics after the outage:\n%s", text)
	}
	select {
	case <-reachable:
	case <-time.After(10 * time.Second):
		t.Fatal("OnReachable's function did not run when Redis returned")
	}
	select {
	case <-reachable:
		t.Fatal("OnReachable's function ran twice for one return")
	case <-time.After(300 * time.Millisecond):
	}
	if got, err := s.Load(ctx, "a"); err != nil || string(got) != "1" {
		t.Fatalf("after recovery: %q %v", got, err)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			name := mf.GetName()
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			b.WriteString(name + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
		}
	}
	return b.String()
}
