package ab

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestSamplerGroups runs two real loops on one backend (an A/A split),
// records requests on each loop's own histogram from the loop, burns CPU
// for loop 1's requests only, and checks the samples.
func TestSamplerGroups(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		g, err := netpoll.NewGroup(2, []string{backend, backend})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		t.Cleanup(func() { g.Stop(); g.Close() })
		rec := NewRecorders()
		s := NewSampler(g, rec, time.Hour, []string{backend, backend})
		s.Collect() // baseline
		serve := func(l *netpoll.Loop, n int, spin time.Duration) { serveOn(rec, l, n, spin) }
		loops := g.Loops()
		for round := 0; round < 3; round++ {
			serve(loops[0], 200, 0)
			serve(loops[1], 300, 50*time.Microsecond)
			s.Collect()
		}
		samples, _ := s.History()
		if len(samples) != 6 {
			t.Fatalf("%d samples, want 2 groups × 3 intervals: %+v", len(samples), samples)
		}
		for _, smp := range samples {
			want := map[string]uint64{backend + "#1": 200, backend + "#2": 300}[smp.Group]
			if smp.Requests != want || smp.Loops != 1 || smp.Poller != backend {
				t.Errorf("sample %+v: want group %s#1 (200 requests) or %s#2 (300), one loop", smp, backend, backend)
			}
			if smp.P50 < 90 || smp.P50 > 115 || smp.P99 < 100 || smp.P99 > 120 {
				t.Errorf("%s: p50 %v p99 %v, want about 105 and 110 µs", smp.Group, smp.P50, smp.P99)
			}
			if netpoll.ThreadCPUSupported && smp.Group == backend+"#2" && smp.CPUPerRequest < 10 {
				t.Errorf("loop 1 spins 50µs per request but its CPU per request is %vµs", smp.CPUPerRequest)
			}
			if smp.WaitsPerRequest <= 0 || smp.WaitsPerRequest > 1 {
				t.Errorf("%s: %v waits per request", smp.Group, smp.WaitsPerRequest)
			}
		}
		if netpoll.ThreadCPUSupported && !(samples[1].CPUPerRequest > samples[0].CPUPerRequest) {
			t.Errorf("spinning group's CPU per request %v not above the other's %v", samples[1].CPUPerRequest, samples[0].CPUPerRequest)
		}
		s.SetPollers([]string{backend})
		serve(loops[0], 150, 0)
		serve(loops[1], 150, 0)
		s.Collect()
		samples, marks := s.History()
		last := samples[len(samples)-1]
		if last.Group != backend || last.Loops != 2 || last.Requests != 300 {
			t.Errorf("after SetPollers(%s): last sample %+v, want one group of both loops", backend, last)
		}
		if len(marks) != 1 || marks[0].Interval != 3 || !strings.Contains(marks[0].Label, "poller "+backend) {
			t.Errorf("marks %+v, want the poller change at interval 3", marks)
		}
		// The whole process, interval by interval: every loop's requests,
		// the spin in the process's CPU, the resident set where the OS says.
		proc := s.Process()
		if len(proc) != 4 {
			t.Fatalf("%d process samples, want 4: %+v", len(proc), proc)
		}
		for i, p := range proc {
			want := map[bool]uint64{true: 500, false: 300}[i < 3]
			if p.Requests != want || p.Interval != i || p.P99 < 100 || p.P99 > 120 {
				t.Errorf("process sample %d: %+v, want %d requests at p99 about 110 µs", i, p, want)
			}
			if i < 3 && p.CPUPerRequest < 20 {
				t.Errorf("process sample %d: %v µs CPU per request, yet 300 of 500 requests spun 50 µs", i, p.CPUPerRequest)
			}
			if runtime.GOOS == "linux" && p.RSS < 1<<20 {
				t.Errorf("process sample %d: resident set %d bytes", i, p.RSS)
			}
		}
		if r := s.Judge(0); len(r.Process) != 4 || strings.Join(r.Backends, " ") != backend+" "+backend {
			t.Errorf("report: %d process samples, backends %v", len(r.Process), r.Backends)
		}
	})
}

// TestSamplerStartStop: the ticker takes samples on its own.
func TestSamplerStartStop(t *testing.T) {
	g, err := netpoll.NewGroup(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer func() { g.Stop(); g.Close() }()
	s := NewSampler(g, NewRecorders(), 20*time.Millisecond, nil)
	s.Start()
	servertest.Eventually(t, 5*time.Second, "two samples at a 20ms interval", func() bool {
		samples, _ := s.History()
		return len(samples) >= 2
	})
	s.Stop()
	s.Stop() // twice is harmless
}

// serveOn has loop l serve n requests as a task on the loop, each
// spinning for spin and recorded in the loop's histogram at 100 to 109 µs.
func serveOn(rec *Recorders, l *netpoll.Loop, n int, spin time.Duration) {
	h := rec.For(l.ID())
	done := make(chan struct{})
	l.Post(func() {
		for i := 0; i < n; i++ {
			for start := time.Now(); time.Since(start) < spin; {
			}
			h.Record(time.Duration(100+i%10) * time.Microsecond)
		}
		close(done)
	})
	<-done
}
