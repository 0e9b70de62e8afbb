package fileserver

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestParseRanges: Range values read as Go's net/http reads them.
func TestParseRanges(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // spans as start+n, "416", or "all"
	}{
		{"bytes=0-9", "0+10"},
		{"bytes=5-", "5+95"},
		{"bytes=-10", "90+10"},
		{"bytes=-1000", "0+100"},
		{"bytes=90-200", "90+10"},
		{"bytes=0-1, 5-6", "0+2 5+2"},
		{"bytes= 0-1 ,, 5-6 ", "0+2 5+2"},
		{"bytes=100-", "416 none"},
		{"bytes=100-, 0-0", "0+1"},
		{"bytes=-0", "416 none"},
		{"bytes=5-4", "416"},
		{"bytes=x-1", "416"},
		{"bytes=1", "416"},
		{"lines=0-1", "416"},
		{"bytes=0-99, 0-99", "all"},                    // more than the file: all of it
		{"bytes=" + strings.Repeat("1-1,", 65), "all"}, // more ranges than any client needs
	} {
		spans, err := parseRanges(c.in, 100)
		var got string
		switch {
		case err == errNoOverlap:
			got = "416 none"
		case err != nil:
			got = "416"
		case len(spans) == 0:
			got = "all"
		default:
			var parts []string
			for _, s := range spans {
				parts = append(parts, fmt.Sprintf("%d+%d", s.start, s.n))
			}
			got = strings.Join(parts, " ")
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
}

// TestConditions: RFC 9110's order of the conditional fields.
func TestConditions(t *testing.T) {
	mod := time.Date(2024, 5, 1, 12, 0, 0, 500, time.UTC)
	etag := etagOf(mod, 42)
	at := func(d time.Duration) string { return mod.Add(d).Format(http.TimeFormat) }
	for _, c := range []struct {
		name string
		c    conditions
		want verdict
		rng  string // the range left after If-Range
	}{
		{"none", conditions{method: "GET"}, serve, ""},
		{"inm match", conditions{method: "GET", ifNoneMatch: etag, haveIfNoneMatch: true}, notModified, ""},
		{"inm weak", conditions{method: "GET", ifNoneMatch: "W/" + etag, haveIfNoneMatch: true}, notModified, ""},
		{"inm star", conditions{method: "HEAD", ifNoneMatch: "*", haveIfNoneMatch: true}, notModified, ""},
		{"inm other", conditions{method: "GET", ifNoneMatch: `"x"`, haveIfNoneMatch: true, ifModified: at(time.Hour)}, serve, ""},
		{"ims same second", conditions{method: "GET", ifModified: at(0)}, notModified, ""},
		{"ims older", conditions{method: "GET", ifModified: at(-time.Second)}, serve, ""},
		{"im strong", conditions{method: "GET", ifMatch: etag, haveIfMatch: true}, serve, ""},
		{"im weak fails", conditions{method: "GET", ifMatch: "W/" + etag, haveIfMatch: true}, preconditionFailed, ""},
		{"ius older", conditions{method: "GET", ifUnmodified: at(-time.Second)}, preconditionFailed, ""},
		{"ius same", conditions{method: "GET", ifUnmodified: at(0)}, serve, ""},
		{"if-range etag", conditions{method: "GET", rng: "bytes=0-1", ifRange: etag}, serve, "bytes=0-1"},
		{"if-range weak", conditions{method: "GET", rng: "bytes=0-1", ifRange: "W/" + etag}, serve, ""},
		{"if-range date", conditions{method: "GET", rng: "bytes=0-1", ifRange: at(0)}, serve, "bytes=0-1"},
		{"if-range stale", conditions{method: "GET", rng: "bytes=0-1", ifRange: at(-time.Hour)}, serve, ""},
	} {
		got := c.c.check(etag, mod)
		if got != c.want || c.c.rng != c.rng {
			t.Errorf("%s: %d range %q, want %d range %q", c.name, got, c.c.rng, c.want, c.rng)
		}
	}
	if etagOf(time.Unix(1, 0), 5) != "" || etagOf(time.Unix(0, 0), 5) != "" {
		t.Error("an etag for a time of 0 or 1 s")
	}
	if got, want := etagOf(time.Unix(2, 35), 35), `"x2qxwj-z"`; got != want {
		t.Errorf("etag %s, want Caddy's %s", got, want)
	}
}

// TestAcceptedEncodings: the client's q-values first, then the
// directive's order; q=0 refuses.
func TestAcceptedEncodings(t *testing.T) {
	order := []string{"br", "zstd", "gzip"}
	for in, want := range map[string]string{
		"gzip, deflate, br, zstd": "br zstd gzip",
		"gzip;q=1.0, zstd;q=0.5":  "gzip zstd",
		"GZIP":                    "gzip",
		"br;q=0, gzip":            "gzip",
		"identity":                "",
		"":                        "",
		"zstd;q=0.9, br;q=0.9, x": "br zstd",
	} {
		if got := strings.Join(acceptedEncodings(in, order), " "); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzParseRanges: whatever the Range value, the spans lie inside the
// file, are not empty, and ask at most the file's size in all.
func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=0-1,3-4", "bytes=-0", "bytes=9-1",
		"bytes=0-99999999999999999999", "bytes=,", "bytes= 1 - 2 "} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 {
			return
		}
		spans, err := parseRanges(v, size)
		if err != nil {
			return
		}
		if len(spans) > maxRanges {
			t.Fatalf("%q: %d ranges", v, len(spans))
		}
		var sum int64
		for _, s := range spans {
			if s.start < 0 || s.n <= 0 || s.start+s.n > size {
				t.Fatalf("%q on %d: span %+v", v, size, s)
			}
			sum += s.n
		}
		if sum > size {
			t.Fatalf("%q on %d: %d bytes asked", v, size, sum)
		}
	})
}
