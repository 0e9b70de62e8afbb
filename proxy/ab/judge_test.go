package ab

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
)

// synthetic returns n intervals of two groups whose CPU per request is
// drawn around 40 µs, the candidate's shifted by cpuShift; requests per
// interval are reqA and reqB.
func synthetic(seed uint64, n int, a, b string, cpuShift float64, reqA, reqB uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []Sample
	for i := 0; i < n; i++ {
		for _, g := range []struct {
			name  string
			shift float64
			req   uint64
		}{{a, 0, reqA}, {b, cpuShift, reqB}} {
			cpu := 40 + g.shift + math.Exp(rng.NormFloat64()*0.4)
			out = append(out, Sample{Interval: i, End: time.Unix(int64(i*10), 0), Group: g.name, Poller: strings.TrimSuffix(strings.TrimSuffix(g.name, "#1"), "#2"),
				Loops: 1, Seconds: 10, Requests: g.req, CPUPerRequest: cpu, P50: 200 + rng.NormFloat64()*5, P99: 900 + rng.NormFloat64()*40,
				WaitsPerRequest: 0.5 + rng.NormFloat64()*0.01, EventsPerRequest: 2 + rng.NormFloat64()*0.02})
		}
	}
	return out
}

func result(t *testing.T, r *Report, metric string) Result {
	t.Helper()
	if len(r.Comparisons) != 1 {
		t.Fatalf("%d comparisons", len(r.Comparisons))
	}
	for _, res := range r.Comparisons[0].Results {
		if res.Metric == metric {
			return res
		}
	}
	t.Fatalf("no %s result", metric)
	return Result{}
}

func check(r *Report, name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: name, Detail: "missing"}
}

func TestJudgeDetectsShift(t *testing.T) {
	if !netpoll.ThreadCPUSupported {
		t.Skip("no CPU per request on this OS")
	}
	r := Judge(synthetic(1, 30, "epoll", "poll", 4, 5000, 5000), nil, 10*time.Second, 0)
	if c := r.Comparisons[0]; c.Baseline != "epoll" || c.Candidate != "poll" {
		t.Fatalf("compared %s against %s", c.Candidate, c.Baseline)
	}
	res := result(t, r, "cpu_per_request")
	if res.Status != "higher" || res.Lo > 4 || res.Hi < 4 || !strings.HasPrefix(res.Text, "poll higher: +") {
		t.Errorf("CPU shift of +4µs: %+v", res)
	}
	if math.Abs(res.Rel-0.1) > 0.03 {
		t.Errorf("relative shift %v, want about +10%%", res.Rel)
	}
	if p99 := result(t, r, "p99"); p99.Status != "no detectable difference" || !spansZeroText(p99) {
		t.Errorf("p99 has no shift: %+v", p99)
	}
	for _, name := range []string{"load balance", "enough intervals", "interval length"} {
		if c := check(r, name); !c.OK {
			t.Errorf("check %s failed: %s", name, c.Detail)
		}
	}
}

func TestJudgeAAAndChecks(t *testing.T) {
	// A/A with a 3:1 load imbalance and few intervals.
	r := Judge(synthetic(2, 5, "epoll#1", "epoll#2", 0, 3000, 1000), nil, 500*time.Millisecond, 0.01)
	for _, res := range r.Comparisons[0].Results {
		if res.Status != "no detectable difference" {
			t.Errorf("A/A %s: %s", res.Metric, res.Text)
		}
		if res.More <= 0 && res.Metric == "cpu_per_request" {
			t.Errorf("5 intervals should need more to resolve 1%%: %+v", res)
		}
	}
	if c := check(r, "load balance"); c.OK || !strings.Contains(c.Detail, "3.00×") {
		t.Errorf("3:1 imbalance not flagged: %+v", c)
	}
	if c := check(r, "enough intervals"); c.OK {
		t.Errorf("5 intervals accepted: %+v", c)
	}
	if c := check(r, "interval length"); c.OK {
		t.Errorf("500ms intervals accepted: %+v", c)
	}
	// Idle intervals are left out.
	idle := synthetic(3, 10, "epoll", "poll", 0, 10, 10)
	r = Judge(idle, nil, 10*time.Second, 0)
	if res := r.Comparisons[0].Results[0]; res.Status != "too few intervals" {
		t.Errorf("idle intervals judged: %+v", res)
	}
	if r.Groups[0].Idle != 10 {
		t.Errorf("groups %+v: want 10 idle intervals", r.Groups)
	}
	// One group: no comparison, and the check says how to split.
	r = Judge(synthetic(4, 10, "epoll", "epoll", 0, 1000, 1000), nil, 10*time.Second, 0)
	if len(r.Comparisons) != 0 || check(r, "groups").OK {
		t.Errorf("one group: %+v", r.Checks)
	}
}

// spansZeroText: the result's words agree with its bounds.
func spansZeroText(r Result) bool {
	return r.Lo <= 0 && r.Hi >= 0 && strings.HasPrefix(r.Text, "no detectable")
}

func TestHandlersAndText(t *testing.T) {
	s := NewSampler(nil, NewRecorders(), 10*time.Second, []string{"epoll", "poll"})
	s.SetRotate(-1) // the fixed split's verdict
	s.samples = synthetic(5, 20, "epoll", "poll", 4, 5000, 4000)
	s.seq = 20
	s.Mark("poller epoll poll")
	s.marks[0].Interval = 10
	page, js := s.Handlers()
	srv := httptest.NewServer(http.NewServeMux())
	defer srv.Close()
	mux := srv.Config.Handler.(*http.ServeMux)
	mux.Handle("/ab", page)
	mux.Handle("/ab.json", js)

	resp, err := http.Get(srv.URL + "/ab.json?effect=5")
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	err = json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if err != nil || rep.Effect != 0.05 || len(rep.Samples) != 40 || len(rep.Comparisons) != 1 || len(rep.Marks) != 1 {
		t.Fatalf("ab.json: %v; effect %v, %d samples, %d comparisons", err, rep.Effect, len(rep.Samples), len(rep.Comparisons))
	}

	resp, err = http.Get(srv.URL + "/ab")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	html := string(body)
	for _, want := range []string{"<svg", "<polyline", "p99 latency", "poll against epoll", "load balance", "stroke-dasharray", "poller epoll poll", "Design: fixed split"} {
		if !strings.Contains(html, want) {
			t.Errorf("/ab lacks %q", want)
		}
	}
	if netpoll.ThreadCPUSupported && !strings.Contains(html, "poll higher:") {
		t.Error("/ab lacks the CPU verdict")
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("content type %q", ct)
	}

	var buf bytes.Buffer
	if err := WriteText(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"poll against epoll", "p99 (µs)", "checks", "load balance", "event at interval 10"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}
