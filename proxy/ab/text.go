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
	writeChecks(tw, r.Checks)
	for _, m := range r.Marks {
		fmt.Fprintf(tw, "  event at interval %d (%s): %s\n", m.Interval, m.Time.Format("15:04:05"), m.Label)
	}
	return tw.Flush()
}

// WriteCanaryText prints a comparison of two instances for a terminal.
func WriteCanaryText(w io.Writer, c *Canary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pollproxy A/B of two instances: %d paired intervals; 95%% confidence sequences of B/A (valid whenever read);\n"+
		"\"more\" is intervals until the half-width is below %.0f%%\n\n", c.Pairs, 100*c.Effect)
	fmt.Fprintln(tw, "instance\tadmin\tpollers\tintervals\trequests\t")
	for _, in := range []struct {
		name string
		i    *Instance
	}{{"A", &c.A}, {"B", &c.B}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t\n", in.name, in.i.Admin, backendLine(in.i.Backends), in.i.Intervals, in.i.Requests)
	}
	fmt.Fprintf(tw, "\nmetric\tA\tB\tverdict\tintervals\tmore for %.0f%%\t\n", 100*c.Effect)
	for _, res := range c.Results {
		more := "-"
		if res.More > 0 {
			more = fmt.Sprintf("%d (%s)", res.More, waitFor(res.More, c.A.Interval))
		}
		fmt.Fprintf(tw, "%s (%s)\t%.3g\t%.3g\t%s\t%d\t%s\t\n", res.Metric, res.Unit, res.Base, res.Cand, res.Text, res.N, more)
	}
	writeChecks(tw, c.Checks)
	return tw.Flush()
}

// writeChecks lists checks, "ok" or "!!" first.
func writeChecks(w io.Writer, checks []Check) {
	fmt.Fprintln(w, "\nchecks")
	for _, ch := range checks {
		mark := "ok"
		if !ch.OK {
			mark = "!!"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, ch.Name, ch.Detail)
	}
}
