// Package accesslog writes one line per finished request, as JSON (through
// log/slog's JSONHandler) or in the Common Log Format.
//
// Observe runs on an event loop and must never block: it copies the
// request's facts into a bounded channel and returns. A writer goroutine
// drains the channel and formats and writes the lines, so a slow disk or a
// full pipe costs dropped lines (counted by Dropped), never a stalled loop.
package accesslog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pollproxy/pollproxy/proxy/observe"
)

// Formats.
const (
	JSON   = "json"
	Common = "common"
)

// DefaultQueue is how many records wait for the writer before new ones are
// dropped.
const DefaultQueue = 4096

// Logger is an access log.
type Logger struct {
	format string
	output string // "stderr", "stdout" or a file name
	ch     chan observe.RequestLog
	reopen chan chan error
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once

	dropped atomic.Uint64
	written atomic.Uint64

	// Owned by the writer goroutine.
	w    io.Writer
	file *os.File
	buf  *bufio.Writer
	json *slog.JSONHandler
	line []byte
}

// Open starts a log in format (json or common) to output: "stderr",
// "stdout" or a file, opened for appending.
func Open(format, output string, queue int) (*Logger, error) {
	var w io.Writer
	var f *os.File
	switch output {
	case "", "stderr":
		w = os.Stderr
	case "stdout":
		w = os.Stdout
	default:
		var err error
		f, err = openFile(output)
		if err != nil {
			return nil, err
		}
		w = f
	}
	l, err := newLogger(format, w, queue)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	l.output, l.file = output, f
	go l.run()
	return l, nil
}

// New starts a log in format to w (tests, or an already open writer).
func New(format string, w io.Writer, queue int) (*Logger, error) {
	l, err := newLogger(format, w, queue)
	if err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

func newLogger(format string, w io.Writer, queue int) (*Logger, error) {
	if format == "" {
		format = JSON
	}
	if format != JSON && format != Common {
		return nil, fmt.Errorf("access log: unknown format %q (want json, common)", format)
	}
	if queue <= 0 {
		queue = DefaultQueue
	}
	l := &Logger{
		format: format,
		ch:     make(chan observe.RequestLog, queue),
		reopen: make(chan chan error),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	l.setWriter(w)
	return l, nil
}

func openFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	return f, nil
}

func (l *Logger) setWriter(w io.Writer) {
	l.w = w
	l.buf = bufio.NewWriterSize(w, 64<<10)
	l.json = slog.NewJSONHandler(l.buf, &slog.HandlerOptions{ReplaceAttr: dropLevel})
}

// dropLevel leaves the level out of access log lines: they are all the
// same kind.
func dropLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		return slog.Attr{}
	}
	return a
}

// Observe queues one request's line. It never blocks: when the queue is
// full, or the log is closed, the line is dropped and counted.
func (l *Logger) Observe(r *observe.RequestLog) {
	if l.closed.Load() {
		l.dropped.Add(1)
		return
	}
	select {
	case l.ch <- *r:
	default:
		l.dropped.Add(1)
	}
}

// Dropped is how many lines were dropped.
func (l *Logger) Dropped() uint64 { return l.dropped.Load() }

// Written is how many lines were written.
func (l *Logger) Written() uint64 { return l.written.Load() }

// Reopen closes and reopens a file output (after log rotation); for
// stderr and stdout it only flushes.
func (l *Logger) Reopen() error {
	if l.closed.Load() {
		return nil
	}
	errc := make(chan error, 1)
	select {
	case l.reopen <- errc:
		return <-errc
	case <-l.done:
		return nil
	}
}

// Close writes what is queued and stops the writer. Lines observed after
// Close are dropped.
func (l *Logger) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		close(l.stop)
	})
	<-l.done
	return nil
}

func (l *Logger) run() {
	defer close(l.done)
	for {
		select {
		case r := <-l.ch:
			l.write(&r)
			// Drain what else is queued before flushing: one write per
			// batch.
			for n := len(l.ch); n > 0; n-- {
				r := <-l.ch
				l.write(&r)
			}
			l.buf.Flush()
		case errc := <-l.reopen:
			errc <- l.doReopen()
		case <-l.stop:
			for n := len(l.ch); n > 0; n-- {
				r := <-l.ch
				l.write(&r)
			}
			l.buf.Flush()
			if l.file != nil {
				l.file.Close()
			}
			return
		}
	}
}

func (l *Logger) doReopen() error {
	l.buf.Flush()
	if l.file == nil {
		return nil
	}
	f, err := openFile(l.output)
	if err != nil {
		return err // keep writing to the old file
	}
	l.file.Close()
	l.file = f
	l.setWriter(f)
	return nil
}

