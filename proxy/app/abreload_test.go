package app

import (
	"os"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestABHistorySurvivesReload: a reload keeps the A/B history (samples,
// whole-process intervals and marks) and marks itself on it; one that
// changes the poller line starts a new comparison on the same history.
func TestABHistorySurvivesReload(t *testing.T) {
	o := startOrigin(t, "A")
	s := startSwitchable(t, o.addr, 2)
	c := servertest.H2Client(s.addr, s.roots)
	sample := func() {
		for range 20 {
			if code, body, _ := servertest.Get(t, c, s.base+"/"); code != 200 {
				t.Fatalf("GET: %d %q", code, body)
			}
		}
		s.in.ab.Collect()
	}
	sample() // the baseline and a first interval
	sample()
	before, _ := s.in.ab.History()
	if len(before) == 0 || len(s.in.ab.Process()) != 2 {
		t.Fatalf("before the reload: %d samples, %d process intervals", len(before), len(s.in.ab.Process()))
	}

	if err := s.in.Reload(); err != nil { // the same file
		t.Fatal(err)
	}
	sample()
	os.WriteFile(s.file, s.conf(s.from+" "+s.to), 0o644)
	if err := s.in.Reload(); err != nil {
		t.Fatal(err)
	}
	sample()
	after, marks := s.in.ab.History()
	if len(after) <= len(before) || after[0] != before[0] {
		t.Errorf("after two reloads: %d samples starting %+v, want the %d from before and more", len(after), after[0], len(before))
	}
	if n := len(s.in.ab.Process()); n != 4 {
		t.Errorf("%d process intervals after two reloads, want 4", n)
	}
	var labels []string
	for _, m := range marks {
		labels = append(labels, m.Label)
	}
	got := strings.Join(labels, "; ")
	if strings.Count(got, "reload") != 2 || !strings.Contains(got, "poller "+s.from+" "+s.to) {
		t.Errorf("marks %q, want both reloads and the new poller line", got)
	}
}
