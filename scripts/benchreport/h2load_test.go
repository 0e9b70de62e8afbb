package main

import (
	"os"
	"strings"
	"testing"
)

// testdata/h2load.txt is the log of round 1 of pollproxy-epoll in the
// real run (h2load's output, then scripts/bench's CPU line): its row in
// testdata/results.tsv is the one the script wrote, but for the latency
// column, which took h2load's max for the mean.
func TestRowFromH2loadLog(t *testing.T) {
	f, err := os.Open("testdata/h2load.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o, err := parseH2load(f)
	if err != nil {
		t.Fatal(err)
	}
	// The CPU time is the log's own; a wall time the row rounds to
	// 0.25 s and 39% of a core, as it was.
	c := cellRun{round: "1", proxy: "pollproxy-epoll", cell: "h2:1:1", requests: "2000",
		cpuNs: 95484857, wallUs: 247000, load: "3.28"}
	want := "1\tpollproxy-epoll\th2:1:1\t2000\t2000\t0\t0\t2000\t9625\t0.10\t0.25\t47.7\t39\t94us\th2\tTLS_AES_128_GCM_SHA256\t3.28\t-\t-\t-\t-\t-"
	if got := row(c, o); got != want {
		t.Errorf("row:\n%q\nwant\n%q", got, want)
	}
	var b strings.Builder
	progress(&b, c, o, "LOG")
	if want := "bench: round 1 pollproxy-epoll  h2:1:1       9625 req/s   47.7 us/req  cpu 39%  ok 2000 failed 0 errored 0  h2  load 3.28\n"; b.String() != want {
		t.Errorf("progress:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestRowOfAKilledRun: h2load killed by the timeout before its summary
// leaves a row of zeros and dashes, which the report leaves out, and
// warnings for each thing wrong.
func TestRowOfAKilledRun(t *testing.T) {
	o, err := parseH2load(strings.NewReader("starting benchmark...\nTLS Protocol: TLSv1.3\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := cellRun{round: "2", proxy: "nginx", cell: "h1:6", requests: "20000", exit: 124,
		cpuNs: 2e9, wallUs: 60e6, load: "7.01"}
	want := "2\tnginx\th1:6\t20000\t0\t0\t0\t0\t0\t2.00\t60.00\t-\t3\t-\tnone\t-\t7.01\t-\t-\t-\t-\t-"
	got := row(c, o)
	if got != want {
		t.Errorf("row:\n%q\nwant\n%q", got, want)
	}
	if r := mustParse(t, resultsHeader+"\n"+got+"\n"); r[0].complete() {
		t.Error("a killed run counts as complete")
	}
	var b strings.Builder
	progress(&b, c, o, "LOG")
	for _, w := range []string{"negotiated 'none', not http/1.1 (log: LOG)", "h2load exit 124 (log: LOG)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("progress has no %q:\n%s", w, b.String())
		}
	}
}

// TestRowWarnsOfFailures: failed or errored requests make a warning.
func TestRowWarnsOfFailures(t *testing.T) {
	log := "Application protocol: h2\nfinished in 1.00s, 1000.00 req/s, 1MB/s\n" +
		"requests: 1000 total, 1000 started, 1000 done, 990 succeeded, 10 failed, 0 errored, 0 timeout\n" +
		"status codes: 990 2xx, 0 3xx, 0 4xx, 0 5xx\n"
	o, err := parseH2load(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	c := cellRun{round: "1", proxy: "h2o", cell: "h2:6:20", requests: "1000", cpuNs: 1e8, wallUs: 1e6, load: "1"}
	if got, want := row(c, o), "1\th2o\th2:6:20\t1000\t990\t10\t0\t990\t1000\t0.10\t1.00\t101.0\t10\t-\th2\t-\t1\t-\t-\t-\t-\t-"; got != want {
		t.Errorf("row:\n%q\nwant\n%q", got, want)
	}
	var b strings.Builder
	progress(&b, c, o, "LOG")
	if !strings.Contains(b.String(), "h2o h2:6:20 had failed or errored requests (log: LOG)") {
		t.Errorf("no warning of the failed requests:\n%s", b.String())
	}
}
