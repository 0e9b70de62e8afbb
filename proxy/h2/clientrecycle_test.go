package h2

import (
	"testing"

	"golang.org/x/net/http2"
)

// reopen opens a GET stream on c with fresh events.
func reopen(c *ClientConn) (*ClientStream, *clientEvents) {
	ev := &clientEvents{}
	return c.Open(&Request{Method: "GET", Scheme: "http", Authority: "a.test", Path: "/"}, true, ev), ev
}

// TestClientStreamRecycle: a stream's struct serves a later stream only
// once it is closed, its owner let go of it and no Feed or Flush is under
// way; nothing of its last stream reaches it then: late frames of the old
// ID, nor the rest of a header block that began before its reset.
func TestClientStreamRecycle(t *testing.T) {
	c, o, s, _ := settled(t)
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.ID(), BlockFragment: o.block(":status", "204"), EndHeaders: true, EndStream: true})
	c.Feed(o.take())
	// Closed, not let go of: the owner may still hold it.
	s2, _ := reopen(c)
	if s2 == s {
		t.Fatal("a stream its owner has not let go of was reused")
	}
	// Their IDs, for the late frames: once let go of, a struct is not
	// the owner's to ask.
	oldIDs := []uint32{s.ID(), s2.ID()}
	s.Finish()
	s2.Reset(http2.ErrCodeCancel)
	s2.Finish() // a second let-go changes nothing
	sentFrames(t, c)
	// Let go of, but no Flush since: still spent.
	s3, ev3 := reopen(c)
	if s3 == s || s3 == s2 {
		t.Fatal("a stream was reused before a Flush recycled it")
	}
	c.Flush()
	s4, ev4 := reopen(c)
	if s4 != s2 && s4 != s {
		t.Fatal("a released stream was not reused")
	}
	if s4.ID() <= s3.ID() || s4.Buffered() != 0 || s4.closed || s4.released {
		t.Fatalf("reused stream: id %d after %d, state %+v", s4.ID(), s3.ID(), *s4)
	}
	sentFrames(t, c)

	// Late frames for the old streams reach neither new stream.
	for _, id := range oldIDs {
		o.fr.WriteData(id, false, []byte("stale"))
		o.fr.WriteWindowUpdate(id, 100)
		o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: o.block(":status", "200", "x-old", "1"), EndHeaders: true, EndStream: true})
		o.fr.WriteRSTStream(id, http2.ErrCodeInternal)
	}
	c.Feed(o.take())
	if len(ev3.heads)+len(ev4.heads) != 0 || ev3.body.Len()+ev4.body.Len() != 0 || ev3.wasReset || ev4.wasReset || ev3.ended || ev4.ended {
		t.Fatalf("late frames reached new streams: %+v %+v", ev3, ev4)
	}

	// A header block in progress when its stream is reset: the struct is
	// reused before the block's CONTINUATION arrives.
	blk := o.block(":status", "200", "x-old", "split")
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s4.ID(), BlockFragment: blk[:2]})
	c.Feed(o.take())
	old := s4.ID()
	s4.Reset(http2.ErrCodeCancel)
	c.Flush()
	s5, ev5 := reopen(c)
	if s5 != s4 {
		t.Fatal("the reset stream's struct was not the one reused")
	}
	o.fr.WriteContinuation(old, true, blk[2:])
	o.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s5.ID(), BlockFragment: o.block(":status", "200", "x-old", "split", "x-new", "1"), EndHeaders: true, EndStream: true})
	c.Feed(o.take())
	if len(ev5.heads) != 1 || ev5.heads[0] != 200 || !ev5.ended || ev5.wasReset || len(ev5.fields) != 2 || ev5.fields[1].Name != "x-new" {
		t.Fatalf("the new stream's head: %+v", ev5)
	}
	if c.Dead() {
		t.Fatal("the connection failed")
	}
}

// retrier lets go of its stream when it is reset and opens another from
// inside the event, as the proxy's retry does.
type retrier struct {
	clientEvents
	c     *ClientConn
	s     *ClientStream
	retry *ClientStream
}

func (r *retrier) OnReset(code http2.ErrCode, unprocessed bool) {
	r.clientEvents.OnReset(code, unprocessed)
	r.s.Finish()
	r.retry, _ = reopen(r.c)
}

// TestClientStreamRecycleInFeed: a stream let go of inside an event is not
// handed out before the Feed that delivered the event ends.
func TestClientStreamRecycleInFeed(t *testing.T) {
	c, o, _, _ := settled(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 10})
	r := &retrier{c: c}
	r.s = c.Open(&Request{Method: "GET", Scheme: "http", Authority: "a.test", Path: "/"}, true, r)
	o.fr.WriteRSTStream(r.s.ID(), http2.ErrCodeRefusedStream)
	c.Feed(o.take())
	if r.retry == nil || r.retry == r.s {
		t.Fatalf("retry %p, reset stream %p: reused inside the Feed", r.retry, r.s)
	}
	if s, _ := reopen(c); s != r.s {
		t.Fatal("the reset stream was not reused after the Feed")
	}
}

// queuer, when its stream's body went out, writes on another stream and
// resets it inside the event: that stream is closed, let go of and still
// on the write queue when the Flush ends.
type queuer struct {
	clientEvents
	other *ClientStream
}

func (q *queuer) OnSent(n int) {
	q.clientEvents.OnSent(n)
	if o := q.other; o != nil {
		q.other = nil
		o.Write([]byte("old body, never sent"))
		o.Reset(http2.ErrCodeCancel)
	}
}

// TestClientStreamRecycleBody: a stream let go of while still on the
// write queue is reused only once the queue let go of it, and its next
// stream sends its own body alone, from the buffer it kept.
func TestClientStreamRecycleBody(t *testing.T) {
	c, _, s, _ := settled(t)
	s.Finish()
	c.Flush()
	post := func(ev StreamEvents) *ClientStream {
		return c.Open(&Request{Method: "POST", Scheme: "http", Authority: "a.test", Path: "/"}, false, ev)
	}
	q := &queuer{}
	s1 := post(q)
	q.other = post(&clientEvents{})
	queued := q.other
	s1.Write([]byte("x"))
	c.Flush()
	if q.other != nil || !queued.queued || !queued.closed {
		t.Fatal("the second stream was not reset while queued")
	}
	if s2 := post(&clientEvents{}); s2 == queued {
		t.Fatal("a stream still on the write queue was reused")
	}
	c.Flush() // pops it
	sentFrames(t, c)
	s3 := post(&clientEvents{})
	if s3 != queued {
		t.Fatal("the reset stream was not reused once the queue let go of it")
	}
	s3.Write([]byte("new"))
	s3.End(nil)
	c.Flush()
	var body []byte
	for _, f := range sentFrames(t, c) {
		if d, ok := f.(*http2.DataFrame); ok {
			if d.StreamID != s3.ID() {
				t.Fatalf("DATA on stream %d, want only %d's", d.StreamID, s3.ID())
			}
			body = append(body, d.Data()...)
		}
	}
	if string(body) != "new" {
		t.Fatalf("the reused stream sent %q, want %q", body, "new")
	}
}
