package ab

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/ab/stats"
)

// palette colours the groups in the charts, in name order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// chart is one server-side rendered SVG line chart: one series per group
// over the interval numbers, with the marks as vertical lines.
type chart struct {
	Title  string
	Unit   string
	W, H   int
	Series []series
	Marks  []markLine
	YTicks []tick
	XTicks []tick
	Empty  bool
	// Schedule is the crossover's switch schedule on the chart's
	// interval axis: one row per loop, coloured by the poller of each
	// period (grey gaps: the washout interval after each switch).
	Schedule []bar
	SchedH   int
}

type bar struct {
	X, Y, W float64
	Color   string
	Title   string
}

// schedRow is the height of one loop's row in the schedule strip.
const schedRow = 7

type series struct {
	Name, Color string
	Points      string // SVG polyline points
	Last        string // last value, for the legend
}

type markLine struct {
	X     float64
	Label string
}

type tick struct {
	Pos   float64
	Label string
}

const (
	chartW, chartH = 540, 220
	padL, padR     = 56, 12
	padT, padB     = 12, 28
)

func buildChart(title, unit string, rep *Report, get func(*Sample) float64) chart {
	c := chart{Title: title, Unit: unit, W: chartW, H: chartH}
	first, last := math.MaxInt, -1
	var all []float64
	for i := range rep.Samples {
		s := &rep.Samples[i]
		if s.Requests < MinRequests {
			continue
		}
		first, last = min(first, s.Interval), max(last, s.Interval)
		all = append(all, get(s))
	}
	// Scale to the values the verdict keeps: one stalled interval would
	// flatten every other; outliers are drawn at the top edge.
	kept, _ := stats.RemoveOutliers(all, stats.DefaultIQRFactor)
	ymax := 0.0
	for _, v := range kept {
		ymax = math.Max(ymax, v)
	}
	if last < 0 || ymax <= 0 {
		c.Empty = true
		return c
	}
	if last == first {
		last = first + 1
	}
	ymax *= 1.1
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(iv int) float64 { return padL + pw*float64(iv-first)/float64(last-first) }
	y := func(v float64) float64 { return padT + ph*(1-math.Min(v, ymax)/ymax) }
	for i, g := range rep.Groups {
		var pts []string
		lastV := ""
		for j := range rep.Samples {
			s := &rep.Samples[j]
			if s.Group != g.Name || s.Requests < MinRequests {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.Interval), y(get(s))))
			lastV = short(get(s))
		}
		c.Series = append(c.Series, series{Name: g.Name, Color: palette[i%len(palette)], Points: strings.Join(pts, " "), Last: lastV})
	}
	for _, m := range rep.Marks {
		if m.Interval >= first && m.Interval <= last {
			c.Marks = append(c.Marks, markLine{X: x(m.Interval), Label: m.Label})
		}
	}
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: short(v)})
	}
	colour := map[string]string{}
	for i, g := range rep.Groups {
		colour[g.Name] = palette[i%len(palette)]
	}
	xf := func(iv float64) float64 {
		return math.Max(padL, math.Min(padL+pw, padL+pw*(iv-float64(first))/float64(last-first)))
	}
	nloops := 0
	for _, p := range rep.Periods {
		if p.Interval < first || p.First > last {
			continue
		}
		nloops = max(nloops, p.Loop+1)
		x0, x1 := xf(float64(p.First)-0.5), xf(float64(p.Interval)+0.5)
		c.Schedule = append(c.Schedule, bar{X: x0, W: math.Max(x1-x0, 0.5), Y: float64(p.Loop * schedRow), Color: colour[p.Group],
			Title: fmt.Sprintf("loop %d, period %d: %s (intervals %d–%d)", p.Loop, p.Period, p.Group, p.First, p.Interval)})
	}
	c.SchedH = nloops * schedRow
	step := max(1, (last-first)/6)
	for iv := first; iv <= last; iv += step {
		c.XTicks = append(c.XTicks, tick{Pos: x(iv), Label: fmt.Sprint(iv)})
	}
	return c
}

// short formats a figure in three digits with k or M rather than an
// exponent: 3.07k, 1.2M.
func short(f float64) string {
	switch a := math.Abs(f); {
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", f/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", f/1e3)
	}
	return fmt.Sprintf("%.3g", f)
}

// waitFor says how long n intervals of secs seconds take, rounded to
// what a reader plans by: "40s", "12m", "3h".
func waitFor(n int, secs float64) string {
	d := time.Duration(float64(n) * secs * float64(time.Second))
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%.0fm", d.Minutes())
	}
	return fmt.Sprintf("%.1fh", d.Hours())
}

type pageData struct {
	*Report
	Charts []chart
}

func renderPage(w io.Writer, rep *Report) error {
	d := pageData{Report: rep}
	if rep.ThreadCPU {
		d.Charts = append(d.Charts, buildChart("Loop CPU per request", "µs", rep, func(s *Sample) float64 { return s.CPUPerRequest }))
	}
	d.Charts = append(d.Charts, buildChart("p99 latency", "µs", rep, func(s *Sample) float64 { return s.P99 }))
	return pageTmpl.Execute(w, d)
}

