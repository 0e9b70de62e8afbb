package accesslog

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/observe"
)

// Formats: Caddy's json and console encoders, and pollproxy's Common Log
// Format line.
const (
	JSON    = "json"
	Console = "console"
	Common  = "common"
)

// Level is a log level as Caddy (zap) numbers them: an access entry is
// Info, or Error for a 5xx status; a logger writes the entries at or
// above its level.
type Level int8

// Levels.
const (
	Debug Level = iota - 1
	Info
	Warn
	Error
	DPanic
	Panic
	Fatal
)

// ParseLevel reads a level as Caddy's level option spells it (any case).
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return Debug, nil
	case "", "info":
		return Info, nil
	case "warn", "warning":
		return Warn, nil
	case "error":
		return Error, nil
	case "dpanic":
		return DPanic, nil
	case "panic":
		return Panic, nil
	case "fatal":
		return Fatal, nil
	}
	return 0, fmt.Errorf("unknown level %q (want DEBUG, INFO, WARN, ERROR, PANIC, FATAL)", s)
}

var levelNames = [...]string{"debug", "info", "warn", "error", "dpanic", "panic", "fatal"}

// String is the level in lowercase, as Caddy's JSON writes it.
func (l Level) String() string { return levelNames[l+1] }

// Options configure one access logger (one site's log directive).
type Options struct {
	// Name is the logger's name after "http.log.access.": "log0" for a
	// site's first unnamed log, or the name written; "" for the default
	// logger ("http.log.access").
	Name   string
	Format string // json (default), console or common
	Level  Level
	// Hostnames, when set, are the only request hosts logged (Caddy's
	// hostnames).
	Hostnames []string
	// Credentials keeps Cookie, Set-Cookie, Authorization and
	// Proxy-Authorization values (Caddy's log_credentials); by default
	// they read REDACTED.
	Credentials bool
	// Filters are Caddy's format filter's field filters, in order
	// (json and console formats).
	Filters []Filter
	// Sampling, when set, writes only some entries (Caddy's sampling).
	Sampling *Sampling
	// Append are fields added after every entry's own (Caddy's append
	// format; json and console formats).
	Append []AppendField
}

// AppendField is one field of Caddy's append format: its name and its
// value, already JSON (a string, number or boolean, as Caddy reads the
// Caddyfile token).
type AppendField struct {
	Name  string
	Value []byte
}

// Logger is one access logger: it decides on the loop whether a request
// is logged and queues it to its Writer, which formats it off the loop.
type Logger struct {
	w      *Writer
	opts   Options
	logger string // "http.log.access.NAME"
}

// NewLogger returns a logger writing through w.
func NewLogger(w *Writer, o Options) (*Logger, error) {
	if o.Format == "" {
		o.Format = JSON
	}
	if o.Format != JSON && o.Format != Console && o.Format != Common {
		return nil, fmt.Errorf("access log: unknown format %q (want json, console, common)", o.Format)
	}
	name := "http.log.access"
	if o.Name != "" {
		name += "." + o.Name
	}
	for i, h := range o.Hostnames {
		o.Hostnames[i] = strings.ToLower(h)
	}
	return &Logger{w: w, opts: o, logger: name}, nil
}

// New starts a logger in format to w with a writer of its own (tests, or
// an already open writer); Close stops both.
func New(format string, w io.Writer, queue int) (*Logger, error) {
	return NewLogger(NewWriter(w, queue), Options{Format: format})
}

// Writer is the logger's writer.
func (l *Logger) Writer() *Writer { return l.w }

// Observe queues one request's entry. It runs on the loop and never
// blocks: an entry the queue has no room for is dropped and counted.
func (l *Logger) Observe(r *observe.RequestLog) {
	if r.Skip || level(r) < l.opts.Level || !l.wantsHost(r.Authority) {
		return
	}
	if s := l.opts.Sampling; s != nil && !s.keep(level(r), r.Start.Add(r.Duration)) {
		return
	}
	l.w.enqueue(l, r)
}

// Dropped is how many entries the logger's writer dropped.
func (l *Logger) Dropped() uint64 { return l.w.Dropped() }

// Written is how many entries the logger's writer wrote.
func (l *Logger) Written() uint64 { return l.w.Written() }

// Close stops the logger's writer (New's loggers own theirs).
func (l *Logger) Close() error { return l.w.Close() }

// level is an entry's level as Caddy gives it: Error for a 5xx status,
// Info otherwise.
func level(r *observe.RequestLog) Level {
	if r.Status >= 500 {
		return Error
	}
	return Info
}

func (l *Logger) wantsHost(authority string) bool {
	if len(l.opts.Hostnames) == 0 {
		return true
	}
	host := hostOnly(authority)
	for _, h := range l.opts.Hostnames {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// hostOnly is an authority without its port or IPv6 brackets.
func hostOnly(a string) string {
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i > 0 {
			return a[1:i]
		}
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 && !strings.Contains(a[:i], ":") {
		return a[:i]
	}
	return a
}

// appendEntry formats one entry in the logger's format.
func (l *Logger) appendEntry(b []byte, r *observe.RequestLog) []byte {
	switch l.opts.Format {
	case Common:
		return AppendCommon(b, r)
	case Console:
		return l.appendConsole(b, r)
	}
	return l.appendJSON(b, r)
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
