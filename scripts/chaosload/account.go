package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// outcome is what became of one request or message.
type outcome int

const (
	ok      outcome = iota
	killed          // failed while its own origin was down
	failed          // failed, its origin up
	corrupt         // a body, checksum or message not as sent
	hung            // older than the limit, its origin up
	numOutcome
)

var outcomeNames = [numOutcome]string{"ok", "failed-in-kill", "failed", "corrupt", "hung"}

func (o outcome) String() string { return outcomeNames[o] }

// record is one request or one message of the load, as the client saw it.
type record struct {
	ID         uint64 // the request's id (a message: its stream's)
	Kind       string // what it was: "get h2", "ws h1 message", ...
	Start, End time.Time
	Origin     string // the origin that answered (its header), "" if none did
	Err        string // why it failed, "" if it did not
	Corrupt    bool   // it came back, not as sent
}

// window is a time an origin was down: from its SIGKILL to a grace after
// it accepted again (a request in flight at the kill, or on a pooled
// connection that died with it, fails inside it).
type window struct {
	origin   string
	from, to time.Time
}

// ledger classifies records against the faults of the run.
type ledger struct {
	limit    time.Duration     // older than this, to an origin that was up: hung
	down     []window          // every kill window
	upstream map[uint64]string // request id -> origin, from the access log
}

// origin is the origin record r went to: the one that answered it, else
// the upstream pollproxy logged for its request.
func (l *ledger) origin(r record) string {
	if r.Origin != "" {
		return r.Origin
	}
	return l.upstream[r.ID]
}

// wasDown says whether origin was down at some time while r ran.
func (l *ledger) wasDown(origin string, r record) bool {
	if origin == "" {
		return false
	}
	for _, w := range l.down {
		if w.origin == origin && !w.from.After(r.End) && !w.to.Before(r.Start) {
			return true
		}
	}
	return false
}

func (l *ledger) classify(r record) outcome {
	switch down := l.wasDown(l.origin(r), r); {
	case r.Corrupt:
		return corrupt
	case down && (r.Err != "" || r.End.Sub(r.Start) > l.limit):
		return killed
	case r.End.Sub(r.Start) > l.limit:
		return hung
	case r.Err != "":
		return failed
	}
	return ok
}

// readEvents reads the fault schedule's log, one event a line: "UNIXNANO
// kill NAME", "UNIXNANO up NAME", "UNIXNANO reload", "UNIXNANO switch
// ARGS". An origin's window runs from its kill to grace after its up (to
// the end of time without one). It counts the events by kind.
func readEvents(in io.Reader, grace time.Duration) ([]window, map[string]int, error) {
	var down []window
	open := map[string]int{} // origin -> its window in down not yet closed
	count := map[string]int{}
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || len(f) < 2 {
			return nil, nil, fmt.Errorf("events line %d: %q: want UNIXNANO EVENT [ARG]", line, sc.Text())
		}
		at := time.Unix(0, ns)
		count[f[1]]++
		switch f[1] {
		case "kill", "up":
			if len(f) != 3 {
				return nil, nil, fmt.Errorf("events line %d: %s wants an origin's name", line, f[1])
			}
			if i, isOpen := open[f[2]]; isOpen && f[1] == "up" {
				down[i].to = at.Add(grace)
				delete(open, f[2])
			} else if !isOpen && f[1] == "kill" {
				open[f[2]] = len(down)
				down = append(down, window{origin: f[2], from: at, to: time.Unix(1<<62, 0)})
			}
		}
	}
	return down, count, sc.Err()
}

// readAccessLog maps each request id of the load to the origin pollproxy
// sent it to, from its JSON access log (Caddy's shape: request.uri, then
// pollproxy's upstream): the id is the second segment of
// the path, the upstream an address that names maps to an origin.
func readAccessLog(in io.Reader, names map[string]string) (map[uint64]string, error) {
	up := map[uint64]string{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Request struct {
				URI string `json:"uri"`
			} `json:"request"`
			Upstream string `json:"upstream"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Request.URI == "" {
			continue // pollproxy's own messages share the stream
		}
		path, _, _ := strings.Cut(e.Request.URI, "?")
		_, id, _, isLoad := parsePath(path)
		if name, known := names[e.Upstream]; isLoad && known {
			up[id] = name
		}
	}
	return up, sc.Err()
}

// tally is the count of each outcome for each kind, and the records that
// were not ok.
type tally struct {
	count map[string]*[numOutcome]int
	bad   []badRecord
}

type badRecord struct {
	record
	outcome outcome
	origin  string
}

func (l *ledger) tally(records []record) tally {
	t := tally{count: map[string]*[numOutcome]int{}}
	for _, r := range records {
		o := l.classify(r)
		c := t.count[r.Kind]
		if c == nil {
			c = new([numOutcome]int)
			t.count[r.Kind] = c
		}
		c[o]++
		if o != ok {
			t.bad = append(t.bad, badRecord{r, o, l.origin(r)})
		}
	}
	sort.Slice(t.bad, func(i, j int) bool { return t.bad[i].Start.Before(t.bad[j].Start) })
	return t
}

// fails counts the outcomes that fail the run: all but ok and killed.
func (t tally) fails() int {
	n := 0
	for _, b := range t.bad {
		if b.outcome != killed {
			n++
		}
	}
	return n
}

// write prints the table of outcomes by kind, then every record that
// fails the run (and, with all, the killed ones too), times relative to
// t0.
func (t tally) write(w io.Writer, t0 time.Time, all bool) {
	kinds := make([]string, 0, len(t.count))
	for k := range t.count {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "%-18s", "kind")
	for _, n := range outcomeNames {
		fmt.Fprintf(w, " %14s", n)
	}
	fmt.Fprintln(w)
	var total [numOutcome]int
	for _, k := range kinds {
		fmt.Fprintf(w, "%-18s", k)
		for o, n := range t.count[k] {
			fmt.Fprintf(w, " %14d", n)
			total[o] += n
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-18s", "total")
	for _, n := range total {
		fmt.Fprintf(w, " %14d", n)
	}
	fmt.Fprintln(w)
	for _, b := range t.bad {
		if b.outcome == killed && !all {
			continue
		}
		origin := b.origin
		if origin == "" {
			origin = "-"
		}
		fmt.Fprintf(w, "%s: %s id %d origin %s at %.3fs for %.3fs: %s\n", b.outcome, b.Kind, b.ID, origin,
			b.Start.Sub(t0).Seconds(), b.End.Sub(b.Start).Seconds(), b.Err)
	}
}
