package certs

import (
	"context"
	"log/slog"
	"sort"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore is a zapcore.Core that writes to a slog.Logger, so that
// certmagic's logs (zap) land in pollproxy's (log/slog). Fields become
// attributes; a named logger's name becomes the "logger" attribute.
type slogCore struct {
	logger *slog.Logger
	min    slog.Level
	attrs  []slog.Attr
}

func newZapLogger(l *slog.Logger, min slog.Level) *zap.Logger {
	return zap.New(&slogCore{logger: l, min: min})
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	sl := slogLevel(l)
	return sl >= c.min && c.logger.Enabled(context.Background(), sl)
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	n := *c
	n.attrs = append(append([]slog.Attr(nil), c.attrs...), fieldAttrs(fields)...)
	return &n
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	attrs := append(append([]slog.Attr(nil), c.attrs...), fieldAttrs(fields)...)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	c.logger.LogAttrs(context.Background(), slogLevel(e.Level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func fieldAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	return attrs
}
