package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/ holds a real run of scripts/bench (one cell, two rounds,
// pollproxy beside its baseline build, nginx and HAProxy) from before
// the report moved out of awk: results.tsv as it wrote it, and the
// median.tsv, paired.tsv and table.md it made of them (the two .tsv in
// the table's order; awk wrote its lines in the order of its hash).

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReportAsTheScriptWroteIt runs the report command on a copy of the
// real results directory and compares every file it writes with what
// the script wrote.
func TestReportAsTheScriptWroteIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.tsv"), []byte(readTestdata(t, "results.tsv")), 0o644); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "chart.dat")
	if err := reportCmd([]string{"-rounds", "2", "-requests", "2000", "-chart", chart, dir}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"median.tsv", "paired.tsv", "table.md"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := readTestdata(t, name); string(got) != want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
	for name, want := range map[string]string{
		chart:         "cell\tpollproxy-epoll\tbaseline-epoll\tnginx\thaproxy\n\"h2 -c 1 -m 1\"\t6046\t6394\t5914\t3292\n",
		chart + ".us": "cell\tpollproxy-epoll\tbaseline-epoll\tnginx\thaproxy\n\"h2 -c 1 -m 1\"\t85.7\t92.8\t95.1\t115.2\n",
	} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s:\n%q\nwant\n%q", filepath.Base(name), got, want)
		}
	}
}

