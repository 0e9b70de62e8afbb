//go:build unix

package netpoll

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// victim is an Owner whose work panics on demand: as a descriptor's
// handler, a timer's owner, a task's, a flusher.
type victim struct {
	name      string
	d         *Desc
	abandoned []any
	again     bool // Abandon panics too
	flushes   int
}

func (v *victim) HandleEvent(Event) {
	var b [64]byte
	v.d.Read(b[:])
	panic("event " + v.name)
}

func (v *victim) Flush() {
	v.flushes++
	panic("flush " + v.name)
}

func (v *victim) Abandon(p any) (site, request string) {
	v.abandoned = append(v.abandoned, p)
	if v.d != nil {
		v.d.Close()
	}
	if v.again {
		panic("abandon " + v.name)
	}
	return v.name + ".example", "GET /" + v.name + " HTTP/1.1"
}

// bystander counts what it reads and flushes: work of other connections on
// the same loop that must go on.
type bystander struct {
	d       *Desc
	read    int
	flushes int
}

func (b *bystander) HandleEvent(Event) {
	var buf [64]byte
	for {
		n, _ := b.d.Read(buf[:])
		if n <= 0 {
			return
		}
		b.read += n
	}
}

func (b *bystander) Flush() { b.flushes++ }

// TestPanicContained panics in every kind of a loop's work, with and
// without an owner, and in an owner's Abandon: each owner is abandoned
// once, each panic reported once with its stage and stack, descriptors
// of work without an owner are closed, and the loop goes on serving the
// rest — the same batch's other events, timers, tasks and flushes too.
func TestPanicContained(t *testing.T) {
	polltest.ForEachBackend(t, Available(), func(t *testing.T, name string) {
		l := newTestLoop(t, name)
		var reports []Recovered
		l.OnPanic(func(r Recovered) { reports = append(reports, r) })
		turn := func(until func() bool) {
			t.Helper()
			for i := 0; i < 200 && !until(); i++ {
				if err := l.RunOnce(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if !until() {
				t.Fatal("the loop did not get there")
			}
		}
		register := func(h Handler) (*Desc, int) {
			a, b := socketPair(t)
			d, err := l.Register(a, h, Read)
			if err != nil {
				t.Fatal(err)
			}
			return d, b
		}
		by := &bystander{}
		var byPeer int
		by.d, byPeer = register(by)
		ev := &victim{name: "ev"}
		var evPeer int
		ev.d, evPeer = register(ev)
		again := &victim{name: "again", again: true}
		var againPeer int
		again.d, againPeer = register(again)
		// A handler that is no Owner: the loop closes its descriptor.
		var bare *Desc
		bare, barePeer := register(handlerFunc(func(Event) {
			var b [64]byte
			bare.Read(b[:])
			panic("event bare")
		}))
		descs := l.Stats().Descriptors

		for _, fd := range []int{byPeer, evPeer, againPeer, barePeer} {
			unix.Write(fd, []byte("x"))
		}
		turn(func() bool {
			return by.read == 1 && len(ev.abandoned) == 1 && len(again.abandoned) == 1 && len(reports) == 4
		})
		if got := l.Stats().Descriptors; got != descs-3 {
			t.Errorf("%d descriptors registered, want %d: the abandoned and the ownerless one closed", got, descs-3)
		}

		// Timers, tasks and flushes, owned and not, next to work that
		// does not panic.
		tm, task, fl := &victim{name: "timer"}, &victim{name: "task"}, &victim{name: "flush"}
		fired := 0
		l.AfterFunc(0, func() { panic("timer bare") })
		l.AfterFunc(0, func() { panic("timer owned") }).SetOwner(tm)
		l.AfterFunc(0, func() { fired++ })
		ran := 0
		l.Post(func() { panic("task bare") })
		l.PostFor(task, func() { panic("task owned") })
		l.Post(func() { ran++ })
		l.FlushLater(fl)
		l.FlushLater(by)
		turn(func() bool { return fired == 1 && ran == 1 && by.flushes == 1 && len(fl.abandoned) == 1 })
		if len(tm.abandoned) != 1 || len(task.abandoned) != 1 || len(fl.abandoned) != 1 {
			t.Errorf("abandoned: timer %v, task %v, flush %v; want each once", tm.abandoned, task.abandoned, fl.abandoned)
		}

		// The loop still serves the bystander, which shared a batch with
		// the panics.
		unix.Write(byPeer, []byte("yz"))
		turn(func() bool { return by.read == 3 })

		type want struct {
			stage, value  string
			owned, again  bool
			site, request string
		}
		wants := map[string]want{
			"event ev":      {StageEvent, "event ev", true, false, "ev.example", "GET /ev HTTP/1.1"},
			"event again":   {StageEvent, "event again", true, false, "", ""},
			"abandon again": {StageEvent, "abandon again", true, true, "", ""},
			"event bare":    {StageEvent, "event bare", false, false, "", ""},
			"timer bare":    {StageTimer, "timer bare", false, false, "", ""},
			"timer owned":   {StageTimer, "timer owned", true, false, "timer.example", "GET /timer HTTP/1.1"},
			"task bare":     {StageTask, "task bare", false, false, "", ""},
			"task owned":    {StageTask, "task owned", true, false, "task.example", "GET /task HTTP/1.1"},
			"flush flush":   {StageFlush, "flush flush", true, false, "flush.example", "GET /flush HTTP/1.1"},
		}
		if len(reports) != len(wants) {
			t.Errorf("%d reports, want %d", len(reports), len(wants))
		}
		for _, r := range reports {
			v, _ := r.Value.(string)
			w, ok := wants[v]
			if !ok {
				t.Errorf("unexpected report of %v", r.Value)
				continue
			}
			delete(wants, v)
			if r.Stage != w.stage || r.Owned != w.owned || r.InAbandon != w.again || r.Site != w.site || r.Request != w.request {
				t.Errorf("report of %q: stage %s owned %v in abandon %v site %q request %q; want %+v",
					v, r.Stage, r.Owned, r.InAbandon, r.Site, r.Request, w)
			}
			if r.Loop != l.ID() || r.Backend != name {
				t.Errorf("report of %q names loop %d %s", v, r.Loop, r.Backend)
			}
			if !strings.Contains(string(r.Stack), "contain_test.go") {
				t.Errorf("report of %q: the stack does not reach the panic:\n%s", v, r.Stack)
			}
		}
		for v := range wants {
			t.Errorf("no report of %q", v)
		}
		if got := l.Stats().Panics; got != uint64(len(reports)) {
			t.Errorf("Stats.Panics = %d, want %d", got, len(reports))
		}
	})
}
