package sniff

import (
	"testing"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// TestNeeded: Go's rule for which heads get a sniffed type.
func TestNeeded(t *testing.T) {
	f := func(kv ...string) []stream.Field {
		var fs []stream.Field
		for i := 0; i+1 < len(kv); i += 2 {
			fs = append(fs, stream.Field{Name: kv[i], Value: kv[i+1]})
		}
		return fs
	}
	for _, c := range []struct {
		fields []stream.Field
		want   bool
	}{
		{nil, true},
		{f("server", "origin", "content-length", "10"), true},
		{f("content-type", "text/css"), false},
		{f("content-type", ""), false}, // present, even empty
		{f("content-encoding", "br"), false},
		{f("content-encoding", ""), true},
		{f("content-encoding", "", "content-encoding", "gzip"), true}, // Go reads the first value
		{f("content-encoding", "", "content-type", "text/plain"), false},
	} {
		if got := Needed(c.fields); got != c.want {
			t.Errorf("Needed(%v) = %v, want %v", c.fields, got, c.want)
		}
	}
	if got := ContentType([]byte("<!DOCTYPE html><p>")); got != "text/html; charset=utf-8" {
		t.Errorf("ContentType of a page: %q", got)
	}
}
