package ab

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// crossoverPairs are the poller lines the crossover is tested with: an
// A/A pair on every backend, and the two best backends when there are two
// (a rotation then moves the loops for real).
func crossoverPairs() map[string][2]string {
	out := map[string][2]string{}
	av := netpoll.Available()
	for _, b := range av {
		out[b+" "+b] = [2]string{b, b}
	}
	if len(av) >= 2 {
		out[av[0]+" "+av[1]] = [2]string{av[0], av[1]}
	}
	return out
}

// TestSamplerCrossover runs four real loops in the crossover, serves
// requests on each from the loop, costing more CPU on whichever loop
// serves the second position of the line (a poller that is dearer), and
// checks the schedule, the washout and the verdict.
func TestSamplerCrossover(t *testing.T) {
	for name, pair := range crossoverPairs() {
		t.Run(name, func(t *testing.T) {
			g, err := netpoll.NewGroup(4, pair[:])
			if err != nil {
				t.Fatal(err)
			}
			g.Start()
			t.Cleanup(func() { g.Stop(); g.Close() })
			rec := NewRecorders()
			s := NewSampler(g, rec, time.Hour, pair[:])
			if s.Rotation() != DefaultRotateIntervals*time.Hour {
				t.Fatalf("rotation %v, want the default of %d intervals", s.Rotation(), DefaultRotateIntervals)
			}
			var arms []int
			rotateHook = func(a []int) { arms = a }
			t.Cleanup(func() { rotateHook = nil })
			s.Collect() // baseline
			loops := g.Loops()
			const slots = 12
			for iv := 0; iv < 3*slots*DefaultRotateIntervals; iv++ {
				for i, l := range loops {
					spin := 5 * time.Microsecond
					if s.armOf(i) == 1 {
						spin = 15 * time.Microsecond
					}
					serveOn(rec, l, 150, spin)
				}
				s.Collect()
				s.rotateIfDue()
				if arms != nil {
					// The loops are where the schedule says.
					for i, b := range g.Backends() {
						if b != pair[arms[i]] {
							t.Fatalf("after a rotation loop %d runs %s, want %s (position %d)", i, b, pair[arms[i]], arms[i])
						}
					}
				}
			}
			periods := s.Periods()
			if len(periods) != 4*3*slots {
				t.Fatalf("%d periods, want %d", len(periods), 4*3*slots)
			}
			for _, p := range periods {
				if p.Arm != (p.Loop+p.Period)%2 || p.Poller != pair[p.Arm] {
					t.Errorf("period %d of loop %d: position %d on %s, want position %d (%s)", p.Period, p.Loop, p.Arm, p.Poller, (p.Loop+p.Period)%2, pair[(p.Loop+p.Period)%2])
				}
				// The interval holding the switch is left out.
				want := DefaultRotateIntervals - 1
				if p.Period == 0 {
					want = DefaultRotateIntervals
				}
				if p.Kept != want || p.Requests != uint64(150*want) {
					t.Errorf("period %d of loop %d: %d kept intervals, %d requests; want %d and %d", p.Period, p.Loop, p.Kept, p.Requests, want, 150*want)
				}
			}
			if _, marks := s.History(); len(marks) != 0 {
				t.Errorf("scheduled rotations marked as events: %+v", marks)
			}
			r := s.Judge(0)
			if r.Design != DesignCrossover || len(r.Comparisons) != 1 {
				t.Fatalf("design %q, %d comparisons", r.Design, len(r.Comparisons))
			}
			c := r.Comparisons[0]
			t.Logf("%s against %s", c.Candidate, c.Baseline)
			for _, res := range c.Results {
				t.Logf("%s: %s (%d slots)", res.Metric, res.Text, res.Observations)
				if res.Metric == "events_per_request" {
					continue // the posted tasks are no readiness events
				}
				if res.Method != DesignCrossover || res.Observations != slots {
					t.Errorf("%s: method %q on %d slots, want the crossover's %d", res.Metric, res.Method, res.Observations, slots)
				}
			}
			checkCrossoverViews(t, s, r)
			if netpoll.ThreadCPUSupported {
				res := c.Results[0]
				// The second position costs 10 µs more per request; which
				// one is the baseline depends on the names' order.
				want := "higher"
				if c.Candidate == pair[0] || c.Candidate == pair[0]+"#1" {
					want = "lower"
				}
				if res.Metric != "cpu_per_request" || res.Status != want {
					t.Errorf("%s: %s, want %s", res.Metric, res.Text, want)
				}
			}
		})
	}
}

