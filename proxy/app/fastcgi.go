package app

import (
	"context"
	"log/slog"
	"sync"
)

// stderrEntry is one request's FastCGI stderr, for the log.
type stderrEntry struct {
	log      *slog.Logger
	upstream string
	status   int
	text     string
}

// stderrQueue carries FastCGI stderr from the loops to the one goroutine
// that logs it: a loop only copies the text and hands it over, never
// waits for a log write. When the queue is full, an entry is dropped.
var (
	stderrQueue chan stderrEntry
	stderrOnce  sync.Once
)

// fastcgiStderr is capture_stderr's log, as Caddy's: WARN, or ERROR when
// the response's status is 4xx or 5xx.
func fastcgiStderr(log *slog.Logger) func(upstream string, status int, text []byte) {
	stderrOnce.Do(func() {
		stderrQueue = make(chan stderrEntry, 256)
		go func() {
			for e := range stderrQueue {
				level := slog.LevelWarn
				if e.status >= 400 {
					level = slog.LevelError
				}
				e.log.Log(context.Background(), level, "stderr", "upstream", e.upstream, "status", e.status, "body", e.text)
			}
		}()
	})
	return func(upstream string, status int, text []byte) {
		select {
		case stderrQueue <- stderrEntry{log: log, upstream: upstream, status: status, text: string(text)}:
		default:
		}
	}
}
