package main

import (
	"strings"
	"testing"
	"time"
)

func TestReadEvents(t *testing.T) {
	log := `1000000000 reload
2000000000 kill o1
2000000000 switch ["epoll","poll"]
3000000000 up o1
5000000000 kill o2
`
	down, count, err := readEvents(strings.NewReader(log), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if count["kill"] != 2 || count["up"] != 1 || count["reload"] != 1 || count["switch"] != 1 {
		t.Errorf("counts %v", count)
	}
	if len(down) != 2 || down[0].origin != "o1" || !down[0].from.Equal(time.Unix(2, 0)) || !down[0].to.Equal(time.Unix(4, 0)) {
		t.Fatalf("windows %+v", down)
	}
	if down[1].origin != "o2" || down[1].to.Before(time.Unix(1<<40, 0)) {
		t.Errorf("an origin never back is down to the end: %+v", down[1])
	}
	if _, _, err := readEvents(strings.NewReader("soon kill o1\n"), time.Second); err == nil {
		t.Error("a line without a time was read")
	}
}

func TestReadAccessLog(t *testing.T) {
	log := `{"time":"x","level":"INFO","msg":"reloading"}
{"msg":"handled request","request":{"uri":"/up/17"},"status":502,"upstream":"127.0.0.1:9001"}
{"msg":"handled request","request":{"uri":"/get/18/1024?x=1"},"status":200,"upstream":"127.0.0.1:9002"}
{"msg":"handled request","request":{"uri":"/favicon.ico"},"status":200,"upstream":"127.0.0.1:9002"}
{"msg":"handled request","request":{"uri":"/get/19/1"},"status":502,"upstream":""}
`
	up, err := readAccessLog(strings.NewReader(log), map[string]string{"127.0.0.1:9001": "o1", "127.0.0.1:9002": "o2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || up[17] != "o1" || up[18] != "o2" {
		t.Errorf("upstreams %v", up)
	}
}

// TestClassify: each outcome, the kill window of the record's own origin
// (the one that answered, else the access log's) and no other.
func TestClassify(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(100, 0).Add(time.Duration(s * float64(time.Second))) }
	l := &ledger{
		limit:    10 * time.Second,
		down:     []window{{origin: "o1", from: at(10), to: at(13)}},
		upstream: map[uint64]string{1: "o1", 2: "o2"},
	}
	for _, c := range []struct {
		name string
		r    record
		want outcome
	}{
		{"ok", record{ID: 3, Start: at(0), End: at(1), Origin: "o2"}, ok},
		{"failed, origin down, from the log", record{ID: 1, Start: at(9), End: at(10.5), Err: "502"}, killed},
		{"failed, origin down, from the header", record{ID: 9, Start: at(12), End: at(12.5), Origin: "o1", Err: "reset"}, killed},
		{"failed as another origin was down", record{ID: 2, Start: at(10), End: at(11), Err: "502"}, failed},
		{"failed, no origin known", record{ID: 7, Start: at(11), End: at(11.1), Err: "reset"}, failed},
		{"failed after the window", record{ID: 1, Start: at(13.5), End: at(14), Err: "502"}, failed},
		{"slow, its origin up", record{ID: 2, Start: at(5), End: at(35), Err: "deadline"}, hung},
		{"slow, its origin down meanwhile", record{ID: 1, Start: at(5), End: at(35), Err: "deadline"}, killed},
		{"slow but answered, its origin up", record{ID: 4, Start: at(0), End: at(10.5), Origin: "o2"}, hung},
		{"corrupt while its origin was down", record{ID: 1, Start: at(10), End: at(11), Origin: "o1", Corrupt: true}, corrupt},
	} {
		if got := l.classify(c.r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTally(t *testing.T) {
	l := &ledger{limit: time.Second, down: []window{{origin: "o1", from: time.Unix(0, 0), to: time.Unix(5, 0)}}}
	tl := l.tally([]record{
		{ID: 1, Kind: "get h2", Start: time.Unix(1, 0), End: time.Unix(1, 1), Origin: "o2"},
		{ID: 2, Kind: "get h2", Start: time.Unix(1, 0), End: time.Unix(1, 2), Origin: "o1", Err: "502"},
		{ID: 3, Kind: "upload h1", Start: time.Unix(1, 0), End: time.Unix(1, 3), Origin: "o2", Err: "corrupt", Corrupt: true},
	})
	if c := tl.count["get h2"]; c[ok] != 1 || c[killed] != 1 {
		t.Errorf("get h2: %v", c)
	}
	if tl.fails() != 1 {
		t.Errorf("%d fail the run, want 1 (the corrupt upload)", tl.fails())
	}
	var b strings.Builder
	tl.write(&b, time.Unix(0, 0), false)
	if !strings.Contains(b.String(), "corrupt: upload h1 id 3 origin o2 at 1.000s") || strings.Contains(b.String(), "id 2") {
		t.Errorf("report:\n%s", b.String())
	}
}