func (l *Logger) write(r *observe.RequestLog) {
	if l.format == Common {
		l.line = AppendCommon(l.line[:0], r)
		l.buf.Write(l.line)
	} else {
		l.json.Handle(context.Background(), Record(r))
	}
	l.written.Add(1)
}

// Record is the slog record of one request: time (the request's end),
// msg "request", then the request's attributes.
func Record(r *observe.RequestLog) slog.Record {
	rec := slog.NewRecord(r.Start.Add(r.Duration), slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("remote", r.Remote.Addr().String()),
		slog.String("client_ip", clientIP(r).String()),
		slog.String("proto", r.Proto),
		slog.String("method", r.Method),
		slog.String("host", r.Authority),
		slog.String("uri", r.Path),
		slog.Int("status", r.Status),
		slog.Int64("bytes", r.BytesOut),
		slog.Float64("duration", r.Duration.Seconds()),
		slog.String("upstream", r.Upstream),
		slog.Bool("reused", r.Reused),
		slog.String("poller", r.Poller),
		slog.Int("loop", r.Loop),
	)
	if r.User != "" {
		rec.AddAttrs(slog.String("user_id", r.User)) // Caddy's name for it
	}
	if r.Reason != observe.ReasonNone {
		// error in words, as the client read it; reason as the metrics
		// label it, for filtering.
		rec.AddAttrs(slog.String("error", r.ErrorText()), slog.String("reason", r.Reason.String()))
	}
	if r.Tunnel {
		// One line per tunnel, when it ends: bytes is the origin's
		// direction, bytes_in the client's, duration its whole life.
		rec.AddAttrs(slog.Bool("tunnel", true), slog.Int64("bytes_in", r.BytesIn),
			slog.String("tunnel_end", r.TunnelEnd()))
	}
	return rec
}

// AppendCommon appends r in the Common Log Format, followed by pollproxy's
// own fields:
//
//	127.0.0.1 - - [02/Jan/2026:15:04:05 +0000] "GET /a HTTP/2.0" 200 1024 upstream=127.0.0.1:8080 duration=0.000412 poller=epoll loop=0
//
// A reset stream shows status "-", an empty body "-".
func AppendCommon(b []byte, r *observe.RequestLog) []byte {
	if a := clientIP(r); a.IsValid() {
		b = a.AppendTo(b)
	} else {
		b = append(b, '-')
	}
	b = append(b, " - "...)
	b = appendUser(b, r.User)
	b = append(b, " ["...)
	b = r.Start.AppendFormat(b, Stamp)
	b = append(b, "] \""...)
	b = appendClean(b, r.Method)
	b = append(b, ' ')
	b = appendClean(b, r.Path)
	b = append(b, ' ')
	b = appendClean(b, r.Proto)
	b = append(b, "\" "...)
	if r.Status > 0 {
		b = strconv.AppendInt(b, int64(r.Status), 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, ' ')
	if r.BytesOut > 0 {
		b = strconv.AppendInt(b, r.BytesOut, 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, " upstream="...)
	if r.Upstream != "" {
		b = appendClean(b, r.Upstream)
	} else {
		b = append(b, '-')
	}
	b = append(b, " duration="...)
	b = strconv.AppendFloat(b, r.Duration.Seconds(), 'f', 6, 64)
	b = append(b, " poller="...)
	b = append(b, r.Poller...)
	b = append(b, " loop="...)
	b = strconv.AppendInt(b, int64(r.Loop), 10)
	return append(b, '\n')
}

// appendClean appends s with quotes, backslashes and control bytes
// escaped, so a request target cannot forge a log line.
func appendClean(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendUser appends the Common Log Format's authuser: "-" for none, and
// a space escaped like a control byte, so the user stays one field.
func appendUser(b []byte, user string) []byte {
	if user == "" {
		return append(b, '-')
	}
	for {
		part, rest, more := strings.Cut(user, " ")
		b = appendClean(b, part)
		if !more {
			return b
		}
		b = append(b, `\x20`...)
		user = rest
	}
}

// Stamp is the time format of Common lines, for tests and readers.
const Stamp = "02/Jan/2006:15:04:05 -0700"

// clientIP is the address a line names as the client: the one the proxy
// derived (a trusted proxy's X-Forwarded-For), else the peer's.
func clientIP(r *observe.RequestLog) netip.Addr {
	if r.ClientIP.IsValid() {
		return r.ClientIP
	}
	return r.Remote.Addr()
}
