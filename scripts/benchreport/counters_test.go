package main

import (
	"os"
	"strings"
	"testing"
)

// TestCountersAsTheScriptWroteThem: the two pollproxy logs of the real run
// give its counters.txt.
func TestCountersAsTheScriptWroteThem(t *testing.T) {
	var b strings.Builder
	for _, p := range []string{"pollproxy-epoll", "baseline-epoll"} {
		f, err := os.Open("testdata/" + p + ".log")
		if err != nil {
			t.Fatal(err)
		}
		err = counters(&b, p, 6400, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := readTestdata(t, "counters.txt"); b.String() != want {
		t.Errorf("counters:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCountersWithoutStats(t *testing.T) {
	var b strings.Builder
	if err := counters(&b, "pollproxy-poll", 10, strings.NewReader("pollproxy: terminated\n")); err != nil {
		t.Fatal(err)
	}
	if want := "pollproxy-poll: 10 requests through it (warm-up included)\n(no --stats lines: see its log)\n\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// A build that counts its loop's passes through the Go scheduler has them
// per request too.
func TestCountersWithYields(t *testing.T) {
	var b strings.Builder
	log := "loop 0 epoll: waits=20000 calls=20000 events=30000 wakeups=2 adds=4 mods=0 dels=3 yields=125\n"
	if err := counters(&b, "pollproxy-epoll", 10000, strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	want := "per request: adds 0.00040 mods 0.00000 dels 0.00030 waits 2.000 poller calls 2.000 events 3.000 yields 0.0125\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("got\n%s\nwant a line\n%s", b.String(), want)
	}
}
