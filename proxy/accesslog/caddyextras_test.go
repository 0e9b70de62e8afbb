package accesslog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestSampling: within an interval the first entries are written, then
// every thereafter-th; a new interval starts the count over; 5xx entries
// (level error) are counted apart from the others, as zap counts by
// level.
func TestSampling(t *testing.T) {
	var buf syncBuf
	l, _ := NewLogger(NewWriter(&buf, 64), Options{Format: Common, Sampling: NewSampling(time.Minute, 2, 3)})
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var want []int
	for i := 1; i <= 9; i++ {
		r := sample()
		r.Start, r.Duration, r.BytesOut = t0, time.Millisecond, int64(i)
		l.Observe(r)
		if i <= 2 || (i-2)%3 == 0 {
			want = append(want, i)
		}
	}
	r := sample()
	r.Start, r.Status, r.BytesOut = t0, 502, 100 // the first error: its own count
	l.Observe(r)
	want = append(want, 100)
	r = sample()
	r.Start, r.BytesOut = t0.Add(2*time.Minute), 200 // a new interval
	l.Observe(r)
	want = append(want, 200)
	l.Close()
	var got []int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var n int
		fmt.Sscanf(line[strings.Index(line, `HTTP/2.0" `)+len(`HTTP/2.0" `)+4:], "%d", &n)
		got = append(got, n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries written %v, want %v", got, want)
	}
	if s := NewSampling(0, 0, 0); s.Interval != time.Second || s.First != 100 || s.Thereafter != 100 {
		t.Errorf("defaults %+v, want Caddy's 1s, 100, 100", s)
	}
}

// TestCookieFilter: Caddy's cookie filter replaces, hashes and deletes
// cookies by name and writes the rest back as one Cookie value; without
// log_credentials it sees what Caddy's sees, REDACTED, which net/http
// reads as a cookie without a value; a field left with no cookie is an
// empty array.
func TestCookieFilter(t *testing.T) {
	filters := []Filter{{Field: "request>headers>Cookie", Op: "cookie", Cookies: []CookieAction{
		{Op: "replace", Name: "session", Value: "REPLACED"}, {Op: "hash", Name: "id"}, {Op: "delete", Name: "secret"},
	}}}
	for _, tc := range []struct {
		credentials bool
		want        string
	}{
		{true, fmt.Sprintf(`"Cookie":["session=REPLACED; id=%s; other=1; last=2"]`, hash("42"))},
		{false, `"Cookie":["REDACTED="]`},
	} {
		var buf syncBuf
		l, _ := NewLogger(NewWriter(&buf, 16), Options{Credentials: tc.credentials, Filters: filters})
		r := sample()
		r.Header = []stream.Field{{Name: "cookie", Value: "session=abc; id=42; secret=s3"}, {Name: "accept", Value: "*/*"}, {Name: "cookie", Value: "other=1; last=2"}}
		l.Observe(r)
		l.Close()
		if line := buf.String(); !strings.Contains(line, tc.want) || !strings.Contains(line, `"Accept":["*/*"]`) {
			t.Errorf("credentials %v: want %s in %s", tc.credentials, tc.want, line)
		}
	}
	var buf syncBuf
	l, _ := NewLogger(NewWriter(&buf, 16), Options{Credentials: true, Filters: filters})
	r := sample()
	r.Header = []stream.Field{{Name: "cookie", Value: "secret=1"}}
	l.Observe(r)
	l.Close()
	if line := buf.String(); !strings.Contains(line, `"headers":{"Cookie":[]}`) {
		t.Errorf("every cookie deleted: %s", line)
	}
}

// TestAppend: the append format's fields follow every entry's own, in
// json and console.
func TestAppend(t *testing.T) {
	for _, format := range []string{JSON, Console} {
		var buf syncBuf
		l, _ := NewLogger(NewWriter(&buf, 16), Options{Format: format, Append: []AppendField{
			{Name: "env", Value: []byte(`"prod"`)}, {Name: "shard", Value: []byte("3")}, {Name: "canary", Value: []byte("true")},
		}})
		l.Observe(sample())
		l.Close()
		if line := buf.String(); !strings.HasSuffix(line, `,"loop":1,"env":"prod","shard":3,"canary":true}`+"\n") {
			t.Errorf("%s: %s", format, line)
		}
	}
}
