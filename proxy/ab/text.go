package ab

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the verdict for a terminal: each comparison's metrics
// with their difference and interval, then the checks.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Rotation > 0 {
		fmt.Fprintf(tw, "pollproxy A/B, crossover: every loop alternates between the pollers every %gs; %d intervals of %gs;\n"+
			"95%% confidence sequences (valid whenever read); \"more\" is intervals until the half-width is below %.0f%%\n\n",
			r.Rotation, r.Intervals, r.Interval, 100*r.Effect)
	} else {
		fmt.Fprintf(tw, "pollproxy A/B, fixed split: %d intervals of %gs; 95%% intervals; \"more\" resolves a %.0f%% difference at 80%% power\n\n",
			r.Intervals, r.Interval, 100*r.Effect)
	}
	fmt.Fprintln(tw, "group\tpoller\tloops\trequests\tshare\tintervals\t")
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f%%\t%d (+%d idle)\t\n", g.Name, g.Poller, g.Loops, g.Requests, 100*g.Share, g.Intervals, g.Idle)
	}
	if len(r.Comparisons) == 0 {
		fmt.Fprintln(tw, "\nno comparison yet: at least two poller groups with samples are needed")
	}
	for _, c := range r.Comparisons {
		fmt.Fprintf(tw, "\n%s against %s\n", c.Candidate, c.Baseline)
		counted := "intervals"
		if r.Rotation > 0 {
			counted = "periods"
		}
		fmt.Fprintf(tw, "metric\t%s\t%s\tverdict\t%s\tmore for %.0f%%\t\n", c.Baseline, c.Candidate, counted, 100*r.Effect)
		for _, res := range c.Results {
			name := res.Metric
			if res.Unit != "" {
				name += " (" + res.Unit + ")"
			}
			more := "-"
			if res.More > 0 {
				more = fmt.Sprintf("%d (%s)", res.More, waitFor(res.More, r.Interval))
			}
			fmt.Fprintf(tw, "%s\t%.3g\t%.3g\t%s\t%d/%d\t%s\t\n", name, res.Base, res.Cand, res.Text, res.N, res.M, more)
		}
	}
	fmt.Fprintln(tw, "\nchecks")
	for _, ch := range r.Checks {
		mark := "ok"
		if !ch.OK {
			mark = "!!"
		}
		fmt.Fprintf(tw, "  %s %s: %s\n", mark, ch.Name, ch.Detail)
	}
	for _, m := range r.Marks {
		fmt.Fprintf(tw, "  event at interval %d (%s): %s\n", m.Interval, m.Time.Format("15:04:05"), m.Label)
	}
	return tw.Flush()
}