// TestSamplerCrossoverOff: ab_rotate off keeps the fixed split, and a
// line of three pollers has nothing to alternate.
func TestSamplerCrossoverOff(t *testing.T) {
	b := netpoll.Available()[0]
	g, err := netpoll.NewGroup(2, []string{b, b})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer func() { g.Stop(); g.Close() }()
	s := NewSampler(g, NewRecorders(), time.Hour, []string{b, b})
	s.SetRotate(-1)
	if s.Rotation() != 0 {
		t.Errorf("ab_rotate off: rotation %v", s.Rotation())
	}
	if r := s.Judge(0); r.Design != DesignFixed {
		t.Errorf("ab_rotate off: design %q", r.Design)
	}
	s.SetRotate(5 * time.Hour / 2)
	if s.Rotation() != 2*time.Hour && s.Rotation() != 3*time.Hour {
		t.Errorf("ab_rotate 2.5 intervals: rotation %v, want it rounded to whole intervals", s.Rotation())
	}
	s.SetRotate(time.Minute)
	if s.Rotation() != 2*time.Hour {
		t.Errorf("ab_rotate below two intervals: rotation %v, want two", s.Rotation())
	}
	s.SetPollers([]string{b, b, b})
	if s.Rotation() != 0 {
		t.Errorf("three pollers: rotation %v", s.Rotation())
	}
}

// TestSamplerCrossoverSetPollers: a live switch to another pair starts a
// new comparison, with the loops where the new line puts them.
func TestSamplerCrossoverSetPollers(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		g, err := netpoll.NewGroup(2, nil)
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		t.Cleanup(func() { g.Stop(); g.Close() })
		first := g.Backends()[0]
		s := NewSampler(g, NewRecorders(), time.Hour, []string{first, first})
		s.Collect()
		for i := 0; i < DefaultRotateIntervals*2; i++ {
			s.Collect()
			s.rotateIfDue()
		}
		if len(s.Periods()) == 0 {
			t.Fatal("no periods after two rotations")
		}
		s.SetPollers([]string{first, backend})
		if len(s.Periods()) != 0 || s.Rotation() == 0 {
			t.Errorf("after SetPollers: %d periods, rotation %v; want a new comparison", len(s.Periods()), s.Rotation())
		}
		if got := fmt.Sprint(g.Backends()); got != fmt.Sprint([]string{first, backend}) {
			t.Errorf("loops on %s after SetPollers(%s %s)", got, first, backend)
		}
	})
}

// checkCrossoverViews: the page, the text and the CSV export say which
// design produced the verdict and show the schedule.
func checkCrossoverViews(t *testing.T, s *Sampler, r *Report) {
	t.Helper()
	var html, text bytes.Buffer
	if err := renderPage(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Design: crossover", "confidence sequence", "switch schedule", "<rect", "periods (slots)"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("/ab lacks %q", want)
		}
	}
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crossover", "confidence sequences", "periods"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	srv := httptest.NewServer(s.CSVHandler())
	defer srv.Close()
	for path, want := range map[string]int{"/ab.csv": len(r.Samples), "/ab.csv?periods": len(s.Periods()), "/ab.csv?process": len(s.Process())} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(resp.Body).ReadAll()
		resp.Body.Close()
		if err != nil || len(rows) != want+1 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
			t.Errorf("%s: %d rows, %v (%s); want a header and %d", path, len(rows), err, resp.Header.Get("Content-Type"), want)
			continue
		}
		if first := rows[0][0]; (first == "period") != strings.HasSuffix(path, "periods") {
			t.Errorf("%s: header %v", path, rows[0])
		}
	}
}
