package streamtest

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// connLog is a front end that records the calls the transport's steps
// make, and plays a few behaviours on them.
type connLog struct {
	calls   []string
	onFlush func()
	feedErr error
}

func (c *connLog) Feed(p []byte) error {
	c.calls = append(c.calls, "Feed "+string(p))
	return c.feedErr
}
func (c *connLog) Flush() {
	c.calls = append(c.calls, "Flush")
	if c.onFlush != nil {
		c.onFlush()
	}
}
func (c *connLog) OnDrained()  { c.calls = append(c.calls, "OnDrained") }
func (c *connLog) Shutdown()   {}
func (c *connLog) Abort(error) {}

func (c *connLog) took(t *testing.T, want ...string) {
	t.Helper()
	if !slices.Equal(c.calls, want) {
		t.Fatalf("calls %q, want %q", c.calls, want)
	}
	c.calls = nil
}

func newLogged() (*Transport, *connLog) {
	tr := NewTransport()
	c := &connLog{}
	tr.Conn = c
	return tr, c
}

// TestTransportStep: a step delivers what the loop owes after it — the
// Flush asked for, the Feed owed by PauseRead(false) unless reading is
// paused again — and nothing more; writes wait in Pending until a Drain,
// which is followed by OnDrained.
func TestTransportStep(t *testing.T) {
	tr, c := newLogged()
	tr.Record = true
	tr.Step(func() { tr.Write([]byte("ab")); tr.FlushLater() })
	c.took(t, "Flush")
	tr.Step(func() { tr.PauseRead(true); tr.PauseRead(false) })
	c.took(t, "Feed ")
	tr.Step(func() { tr.PauseRead(false); tr.PauseRead(true) })
	c.took(t) // paused again: the Feed stays owed
	if !tr.FeedOwed || tr.Pauses != 2 || tr.Resumes != 2 {
		t.Fatalf("owed %v, pauses %d, resumes %d", tr.FeedOwed, tr.Pauses, tr.Resumes)
	}
	if err := tr.Feed([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.took(t, "Feed x")
	tr.Write([]byte("cd"))
	if tr.Buffered() != 4 || tr.Written != 4 || tr.Writes != 2 || string(tr.Output) != "abcd" {
		t.Fatalf("buffered %d, written %d in %d, output %q", tr.Buffered(), tr.Written, tr.Writes, tr.Output)
	}
	tr.Drain()
	c.took(t, "OnDrained")
	if tr.Buffered() != 0 || tr.MaxBuffered != 4 {
		t.Fatalf("buffered %d after Drain, at most %d", tr.Buffered(), tr.MaxBuffered)
	}
	// A failing owed Feed closes the transport, and a closed one owes
	// nothing more.
	c.feedErr = errors.New("bad input")
	tr.Step(func() { tr.PauseRead(false); tr.FlushLater() })
	c.took(t, "Feed ")
	if !tr.Closed || tr.FeedErr != c.feedErr {
		t.Fatalf("closed %v, FeedErr %v", tr.Closed, tr.FeedErr)
	}
}

// TestTransportDrainedAfterFlush: with DrainedAfterFlush, a Flush that
// leaves nothing buffered is followed by OnDrained, one that leaves bytes
// is not.
func TestTransportDrainedAfterFlush(t *testing.T) {
	tr, c := newLogged()
	tr.DrainedAfterFlush = true
	tr.Step(tr.FlushLater)
	c.took(t, "Flush", "OnDrained")
	c.onFlush = func() { tr.Write([]byte("x")) }
	tr.Step(tr.FlushLater)
	c.took(t, "Flush")
}

// TestTransportTimers: a timer runs as a step of its own at its time, and
// a front end that asks for Flush without end is stopped.
func TestTransportTimers(t *testing.T) {
	tr, c := newLogged()
	var at time.Duration
	tr.Clock().AfterFunc(10*time.Millisecond, func() { at = tr.Time.Now().Sub(Epoch); tr.FlushLater() })
	tr.Advance(5 * time.Millisecond)
	c.took(t)
	tr.Fire()
	c.took(t, "Flush")
	if at != 10*time.Millisecond {
		t.Fatalf("fired at %v", at)
	}
	quiet := &Transport{NoTimers: true}
	quiet.Clock().AfterFunc(0, func() { t.Fatal("a NoTimers timer fired") })
	c.onFlush = tr.FlushLater
	defer func() {
		if recover() == nil {
			t.Fatal("a Flush asked for without end did not panic")
		}
	}()
	tr.Step(tr.FlushLater)
}