var pageTmpl = template.Must(template.New("ab").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"num": short,
	"statusClass": func(s string) string {
		switch s {
		case "higher":
			return "worse"
		case "lower":
			return "better"
		case "no detectable difference":
			return "same"
		}
		return "unknown"
	},
	"plusOne": func(f float64) float64 { return f + 1 },
	"wait":    waitFor,
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>pollproxy A/B</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1150px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;margin:4px 0} td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f4f4f4} .num{text-align:right;font-variant-numeric:tabular-nums}
.worse{color:#b00020;font-weight:600} .better{color:#08752b;font-weight:600} .same{color:#555} .unknown{color:#999}
.ok::before{content:"✓ ";color:#08752b} .bad::before{content:"! ";color:#b00020;font-weight:700}
.charts{display:flex;flex-wrap:wrap;gap:16px} .chart{border:1px solid #ddd;padding:8px}
.muted{color:#666}
</style></head><body>
<h1>pollproxy A/B: pollers compared</h1>
{{if .Rotation}}<div><b>Design: crossover.</b> Every loop alternates between the pollers every {{num .Rotation}} s, half the loops starting on each; the interval after each switch is left out. Each loop is compared with itself: the middle of every three periods against its two neighbours, so a steady drift in load cancels. The intervals are 95% confidence sequences: valid however often this page is read.</div>
<div class="muted">{{.Intervals}} intervals of {{num .Interval}} s; "more for {{pct .Effect}}" is how many more intervals (and how long) until the sequence's half-width falls below a {{pct .Effect}} difference at the current noise. Generated {{.Generated.Format "2006-01-02 15:04:05"}}.</div>
{{else}}<div><b>Design: fixed split</b> (ab_rotate off, or not two pollers): each group of loops keeps its poller, and the kernel decides which connections each holds.</div>
<div class="muted">{{.Intervals}} intervals of {{num .Interval}} s, 95% intervals (Hodges–Lehmann / Mann–Whitney after IQR outlier removal), valid for one look at a sample size fixed in advance, not for watching; "more intervals" resolve a {{pct .Effect}} difference at 80% power. Generated {{.Generated.Format "2006-01-02 15:04:05"}}.</div>{{end}}
{{range .Comparisons}}
<h2>Verdict: {{.Candidate}} against {{.Baseline}}</h2>
<table><tr><th>metric</th><th class="num">{{.Baseline}}</th><th class="num">{{.Candidate}}</th><th>difference</th><th class="num">{{if $.Rotation}}periods (slots){{else}}intervals{{end}}</th><th class="num">more for {{pct $.Effect}}</th></tr>
{{range .Results}}<tr><td>{{.Metric}}{{if .Unit}} ({{.Unit}}){{end}}</td><td class="num">{{num .Base}}</td><td class="num">{{num .Cand}}</td>
<td class="{{statusClass .Status}}">{{.Text}}</td><td class="num">{{.N}} / {{.M}}{{if .Observations}} ({{.Observations}}){{end}}{{if .Outl}} ({{.Outl}} outliers){{end}}</td><td class="num">{{if .More}}{{.More}} ({{wait .More $.Interval}}){{else}}—{{end}}</td></tr>
{{end}}</table>
{{else}}<h2>Verdict</h2><p>No comparison yet: at least two poller groups with samples are needed.</p>
{{end}}
<h2>Checks</h2>
<ul>{{range .Checks}}<li class="{{if .OK}}ok{{else}}bad{{end}}"><b>{{.Name}}</b>: {{.Detail}}</li>{{end}}</ul>
<h2>Per interval</h2>
<div class="charts">
{{range .Charts}}<div class="chart"><b>{{.Title}}</b> <span class="muted">({{.Unit}}, by interval)</span><br>
{{if .Empty}}<p class="muted">no interval with enough requests yet</p>{{else}}
<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-size="11">
{{range .YTicks}}<line x1="56" x2="528" y1="{{.Pos}}" y2="{{.Pos}}" stroke="#eee"/><text x="50" y="{{plusOne .Pos}}" text-anchor="end" dominant-baseline="middle" fill="#666">{{.Label}}</text>{{end}}
{{range .XTicks}}<text x="{{.Pos}}" y="208" text-anchor="middle" fill="#666">{{.Label}}</text>{{end}}
{{range .Marks}}<line x1="{{.X}}" x2="{{.X}}" y1="12" y2="192" stroke="#999" stroke-dasharray="4 3"><title>{{.Label}}</title></line>{{end}}
{{range .Series}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.8" points="{{.Points}}"/>{{end}}
</svg>
{{if .Schedule}}<br><svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.SchedH}}" viewBox="0 0 {{.W}} {{.SchedH}}"><title>switch schedule: one row per loop</title>
{{range .Schedule}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="5" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}
</svg><div class="muted">switch schedule: one row per loop, coloured by poller; gaps are the intervals after a switch, left out</div>{{end}}
<div>{{range .Series}}<span style="color:{{.Color}}">■</span> {{.Name}} (last {{.Last}}) &nbsp; {{end}}</div>{{end}}
</div>{{end}}
</div>
<h2>Groups</h2>
<table><tr><th>group</th><th>poller</th><th class="num">loops</th><th class="num">requests</th><th class="num">share</th><th class="num">req/s per loop</th><th class="num">intervals</th><th class="num">idle intervals</th></tr>
{{range .Groups}}<tr><td>{{.Name}}</td><td>{{.Poller}}</td><td class="num">{{.Loops}}</td><td class="num">{{.Requests}}</td><td class="num">{{pct .Share}}</td><td class="num">{{num .PerLoop}}</td><td class="num">{{.Intervals}}</td><td class="num">{{.Idle}}</td></tr>{{end}}
</table>
{{if .Marks}}<h2>Events</h2><ul>{{range .Marks}}<li>interval {{.Interval}}, {{.Time.Format "15:04:05"}}: {{.Label}}</li>{{end}}</ul>{{end}}
<p class="muted">Raw data: <a href="ab.json">ab.json</a>. What the statistics mean and where they stop: docs/ab.md.</p>
</body></html>
`))
