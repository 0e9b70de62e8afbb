package oracle

import (
	"sort"
	"testing"
)

// compareAnswers compares pollproxy's answers with Caddy's, request by
// request (in key order) and field by field, leaving out the fields skip
// says differ on purpose for that answer.
func compareAnswers(t *testing.T, caddy, ours map[string]map[string]string, skip func(field string, want, got map[string]string) bool) {
	t.Helper()
	for _, k := range sortedKeys(caddy) {
		want, got := caddy[k], ours[k]
		for _, f := range fieldsOf(want, got) {
			if !skip(f, want, got) && want[f] != got[f] {
				t.Errorf("%s: %s:\nCaddy     %q\npollproxy %q", k, f, want[f], got[f])
			}
		}
	}
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fieldsOf are the fields either answer has, in order.
func fieldsOf(a, b map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
