package app

import (
	"errors"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/pollproxy/pollproxy/proxy/accesslog"
	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/proxy/metrics"
	"github.com/pollproxy/pollproxy/proxy/observe"
)

// accessLogs are a plan's access logs: one writer per output (several
// sites' logs naming one file share its writer) and each site's loggers.
type accessLogs struct {
	writers map[string]*accesslog.Writer // by accesslog.Output.Key
	opened  []*accesslog.Writer          // opened for this plan, not taken over
	sites   map[*config.Site][]*accesslog.Logger
	retired *atomic.Uint64 // entries dropped by writers closed since start
}

// openLogs opens the writers cfg's site logs name, taking over the
// running plan's writer for an output that did not change (the next
// reload reopens it).
func (in *Instance) openLogs(cfg *config.Config) (*accessLogs, error) {
	a := &accessLogs{writers: map[string]*accesslog.Writer{}, sites: map[*config.Site][]*accesslog.Logger{}, retired: &atomic.Uint64{}}
	var old map[string]*accesslog.Writer
	if in.running != nil && in.running.logs != nil {
		old, a.retired = in.running.logs.writers, in.running.logs.retired
	}
	var errs config.Errors
	for _, s := range cfg.Sites {
		for _, l := range s.Logs {
			key := l.Output.Key()
			w := a.writers[key]
			if w == nil {
				if ow := old[key]; ow != nil && reflect.DeepEqual(ow.Output(), l.Output) {
					w = ow
				} else {
					var err error
					if w, err = accesslog.OpenWriter(l.Output, accesslog.DefaultQueue); err != nil {
						errs = append(errs, &config.Error{Pos: l.Pos, Msg: "log: " + err.Error()})
						continue
					}
					a.opened = append(a.opened, w)
				}
				a.writers[key] = w
			} else if !reflect.DeepEqual(w.Output(), l.Output) {
				errs = append(errs, &config.Error{Pos: l.Pos, Msg: "log: file " + l.Output.File + " is written by another log with other file options"})
				continue
			}
			opts := l.Options()
			opts.Credentials = cfg.LogCredentials
			lg, err := accesslog.NewLogger(w, opts)
			if err != nil {
				errs = append(errs, &config.Error{Pos: l.Pos, Msg: "log: " + err.Error()})
				continue
			}
			a.sites[s] = append(a.sites[s], lg)
		}
	}
	if len(errs) > 0 {
		a.abandon()
		return nil, errs
	}
	return a, nil
}

// abandon closes the writers opened for a plan that will not run.
func (a *accessLogs) abandon() {
	if a == nil {
		return
	}
	for _, w := range a.opened {
		w.Close()
	}
}

// reopen reopens the writers taken over from the running plan: a file
// rotated away by another program is written anew after a reload.
func (a *accessLogs) reopen() error {
	var errs []error
	for _, w := range a.writers {
		if !containsWriter(a.opened, w) {
			errs = append(errs, w.Reopen())
		}
	}
	return errors.Join(errs...)
}

// retire closes the writers of old that a does not use, after grace:
// requests in flight on the old handlers may still finish into them.
func (a *accessLogs) retire(old *accessLogs, grace time.Duration) {
	if old == nil {
		return
	}
	for key, w := range old.writers {
		if a.writers[key] == w {
			continue
		}
		time.AfterFunc(grace, func() {
			w.Close()
			a.retired.Add(w.Dropped())
		})
	}
}

// closeAll closes every writer.
func (a *accessLogs) closeAll() {
	if a == nil {
		return
	}
	for _, w := range a.writers {
		w.Close()
	}
}

// dropped is every entry dropped since start, for the metrics.
func (a *accessLogs) dropped() uint64 {
	n := a.retired.Load()
	for _, w := range a.writers {
		n += w.Dropped()
	}
	return n
}

func containsWriter(ws []*accesslog.Writer, w *accesslog.Writer) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// siteObserver feeds a site's requests on one loop to the metrics (when
// kept) and the site's access loggers.
type siteObserver struct {
	m    *metrics.LoopObserver
	logs []*accesslog.Logger
}

func (o siteObserver) Observe(r *observe.RequestLog) {
	if o.m != nil {
		o.m.Observe(r)
	}
	for _, l := range o.logs {
		l.Observe(r)
	}
}

// UpstreamFailed and TunnelOpened are the metrics' alone.
func (o siteObserver) UpstreamFailed(upstream string, r observe.Reason) {
	if o.m != nil {
		o.m.UpstreamFailed(upstream, r)
	}
}

func (o siteObserver) TunnelOpened(r *observe.RequestLog) {
	if o.m != nil {
		o.m.TunnelOpened(r)
	}
}
