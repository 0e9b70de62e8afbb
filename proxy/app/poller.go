package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/pollproxy/pollproxy/netpoll"
)

// A poller switch moves the running loops to other backends without
// closing a connection (netpoll.Group.Switch). It comes from a reload
// whose poller line changed, or from POST /poller on the admin listener;
// the admin listener serves on its own goroutines, so everything a switch
// changes here (the backend set in metric labels) is under pollerMu.

// maxPollerBody bounds a POST /poller body: a few backend names.
const maxPollerBody = 1 << 10

// ParsePollers checks a backend list as the poller option does: known
// names, "auto" only alone. Empty means "auto".
func ParsePollers(names []string) error {
	for _, n := range names {
		if err := netpoll.ValidName(n); errors.Is(err, netpoll.ErrUnavailable) {
			return fmt.Errorf("poller: %w", err) // built in but refused here: say why
		} else if err != nil {
			return fmt.Errorf("poller: unknown backend %q (want auto or one of %s)", n, strings.Join(netpoll.Available(), ", "))
		}
		if n == netpoll.Auto && len(names) > 1 {
			return fmt.Errorf("poller: an A/B split names its backends (auto is only allowed alone)")
		}
	}
	return nil
}

// SwitchPollers moves the loops to backends, cycled across the loops as
// the poller option does, between two iterations of each loop and without
// closing a connection. It returns one event per loop. Safe to call
// concurrently with the instance's other methods.
func (in *Instance) SwitchPollers(backends []string) ([]netpoll.SwitchEvent, error) {
	if err := ParsePollers(backends); err != nil {
		return nil, err
	}
	in.pollerMu.Lock()
	defer in.pollerMu.Unlock()
	evs, err := in.group.Switch(backends)
	in.pollerSet = backendSet(in.group.Backends())
	if in.metrics != nil {
		in.metrics.SetPollers(in.pollerSet)
	}
	if in.ab != nil && err == nil {
		// The A/B history records the switch; groups follow the new
		// split from the next interval.
		in.ab.SetPollers(backends)
	}
	for _, ev := range evs {
		if ev.Moved() {
			in.log.Info("poller switched", "loop", ev.Loop, "from", ev.From, "to", ev.To,
				"descriptors", ev.Descriptors, "took", ev.Took)
		}
	}
	if err != nil {
		in.log.Error("poller switch failed", "error", err)
	}
	return evs, err
}

// backendSet is the process's backends, each once in loop order:
// "epoll" or "epoll,poll", the poller label of process-wide series.
func backendSet(backends []string) string {
	var names []string
	seen := map[string]bool{}
	for _, b := range backends {
		if !seen[b] {
			seen[b] = true
			names = append(names, b)
		}
	}
	return strings.Join(names, ",")
}

// reloadPollers applies a poller line that changed since the running
// configuration's; an unchanged line leaves the loops where a command-line
// override or POST /poller put them.
func (in *Instance) reloadPollers(old, now []string) {
	if reflect.DeepEqual(old, now) {
		return
	}
	in.SwitchPollers(now) // logs its own outcome
}

// servePoller is the admin listener's /poller: GET shows each loop's
// backend; POST switches them, with a JSON body naming the backends,
// ["epoll","poll"] or "epoll poll". The admin guard has already required
// Content-Type application/json, which is what keeps web pages out.
func (in *Instance) servePoller(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		for i, b := range in.group.Backends() {
			fmt.Fprintf(w, "loop %d %s\n", i, b)
		}
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, `use POST with a JSON body like ["epoll","poll"]`, http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPollerBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("poller: body over %d bytes", maxPollerBody), http.StatusBadRequest)
		return
	}
	names, err := pollerNames(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(names) == 0 {
		http.Error(w, fmt.Sprintf("poller: want a backend (auto, %s) or several for an A/B split across loops", strings.Join(netpoll.Available(), ", ")), http.StatusBadRequest)
		return
	}
	if err := ParsePollers(names); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	evs, err := in.SwitchPollers(names)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, ev := range evs {
		if ev.Moved() {
			fmt.Fprintf(w, "loop %d %s (was %s; %d descriptors moved in %v)\n", ev.Loop, ev.To, ev.From, ev.Descriptors, ev.Took)
		} else {
			fmt.Fprintf(w, "loop %d %s (unchanged)\n", ev.Loop, ev.To)
		}
	}
}

// pollerNames reads a POST /poller body: a JSON array of backend names,
// or a JSON string of them separated by spaces (the Caddyfile's poller
// line, pasted whole or without its name).
func pollerNames(body []byte) ([]string, error) {
	var list []string
	if err := json.Unmarshal(body, &list); err == nil {
		return list, nil
	}
	var line string
	if err := json.Unmarshal(body, &line); err != nil {
		return nil, errors.New(`poller: want a JSON body like ["epoll","poll"] or "epoll poll"`)
	}
	names := strings.Fields(line)
	if len(names) > 0 && names[0] == "poller" {
		names = names[1:]
	}
	return names, nil
}
