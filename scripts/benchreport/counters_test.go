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
