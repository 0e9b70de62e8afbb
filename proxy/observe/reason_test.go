package observe

import "testing"

// TestReasonNames: every reason has its own label, and Failure marks the
// upstream's failures and nothing else.
func TestReasonNames(t *testing.T) {
	seen := map[string]Reason{}
	for r := Reason(0); int(r) < NumReasons; r++ {
		name := r.String()
		if name == "" || name == "unknown" {
			t.Errorf("reason %d has no name", r)
		}
		if o, dup := seen[name]; dup {
			t.Errorf("reasons %d and %d are both %q", o, r, name)
		}
		seen[name] = r
		if r != ReasonNone && r.Text("x") == "" {
			t.Errorf("%v has no text", r)
		}
	}
	if Reason(NumReasons).String() != "unknown" {
		t.Error("a reason past the table has a name")
	}
	failures := map[Reason]bool{ReasonConnect: true, ReasonConnectTimeout: true, ReasonTLS: true, ReasonHeaderTimeout: true,
		ReasonWriteTimeout: true, ReasonBadResponse: true, ReasonBadBody: true, ReasonBroken: true,
		ReasonBrokenMidResponse: true, ReasonBadHandshake: true, ReasonUnhealthy: true}
	for r := Reason(0); int(r) < NumReasons; r++ {
		if r.Failure() != failures[r] {
			t.Errorf("%v: Failure() = %v", r, r.Failure())
		}
	}
}

// TestReasonText: the words a client and the access log read, with the
// detail where the reason has one.
func TestReasonText(t *testing.T) {
	for _, c := range []struct {
		r      Reason
		detail string
		want   string
	}{
		{ReasonNone, "", ""},
		{ReasonConnect, "connection refused by upstream", "bad gateway: connection refused by upstream"},
		{ReasonConnectTimeout, "", "gateway timeout: connect to upstream timed out"},
		{ReasonBrokenMidResponse, "upstream closed the connection", "upstream broke mid-response: upstream closed the connection"},
		{ReasonTunnelBroken, "connection reset by upstream", "origin: connection reset by upstream"},
		{ReasonClientGone, "", "client went away"},
		{ReasonClientGone, "stream closed", "client: stream closed"},
		{ReasonRemoved, "", "removed by reload"},
	} {
		if got := c.r.Text(c.detail); got != c.want {
			t.Errorf("%v.Text(%q) = %q, want %q", c.r, c.detail, got, c.want)
		}
	}
	l := RequestLog{Tunnel: true}
	if l.TunnelEnd() != "closed" || l.ErrorText() != "" {
		t.Errorf("a tunnel both sides closed: end %q, error %q", l.TunnelEnd(), l.ErrorText())
	}
	l.Reason = ReasonStreamTimeout
	if l.TunnelEnd() != "stream_timeout" {
		t.Errorf("idle tunnel: end %q", l.TunnelEnd())
	}
}
