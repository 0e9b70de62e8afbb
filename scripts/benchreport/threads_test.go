package main

import (
	"strings"
	"testing"
)

// The switches of a run: every thread's for the totals; for the wake-ups
// only the threads other than the one that ran most, a thread that
// started during the run from zero, and one that ended not at all.
func TestCountSwitches(t *testing.T) {
	before, err := parseThreads(strings.NewReader(
		"100 5000000 10 1\n"+ // the loop
			"101 900000 50 0\n"+ // sysmon
			"102 100000 7 0\n"+ // ends during the run
			"\n"), "before")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseThreads(strings.NewReader(
		"100 905000000 20010 300\n"+
			"101 2900000 450 2\n"+
			"103 400000 30 1\n"), "after")
	if err != nil {
		t.Fatal(err)
	}
	got := countSwitches(before, after)
	want := switches{vol: 20000 + 400 + 30, invol: 299 + 2 + 1, wakeups: 400 + 30}
	if got != want {
		t.Errorf("switches %+v, want %+v", got, want)
	}
}

func TestParseThreadsRefusesOtherLines(t *testing.T) {
	for _, in := range []string{"100 5 6\n", "100 5 6 x\n"} {
		if _, err := parseThreads(strings.NewReader(in), "snap"); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
