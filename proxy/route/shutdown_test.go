package route

import (
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestShutdownPlaceholders: {http.shutting_down} is "false" and
// {http.time_until_shutdown} empty until a stop is scheduled; then
// "true" and the time left as a Go duration, negative once it is past,
// and a vars matcher on {http.shutting_down} follows.
func TestShutdownPlaceholders(t *testing.T) {
	tp, err := ParseTemplate("{http.shutting_down}|{http.time_until_shutdown}", TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewVarKey("{http.shutting_down}")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParseTemplate("true", TemplateOptions{})
	going := Vars{{Key: key, Values: []Template{want}}}

	var stop stream.Shutdown
	for _, r := range []*stream.Request{{}, {Shutdown: &stop}} {
		if got := string(tp.Append(nil, r)); got != "false|" {
			t.Errorf("no stop scheduled (Shutdown %p): %q, want %q", r.Shutdown, got, "false|")
		}
		if going.Match(&Ctx{Req: r}) {
			t.Errorf("no stop scheduled (Shutdown %p): the vars matcher matched", r.Shutdown)
		}
	}

	r := &stream.Request{Shutdown: &stop}
	stop.Schedule(time.Now().Add(time.Hour))
	got := string(tp.Append(nil, r))
	left, err := time.ParseDuration(got[len("true|"):])
	if got[:len("true|")] != "true|" || err != nil || left <= 0 || left > time.Hour {
		t.Errorf("an hour ahead: %q (%v), want true and a duration in (0, 1h]", got, err)
	}
	if !going.Match(&Ctx{Req: r}) {
		t.Error("stop scheduled: the vars matcher did not match")
	}

	stop.Schedule(time.Now().Add(-time.Minute))
	got = string(tp.Append(nil, r))
	left, err = time.ParseDuration(got[len("true|"):])
	if err != nil || left > -time.Minute {
		t.Errorf("a minute past: %q (%v), want a duration of -1m or less", got, err)
	}
}
