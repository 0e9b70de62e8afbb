package site

import (
	"errors"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// hold is what a parked request is to the front end: these tests play
// the front end's events against it in each order they can come in.

// TestHoldHandsOverBody: body bytes and the body's end that came while
// parked reach the answer on hand-over, in order, with the trailers;
// none was reported consumed meanwhile, so the client's window bounds
// them.
func TestHoldHandsOverBody(t *testing.T) {
	c := &client{}
	o := &hold{w: c}
	o.OnBody([]byte("ab"))
	o.OnBody([]byte("cd"))
	o.OnBodyEnd([]stream.Field{{Name: "x-sum", Value: "1"}})
	o.OnWritable() // nothing is written while parked: nobody to tell
	if c.consumed != 0 {
		t.Fatalf("%d bytes consumed while parked", c.consumed)
	}
	e := &exchange{}
	o.handOver(e)
	if string(e.body) != "abcd" || !e.bodyEnd {
		t.Fatalf("the answer got %q, end %v", e.body, e.bodyEnd)
	}
	if o.body != nil || o.trailers != nil {
		t.Error("the hold kept what it handed over")
	}
	o.OnWritable()
	o.OnRelease()
	o.OnAbort(errors.New("gone"))
	if e.writable != 1 || e.released != 1 || !e.aborted {
		t.Errorf("later events: writable %d, released %d, aborted %v", e.writable, e.released, e.aborted)
	}
}

// TestHoldBodyAfterHandOver: a body that goes on after the hand-over goes
// straight to the answer, its end too.
func TestHoldBodyAfterHandOver(t *testing.T) {
	c := &client{}
	o := &hold{w: c}
	o.OnBody([]byte("first"))
	e := &exchange{}
	o.handOver(e)
	o.OnBody([]byte(" second"))
	if e.bodyEnd {
		t.Fatal("the answer heard an end the client never sent")
	}
	o.OnBodyEnd(nil)
	if string(e.body) != "first second" || !e.bodyEnd || c.consumed != 0 {
		t.Errorf("the answer got %q (end %v); %d consumed by the hold", e.body, e.bodyEnd, c.consumed)
	}
}

// TestHoldAnsweredInServe: an answer that ended within its Serve (nil
// Events) wants no body: what was held, and what comes after, is
// reported consumed so the client's window opens again, and later events
// have nobody to reach.
func TestHoldAnsweredInServe(t *testing.T) {
	c := &client{}
	o := &hold{w: c}
	o.OnBody([]byte("12345"))
	o.handOver(nil)
	if c.consumed != 5 {
		t.Fatalf("%d bytes consumed on hand-over, want 5", c.consumed)
	}
	o.OnBody([]byte("678"))
	o.OnBodyEnd(nil)
	o.OnWritable()
	o.OnRelease()
	o.OnAbort(errors.New("gone"))
	if c.consumed != 8 {
		t.Errorf("%d bytes consumed in all, want 8", c.consumed)
	}
	if o.ended {
		t.Error("an end after the hand-over was kept as if parked")
	}
}

// TestHoldClientGone: a client that goes away while parked drops what
// was held; the answer that comes back later finds it gone.
func TestHoldClientGone(t *testing.T) {
	c := &client{}
	o := &hold{w: c}
	o.OnBody([]byte("held"))
	o.OnAbort(errors.New("gone"))
	if !o.gone || o.body != nil {
		t.Fatalf("gone %v, body %q", o.gone, o.body)
	}
	o.OnRelease() // nothing to release yet
	if c.consumed != 0 || c.status != 0 {
		t.Errorf("the client's writer was used after it left: consumed %d, status %d", c.consumed, c.status)
	}
}

// TestHoldEmptyBody: no body at all hands nothing but the end.
func TestHoldEmptyBody(t *testing.T) {
	o := &hold{w: &client{}}
	o.OnBodyEnd(nil)
	e := &exchange{}
	o.handOver(e)
	if len(e.body) != 0 || !e.bodyEnd {
		t.Errorf("body %q end %v", e.body, e.bodyEnd)
	}
	// An answer without Releaser is simply not released.
	o2 := &hold{w: &client{}}
	o2.handOver(drain{})
	o2.OnRelease()
}
