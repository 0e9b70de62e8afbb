// Package metrics exports pollproxy's Prometheus metrics.
//
// Request metrics and upstream failures (by reason) are counted on the
// loops by an Observer made for one loop, whose label children (poller,
// loop, upstream, status class) are resolved when the loop's handler is
// built, so a finished request costs a few atomic adds and no map lookup. Everything else (poller counters,
// server connections, upstream pools, access log drops) is read from the
// running objects by a Collector at scrape time.
//
// Every series carries a poller label. Per-loop series carry the loop's
// own backend and a loop label (after a live poller switch, the new one:
// an observer notices the loop's switch count and moves to new children),
// so an A/B split of loops inside one process is one query:
//
//	sum by (poller) (rate(pollproxy_requests_total[1m]))
//
// Process-wide series (server connections, upstream pools) carry the
// process's backend set, e.g. poller="epoll" or poller="epoll,poll" when
// the loops are split, so two processes run side by side (a canary) are
// told apart the same way.
//
// metrics.go holds it all: Metrics and its Collector, the per-loop
// LoopObserver, and the Source and NamedServer it reads at scrape time.
package metrics