// TestReportInfersRoundsAndRequests: without the flags, the table's first
// line says what results.tsv shows, so an old run's results.tsv gives its
// report again.
func TestReportInfersRoundsAndRequests(t *testing.T) {
	tb := newTable(mustParse(t, readTestdata(t, "results.tsv")))
	var b strings.Builder
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	if want := readTestdata(t, "table.md"); b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func mustParse(t *testing.T, tsv string) []run {
	t.Helper()
	runs, err := parseResults(strings.NewReader(tsv), "results.tsv")
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// edit changes column col (0-based) of the row of round and proxy.
func edit(t *testing.T, tsv, round, proxy string, col int, v string) string {
	t.Helper()
	lines := strings.Split(tsv, "\n")
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) > col && f[0] == round && f[1] == proxy {
			f[col] = v
			lines[i] = strings.Join(f, "\t")
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no row of round %s, proxy %s", round, proxy)
	return ""
}

// TestIncompleteRunsLeftOut: a run that did not get all its 2xx (a
// timeout, errors) or measured no rate counts in no median and no ratio;
// its missing requests are shown as failed, and a proxy with no complete
// run shows "-" where its figures and the ratios to it would be.
func TestIncompleteRunsLeftOut(t *testing.T) {
	tsv := readTestdata(t, "results.tsv")
	// nginx lost 150 responses in round 2: its median is round 1's.
	tsv = edit(t, tsv, "2", "nginx", 7, "1850")
	// baseline-epoll measured no rate in either round.
	tsv = edit(t, tsv, "1", "baseline-epoll", 8, "0")
	tsv = edit(t, tsv, "2", "baseline-epoll", 8, "0")
	tb := newTable(mustParse(t, tsv))

	var med strings.Builder
	if err := writeMedians(&med, tb.m, tb.proxies, tb.cells); err != nil {
		t.Fatal(err)
	}
	wantMed := "pollproxy-epoll\th2:1:1\t6046\t85.7\t34\t0\n" +
		"baseline-epoll\th2:1:1\t-\t-\t-\t0\n" +
		"nginx\th2:1:1\t9513\t49.1\t40\t150\n" +
		"haproxy\th2:1:1\t3292\t115.2\t27\t0\n"
	if med.String() != wantMed {
		t.Errorf("median.tsv:\n%s\nwant:\n%s", med.String(), wantMed)
	}

	// Round 1's best anchor is nginx (49.1), round 2's HAProxy (159.6,
	// nginx's run left out): 47.7/49.1 and 123.7/159.6. No baseline ratio.
	var pai strings.Builder
	if err := writePaired(&pai, tb.p, tb.cells); err != nil {
		t.Fatal(err)
	}
	if want := "h2:1:1\tbest\t0.87\t0.78\t0.97\t2\n"; pai.String() != want {
		t.Errorf("paired.tsv:\n%s\nwant:\n%s", pai.String(), want)
	}

	var tab strings.Builder
	if err := tb.write(&tab); err != nil {
		t.Fatal(err)
	}
	row := strings.Split(tab.String(), "\n")[4]
	want := "| h2 -c 1 -m 1 | 6046 | 85.7 | - | - | 9513 (150 failed) | 49.1 | 3292 | 115.2 | 0.64 | 1.75 | nginx 49.1 | 1.75 | 0.87 (0.78–0.97) | - |  |"
	if row != want {
		t.Errorf("table row:\n%s\nwant:\n%s", row, want)
	}
}

// TestColumnsFollowTheProxies: the ratio columns appear only when what
// they divide by was measured: to nginx with nginx, to the best anchor
// with two anchors or more, to the baseline with the reference's twin.
func TestColumnsFollowTheProxies(t *testing.T) {
	tsv := readTestdata(t, "results.tsv")
	keep := func(proxies ...string) []run {
		var kept []string
		for i, l := range strings.Split(tsv, "\n") {
			f := strings.Split(l, "\t")
			for _, p := range proxies {
				if i == 0 || (len(f) > 1 && f[1] == p) {
					kept = append(kept, l)
					break
				}
			}
		}
		return mustParse(t, strings.Join(kept, "\n"))
	}
	for _, c := range []struct {
		proxies []string
		header  string
	}{
		{[]string{"pollproxy-epoll", "nginx"},
			"| cell | pollproxy-epoll req/s | pollproxy-epoll µs/req | nginx req/s | nginx µs/req | pollproxy-epoll/nginx req/s | pollproxy-epoll/nginx µs/req |"},
		{[]string{"pollproxy-epoll", "haproxy"},
			"| cell | pollproxy-epoll req/s | pollproxy-epoll µs/req | haproxy req/s | haproxy µs/req |"},
		{[]string{"nginx", "haproxy", "baseline-epoll"},
			"| cell | baseline-epoll req/s | baseline-epoll µs/req | nginx req/s | nginx µs/req | haproxy req/s | haproxy µs/req |"},
		{[]string{"pollproxy-epoll", "baseline-epoll"},
			"| cell | pollproxy-epoll req/s | pollproxy-epoll µs/req | baseline-epoll req/s | baseline-epoll µs/req | pollproxy-epoll/baseline-epoll µs/req | pollproxy-epoll/baseline-epoll per round: median (range) |"},
	} {
		tb := newTable(keep(c.proxies...))
		var b strings.Builder
		if err := tb.write(&b); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if lines[2] != c.header {
			t.Errorf("%v: header\n%s\nwant\n%s", c.proxies, lines[2], c.header)
		}
		if got, want := strings.Count(lines[3], "|"), strings.Count(c.header, "|"); got != want {
			t.Errorf("%v: separator %q has %d bars, the header %d", c.proxies, lines[3], got, want)
		}
		if got, want := strings.Count(lines[4], "|"), strings.Count(c.header, "|"); got != want {
			t.Errorf("%v: row %q has %d bars, the header %d", c.proxies, lines[4], got, want)
		}
	}
}

func TestLabel(t *testing.T) {
	for cell, want := range map[string]string{
		"h2:6:20":    "h2 -c 6 -m 20",
		"h1:12":      "h1 -c 12",
		"h2u:6:20":   "h2 -c 6 -m 20 unix",
		"h1u:6":      "h1 -c 6 unix",
		"h2s:6:20":   "h2 -c 6 -m 20 tls",
		"h1s:6":      "h1 -c 6 tls",
		"h2c:6:20":   "h2 -c 6 -m 20 h2c",
		"grpc:1:1":   "grpc unary -c 1 -m 1",
		"grpcs:6:20": "grpc stream -c 6 -m 20",
	} {
		if got := label(cell); got != want {
			t.Errorf("label(%s) = %q, want %q", cell, got, want)
		}
	}
}

// TestCountsPerRequest: a results.tsv with the count columns gives
// counts.tsv and the table of counts, each the median over the complete
// rounds of the run's count over its requests that succeeded; a proxy
// whose runs did not count its system calls shows "-" for them, and a
// results.tsv without the columns (the testdata's, from before them) has
// no table of counts.
func TestCountsPerRequest(t *testing.T) {
	tsv := readTestdata(t, "results.tsv")
	if strings.Contains(tsv, "per request (median)") {
		t.Fatal("testdata has counts already")
	}
	// syscalls, vol_cs, invol_cs, wakeups of each run (2000 requests)
	counts := map[[2]string]string{
		{"1", "pollproxy-epoll"}: "12000\t4000\t200\t400",
		{"2", "pollproxy-epoll"}: "13000\t4400\t600\t1000",
		{"1", "nginx"}:           "-\t4100\t100\t0",
		{"2", "nginx"}:           "-\t4300\t300\t0",
	}
	tb := newTable(mustParse(t, withColumns(tsv, counts)))

	var c strings.Builder
	if err := writeCounts(&c, tb.m, tb.proxies, tb.cells); err != nil {
		t.Fatal(err)
	}
	want := "pollproxy-epoll\th2:1:1\t6.25\t2.10\t0.20\t0.35\n" +
		"baseline-epoll\th2:1:1\t-\t-\t-\t-\n" +
		"nginx\th2:1:1\t-\t2.10\t0.10\t0.00\n" +
		"haproxy\th2:1:1\t-\t-\t-\t-\n"
	if c.String() != want {
		t.Errorf("counts.tsv:\n%s\nwant:\n%s", c.String(), want)
	}

	var b strings.Builder
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	row := "| h2 -c 1 -m 1 | 6.25 / 2.10 / 0.20 / 0.35 | - / - / - / - | - / 2.10 / 0.10 / 0.00 | - / - / - / - |"
	if !strings.Contains(b.String(), "\n"+row+"\n") {
		t.Errorf("table has no row\n%s\n%s", row, b.String())
	}

	var old strings.Builder
	if err := newTable(mustParse(t, tsv)).write(&old); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(old.String(), "per request (median)") {
		t.Errorf("a table of counts from a results.tsv without them:\n%s", old.String())
	}
}

// TestOriginConns: a results.tsv with the origin_conns column gives the
// table of origin connections, each the median over the complete rounds
// ("-" for a proxy whose runs did not count them); a results.tsv without
// the column has no such table.
func TestOriginConns(t *testing.T) {
	tsv := readTestdata(t, "results.tsv")
	// syscalls, vol_cs, invol_cs, wakeups, origin_conns of each run
	counts := map[[2]string]string{
		{"1", "pollproxy-epoll"}: "-\t-\t-\t-\t1",
		{"2", "pollproxy-epoll"}: "-\t-\t-\t-\t3",
		{"1", "nginx"}:           "-\t-\t-\t-\t20",
		{"2", "nginx"}:           "-\t-\t-\t-\t24",
	}
	var b strings.Builder
	if err := newTable(mustParse(t, withColumns(tsv, counts))).write(&b); err != nil {
		t.Fatal(err)
	}
	row := "| h2 -c 1 -m 1 | 2 | - | 22 | - |"
	if !strings.Contains(b.String(), "connections to the origin") || !strings.Contains(b.String(), "\n"+row+"\n") {
		t.Errorf("table has no origin connections row\n%s\n%s", row, b.String())
	}
	var old strings.Builder
	if err := newTable(mustParse(t, tsv)).write(&old); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(old.String(), "connections to the origin") {
		t.Errorf("a table of origin connections from a results.tsv without them:\n%s", old.String())
	}
}

// withColumns appends to each row of a results.tsv the columns cols has
// for its {round, proxy}.
func withColumns(tsv string, cols map[[2]string]string) string {
	lines := strings.Split(strings.TrimRight(tsv, "\n"), "\n")
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if c, ok := cols[[2]string{f[0], f[1]}]; ok {
			lines[i] = l + "\t" + c
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
