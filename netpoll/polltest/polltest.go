package polltest

import "testing"

// ForEachBackend runs f as one subtest per name in backends, named after
// the backend, in order. It fails t when backends is empty: a suite that
// ran on no backend proved nothing.
func ForEachBackend(t *testing.T, backends []string, f func(t *testing.T, backend string)) {
	t.Helper()
	if len(backends) == 0 {
		t.Fatal("no poller backend available")
	}
	for _, name := range backends {
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}
