package ab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
)

// DefaultInterval is the sampling interval when ab_interval is not set.
const DefaultInterval = 10 * time.Second

// MaxIntervals bounds the history: 720 intervals are two hours at 10 s.
const MaxIntervals = 720

// MinRequests is the fewest requests a group must serve in an interval
// for the interval to count: per-request figures and p99 of a handful of
// requests measure the idle loop, not the poller.
const MinRequests = 100

// Sample is one poller group's figures over one interval.
type Sample struct {
	Interval int       `json:"interval"` // sequence number, from 0
	End      time.Time `json:"end"`
	Group    string    `json:"group"`  // "epoll", or "epoll#2" when two groups run the same backend
	Poller   string    `json:"poller"` // the group's backend
	Loops    int       `json:"loops"`
	Seconds  float64   `json:"seconds"` // the interval's real length
	Requests uint64    `json:"requests"`
	// CPUPerRequest is loop thread CPU µs per request (0 where the OS
	// has no thread CPU clock).
	CPUPerRequest    float64 `json:"cpu_us_per_request"`
	P50              float64 `json:"p50_us"`
	P99              float64 `json:"p99_us"`
	WaitsPerRequest  float64 `json:"waits_per_request"`
	EventsPerRequest float64 `json:"events_per_request"`
	Descriptors      int64   `json:"descriptors"` // registered at the interval's end: connections, both sides, plus listeners
}

// Mark is an event in the history, such as a poller switch.
type Mark struct {
	Time     time.Time `json:"time"`
	Interval int       `json:"interval"` // the interval it happened in
	Label    string    `json:"label"`
}

// Sampler collects the interval samples of one group of loops and, in
// the crossover design, moves the loops between the two pollers on their
// schedule (rotate.go).
type Sampler struct {
	group    *netpoll.Group
	rec      *Recorders
	interval time.Duration

	rotMu sync.Mutex // one rotation or poller change at a time; taken before mu

	mu      sync.Mutex
	pollers []string // the configured poller line
	seq     int
	samples []Sample  // oldest first, at most MaxIntervals intervals
	process []Process // the whole process per interval, oldest first, as many
	procCPU time.Duration
	marks   []Mark
	prev    []loopState
	lastEnd time.Time
	stop    chan struct{}
	done    chan struct{}

	cross crossover // the rotation's schedule and the loops' periods
}

type loopState struct {
	ok       bool
	backend  string
	arm      int    // the position in the poller line the loop serves
	switches uint64 // netpoll.Loop.SwitchCount
	cpu      time.Duration
	waits    uint64
	events   uint64
	descs    int64
	hist     Counts
}

// NewSampler returns a sampler of g's loops every interval (<= 0: the
// default) whose histograms are in rec. pollers is the configured poller
// line (["epoll", "poll"]); its length says how loops form groups, and
// with two pollers the sampler runs the crossover (rotate.go) unless
// SetRotate turns it off.
func NewSampler(g *netpoll.Group, rec *Recorders, interval time.Duration, pollers []string) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	s := &Sampler{group: g, rec: rec, interval: interval, pollers: append([]string(nil), pollers...)}
	s.cross.restart(s.pollers, interval, s.loopCount()) // the crossover by default for two pollers
	return s
}

// Interval is the sampling interval.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Start begins sampling on a goroutine of its own; Stop ends it.
func (s *Sampler) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.Collect() // the baseline the first interval is measured from
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.Collect()
				s.rotateIfDue()
			}
		}
	}()
}

// Stop ends sampling and waits for the sampler's goroutine.
func (s *Sampler) Stop() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}

// Mark records an event (a poller switch, a deploy) at the current
// interval, so the history shows when it happened. A loop whose backend
// changed is marked automatically at the next sample; a caller that
// switches pollers calls Mark for the reason ("POST /poller: epoll poll").
// Safe from any goroutine.
func (s *Sampler) Mark(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, Mark{Time: time.Now(), Interval: s.seq, Label: label})
	if len(s.marks) > MaxIntervals {
		s.marks = s.marks[len(s.marks)-MaxIntervals:]
	}
}

// SetPollers tells the sampler the poller line changed (a live switch to
// "epoll poll"), so groups follow the new split from the next interval.
// It records a Mark with the new line. In the crossover design it starts
// a new comparison of the new pair (or stops rotating when the line no
// longer names two pollers) and puts every loop where the new line says,
// in case a rotation moved one after the switch that called it.
func (s *Sampler) SetPollers(pollers []string) {
	s.rotMu.Lock()
	defer s.rotMu.Unlock()
	s.mu.Lock()
	s.pollers = append([]string(nil), pollers...)
	s.cross.restart(s.pollers, s.interval, s.loopCount())
	rotating := s.cross.every > 0
	s.mu.Unlock()
	s.Mark("poller " + strings.Join(pollers, " "))
	if rotating && s.group != nil {
		s.group.Switch(pollers)
	}
}

// refreshTimeout bounds the wait for the loops to read their CPU clocks;
// a loop stuck longer than this is sampled with what it last read.
const refreshTimeout = 200 * time.Millisecond

