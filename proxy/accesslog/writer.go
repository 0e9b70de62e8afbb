package accesslog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/pollproxy/pollproxy/proxy/observe"
)

// DefaultQueue is how many entries wait for a writer before new ones are
// dropped.
const DefaultQueue = 4096

// Output is where a writer writes, as Caddy's log output names it:
// "stderr", "stdout", "discard" or "file" (File and Roll).
type Output struct {
	Kind string
	File string
	Roll Roll
}

// Roll is Caddy's rolling of a file output (its file writer's options),
// done by lumberjack as in Caddy: a file over SizeMB is renamed with a
// timestamp, gzipped unless Uncompressed, and at most Keep rolled files
// no older than KeepDays are kept. Zero values take Caddy's defaults.
type Roll struct {
	Disabled     bool
	SizeMB       int // default 100
	Uncompressed bool
	LocalTime    bool
	Keep         int // default 10
	KeepDays     int // default 90
	Mode         os.FileMode
	// Interval, At and Minutes roll by time as well as by size (Caddy's
	// roll_interval, roll_at, roll_minutes): every Interval, at each
	// "HH:MM" of At every day, at each of Minutes past every hour, in
	// local time.
	Interval time.Duration
	At       []string
	Minutes  []int
}

// next is the first time after now at which r rolls by time; zero when
// it does not.
func (r *Roll) next(now, opened time.Time) time.Time {
	var t time.Time
	earlier := func(c time.Time) {
		if c.After(now) && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	if r.Interval > 0 {
		n := opened.Add(r.Interval)
		for !n.After(now) {
			n = n.Add(r.Interval)
		}
		earlier(n)
	}
	now = now.Local()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
	for _, at := range r.At {
		if c, err := time.ParseInLocation("15:04", at, time.Local); err == nil {
			d := time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute
			earlier(day.Add(d))
			earlier(day.AddDate(0, 0, 1).Add(d))
		}
	}
	hour := now.Truncate(time.Hour)
	for _, m := range r.Minutes {
		earlier(hour.Add(time.Duration(m) * time.Minute))
		earlier(hour.Add(time.Hour + time.Duration(m)*time.Minute))
	}
	return t
}

// Key is what makes two outputs one writer: the same stream or the same
// file (several loggers may share a file, through one writer).
func (o Output) Key() string {
	if o.Kind != "file" {
		return o.Kind
	}
	if abs, err := filepath.Abs(o.File); err == nil {
		return "file:" + abs
	}
	return "file:" + o.File
}

// Writer owns one output: a goroutine that formats and writes the entries
// the loggers queue, so a slow disk or a full pipe costs dropped entries
// (Dropped), never a stalled loop.
type Writer struct {
	out    Output
	ch     chan entry
	reopen chan chan error
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once

	dropped atomic.Uint64
	written atomic.Uint64

	// Owned by the writer goroutine.
	w         io.Writer
	file      io.Closer // the file or the roller; nil for the standard streams
	buf       *bufio.Writer
	line      []byte
	sinceRoll int // entries written since the last roll by time
}

// entry is one request on its way to the writer, with the logger that
// formats it.
type entry struct {
	l *Logger
	r observe.RequestLog
}

// OpenWriter starts a writer to out.
func OpenWriter(out Output, queue int) (*Writer, error) {
	var w io.Writer
	switch out.Kind {
	case "", "stderr":
		out.Kind, w = "stderr", os.Stderr
	case "stdout":
		w = os.Stdout
	case "discard":
		w = io.Discard
	case "file":
		f, err := openFile(out)
		if err != nil {
			return nil, err
		}
		wr := newWriter(f, queue)
		wr.out, wr.file = out, f
		go wr.run()
		return wr, nil
	default:
		return nil, fmt.Errorf("access log: unknown output %q (want stdout, stderr, discard, file)", out.Kind)
	}
	wr := newWriter(w, queue)
	wr.out = out
	go wr.run()
	return wr, nil
}

// NewWriter starts a writer to w (tests, or an already open writer).
func NewWriter(w io.Writer, queue int) *Writer {
	wr := newWriter(w, queue)
	go wr.run()
	return wr
}

func newWriter(w io.Writer, queue int) *Writer {
	if queue <= 0 {
		queue = DefaultQueue
	}
	wr := &Writer{
		ch:     make(chan entry, queue),
		reopen: make(chan chan error),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	wr.setWriter(w)
	return wr
}

// openFile opens a file output as Caddy does: created with the mode
// (0600 by default) so that a roller that takes it over keeps it, then
// handed to lumberjack unless rolling is disabled.
func openFile(out Output) (io.WriteCloser, error) {
	mode := out.Roll.Mode
	if mode == 0 {
		mode = 0o600
	}
	f, err := os.OpenFile(out.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, mode)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	if out.Roll.Mode != 0 {
		if err := f.Chmod(out.Roll.Mode); err != nil {
			f.Close()
			return nil, fmt.Errorf("access log: %w", err)
		}
	}
	if out.Roll.Disabled {
		return f, nil
	}
	f.Close()
	r := out.Roll
	if r.SizeMB <= 0 {
		r.SizeMB = 100
	}
	if r.Keep <= 0 {
		r.Keep = 10
	}
	if r.KeepDays <= 0 {
		r.KeepDays = 90
	}
	return &lumberjack.Logger{Filename: out.File, MaxSize: r.SizeMB, MaxBackups: r.Keep,
		MaxAge: r.KeepDays, LocalTime: r.LocalTime, Compress: !r.Uncompressed}, nil
}

func (w *Writer) setWriter(out io.Writer) {
	w.w = out
	w.buf = bufio.NewWriterSize(out, 64<<10)
}

// enqueue hands an entry to the writer. It never blocks: when the queue
// is full, or the writer is closed, the entry is dropped and counted.
func (w *Writer) enqueue(l *Logger, r *observe.RequestLog) {
	if w.closed.Load() {
		w.dropped.Add(1)
		return
	}
	select {
	case w.ch <- entry{l, *r}:
	default:
		w.dropped.Add(1)
	}
}

// Output is where the writer writes.
func (w *Writer) Output() Output { return w.out }

// Dropped is how many entries were dropped.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Written is how many entries were written.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Reopen closes and reopens a file output, so that a file rotated away
// by another program is written anew (a rolling file reopens its current
// name); for the standard streams it only flushes.
func (w *Writer) Reopen() error {
	if w.closed.Load() {
		return nil
	}
	errc := make(chan error, 1)
	select {
	case w.reopen <- errc:
		return <-errc
	case <-w.done:
		return nil
	}
}

// Close writes what is queued and stops the writer. Entries observed
// after Close are dropped.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.closed.Store(true)
		close(w.stop)
	})
	<-w.done
	return nil
}

