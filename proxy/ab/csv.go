package ab

import (
	"encoding/csv"
	"io"
	"net/http"
	"strconv"
	"time"
)

// CSVHandler serves the history as CSV (the admin listener's /ab.csv):
// one row per group and interval, the fields of Sample; with ?periods the
// crossover's loop periods instead, one row per loop and period; with
// ?process the whole process's intervals (Process). A
// spreadsheet or R reads it without a JSON step.
func (s *Sampler) CSVHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		if r.URL.Query().Has("periods") {
			w.Header().Set("Content-Disposition", `attachment; filename="ab-periods.csv"`)
			WritePeriodsCSV(w, s.Periods())
			return
		}
		if r.URL.Query().Has("process") {
			w.Header().Set("Content-Disposition", `attachment; filename="ab-process.csv"`)
			WriteProcessCSV(w, s.Process())
			return
		}
		samples, _ := s.History()
		w.Header().Set("Content-Disposition", `attachment; filename="ab.csv"`)
		WriteCSV(w, samples)
	})
}

var sampleHeader = []string{"interval", "end", "group", "poller", "loops", "seconds", "requests",
	"cpu_us_per_request", "p50_us", "p99_us", "waits_per_request", "events_per_request", "descriptors"}

func sampleRow(s *Sample) []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	return []string{strconv.Itoa(s.Interval), s.End.UTC().Format(time.RFC3339Nano), s.Group, s.Poller,
		strconv.Itoa(s.Loops), f(s.Seconds), strconv.FormatUint(s.Requests, 10),
		f(s.CPUPerRequest), f(s.P50), f(s.P99), f(s.WaitsPerRequest), f(s.EventsPerRequest),
		strconv.FormatInt(s.Descriptors, 10)}
}

// WriteCSV writes samples as CSV with a header row, in the units and
// names of /ab.json.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	cw.Write(sampleHeader)
	for i := range samples {
		cw.Write(sampleRow(&samples[i]))
	}
	cw.Flush()
	return cw.Error()
}

// WritePeriodsCSV writes the crossover's periods as CSV: a period's
// number, loop, position and kept intervals, then its figures as
// WriteCSV gives a sample's (interval is the period's last).
func WritePeriodsCSV(w io.Writer, periods []Period) error {
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"period", "loop", "arm", "first_interval", "kept_intervals"}, sampleHeader...))
	for i := range periods {
		p := &periods[i]
		cw.Write(append([]string{strconv.Itoa(p.Period), strconv.Itoa(p.Loop), strconv.Itoa(p.Arm),
			strconv.Itoa(p.First), strconv.Itoa(p.Kept)}, sampleRow(&p.Sample)...))
	}
	cw.Flush()
	return cw.Error()
}

// WriteProcessCSV writes the whole process's intervals as CSV, in the
// units and names of /ab.json's process field.
func WriteProcessCSV(w io.Writer, ps []Process) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"interval", "end", "seconds", "requests", "process_cpu_us_per_request", "p99_us", "rss_bytes"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, p := range ps {
		cw.Write([]string{strconv.Itoa(p.Interval), p.End.UTC().Format(time.RFC3339Nano), f(p.Seconds),
			strconv.FormatUint(p.Requests, 10), f(p.CPUPerRequest), f(p.P99), strconv.FormatInt(p.RSS, 10)})
	}
	cw.Flush()
	return cw.Error()
}