// Collect takes one sample now: the loops' counters since the previous
// call, one Sample per group. The ticker calls it; tests call it directly.
func (s *Sampler) Collect() {
	loops := s.group.Loops()
	if netpoll.ThreadCPUSupported {
		var wg sync.WaitGroup
		wg.Add(len(loops))
		for _, l := range loops {
			l.RefreshCPU(wg.Done)
		}
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
		case <-time.After(refreshTimeout):
		}
	}
	now, pcpu := time.Now(), processCPU()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := make([]loopState, len(loops))
	for i, l := range loops {
		st := l.Stats()
		cur[i] = loopState{ok: true, backend: st.Backend, arm: s.armOf(i), switches: l.SwitchCount(),
			cpu: st.CPU, waits: st.Waits, events: st.Events, descs: st.Descriptors, hist: s.rec.snapshot(l.ID())}
	}
	if s.prev == nil {
		s.prev = cur
		s.samples = nil
		s.lastEnd, s.procCPU = now, pcpu
		return
	}
	hists := make([]Counts, len(loops)) // each loop's requests this interval
	var all Counts                      // every loop's, switched or not: the process served them
	for i := range loops {
		hists[i] = cur[i].hist.Sub(&s.prev[i].hist)
		all.Add(&hists[i])
	}
	proc := processSample(pcpu-s.procCPU, &all)
	proc.Interval, proc.End, proc.Seconds = s.seq, now, now.Sub(s.lastEnd).Seconds()
	s.process = append(s.process, proc)
	if len(s.process) > MaxIntervals {
		s.process = s.process[len(s.process)-MaxIntervals:]
	}
	s.procCPU = pcpu
	// Group label per position: the backend, with the position when two
	// positions run the same backend (an A/A run: epoll#1, epoll#2).
	count := map[string]map[int]bool{}
	for i := range loops {
		p, b := cur[i].arm, cur[i].backend
		if count[b] == nil {
			count[b] = map[int]bool{}
		}
		count[b][p] = true
	}
	label := func(i int) string {
		p, b := cur[i].arm, cur[i].backend
		if len(count[b]) > 1 || (s.cross.every > 0 && s.pollers[0] == s.pollers[1]) {
			return b + "#" + strconv.Itoa(p+1)
		}
		return b
	}
	type acc struct {
		loops   int
		delta   loopDelta
		descs   int64
		backend string
	}
	groups := map[string]*acc{}
	var switched []string
	for i, l := range loops {
		old := s.prev[i]
		rotated := s.cross.every > 0 && old.arm != cur[i].arm
		if old.ok && (rotated || old.switches != cur[i].switches) {
			// Counters that straddle a switch belong to neither poller:
			// in the crossover this interval is the washout after a
			// rotation, which the schedule explains without a mark.
			if !rotated {
				switched = append(switched, fmt.Sprintf("loop %d: %s → %s", l.ID(), old.backend, cur[i].backend))
			}
			continue
		}
		d := loopDelta{cpu: cur[i].cpu - old.cpu, waits: cur[i].waits - old.waits, events: cur[i].events - old.events,
			hist: hists[i]}
		s.cross.add(i, label(i), cur[i], d, s.seq, now.Sub(s.lastEnd), now)
		g := groups[label(i)]
		if g == nil {
			g = &acc{backend: cur[i].backend}
			groups[label(i)] = g
		}
		g.loops++
		g.delta.add(&d)
		g.descs += cur[i].descs
	}
	if len(switched) > 0 {
		s.marks = append(s.marks, Mark{Time: now, Interval: s.seq, Label: "switch: " + strings.Join(switched, ", ")})
	}
	secs := now.Sub(s.lastEnd).Seconds()
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := groups[n]
		smp := g.delta.sample()
		smp.Interval, smp.End, smp.Group, smp.Poller, smp.Loops, smp.Seconds, smp.Descriptors = s.seq, now, n, g.backend, g.loops, secs, g.descs
		s.samples = append(s.samples, smp)
	}
	s.seq++
	s.lastEnd = now
	s.prev = cur
	// Keep the last MaxIntervals intervals.
	if first := s.seq - MaxIntervals; first > 0 {
		i := 0
		for i < len(s.samples) && s.samples[i].Interval < first {
			i++
		}
		s.samples = append(s.samples[:0:0], s.samples[i:]...)
	}
}

// armOf is loop i's position in the poller line now: the fixed split
// cycles the line across the loops, the crossover alternates each loop
// between the two positions.
func (s *Sampler) armOf(i int) int {
	if s.cross.every > 0 {
		return (i + s.cross.phase) % 2
	}
	return i % max(len(s.pollers), 1)
}

// loopDelta is what a loop (or a group of loops) did over some intervals.
type loopDelta struct {
	cpu           time.Duration
	waits, events uint64
	hist          Counts
}

func (d *loopDelta) add(o *loopDelta) {
	d.cpu += o.cpu
	d.waits += o.waits
	d.events += o.events
	d.hist.Add(&o.hist)
}

// sample turns the counts into the per-request figures of a Sample.
func (d *loopDelta) sample() Sample {
	smp := Sample{Requests: d.hist.Total()}
	if r := float64(smp.Requests); r > 0 {
		smp.CPUPerRequest = float64(d.cpu.Microseconds()) / r
		smp.WaitsPerRequest = float64(d.waits) / r
		smp.EventsPerRequest = float64(d.events) / r
		smp.P50 = d.hist.Quantile(0.5)
		smp.P99 = d.hist.Quantile(0.99)
	}
	return smp
}

// Process returns a copy of the whole-process samples, oldest first.
func (s *Sampler) Process() []Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Process(nil), s.process...)
}

// History returns a copy of the samples (oldest first) and marks.
func (s *Sampler) History() ([]Sample, []Mark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...), append([]Mark(nil), s.marks...)
}