func (w *Writer) run() {
	defer close(w.done)
	var roll *time.Timer
	var rollC <-chan time.Time
	lj, _ := w.file.(*lumberjack.Logger)
	opened := time.Now()
	arm := func() {
		if lj == nil {
			return
		}
		if next := w.out.Roll.next(time.Now(), opened); !next.IsZero() {
			roll = time.NewTimer(time.Until(next))
			rollC = roll.C
		}
	}
	arm()
	defer func() {
		if roll != nil {
			roll.Stop()
		}
	}()
	for {
		select {
		case <-rollC:
			// A file with no new entry is not rolled: an idle site does
			// not leave an empty file per interval.
			if w.sinceRoll > 0 {
				w.buf.Flush()
				lj.Rotate()
				w.sinceRoll = 0
			}
			opened = time.Now()
			arm()
		case e := <-w.ch:
			w.write(&e)
			// Drain what else is queued before flushing: one write per
			// batch.
			for n := len(w.ch); n > 0; n-- {
				e := <-w.ch
				w.write(&e)
			}
			w.buf.Flush()
		case errc := <-w.reopen:
			errc <- w.doReopen()
		case <-w.stop:
			for n := len(w.ch); n > 0; n-- {
				e := <-w.ch
				w.write(&e)
			}
			w.buf.Flush()
			if w.file != nil {
				w.file.Close()
			}
			return
		}
	}
}

func (w *Writer) doReopen() error {
	w.buf.Flush()
	if w.file == nil {
		return nil
	}
	if lj, ok := w.file.(*lumberjack.Logger); ok {
		// lumberjack opens its file name again on the next write.
		return lj.Close()
	}
	f, err := openFile(w.out)
	if err != nil {
		return err // keep writing to the old file
	}
	w.file.Close()
	w.file = f
	w.setWriter(f)
	return nil
}

func (w *Writer) write(e *entry) {
	w.line = e.l.appendEntry(w.line[:0], &e.r)
	w.buf.Write(w.line)
	w.sinceRoll++
	w.written.Add(1)
}
