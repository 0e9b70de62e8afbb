package main

import (
	"strings"
	"testing"
)

func TestParseFrom(t *testing.T) {
	for _, c := range []struct {
		from       string
		name, bind string
		port       int
		err        string
	}{
		{from: "localhost:8443", name: "localhost", bind: "localhost", port: 8443},
		{from: "app.localhost:9443", name: "app.localhost", bind: "localhost", port: 9443},
		{from: "https://App.Localhost.", name: "app.localhost", bind: "localhost", port: 443},
		{from: "127.0.0.1:0", name: "127.0.0.1", bind: "127.0.0.1", port: 0},
		{from: "[::1]:8443", name: "::1", bind: "::1", port: 8443},
		{from: "example.com", name: "example.com", bind: "", port: 443},
		{from: ":8443", err: "plain HTTP"},
		{from: "localhost:80", err: "plain HTTP"},
		{from: "http://localhost:8443", err: "only https://"},
		{from: "localhost:8443/app", err: "paths"},
		{from: "localhost:x", err: "bad port"},
	} {
		a, err := parseFrom(c.from)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.from, err, c.err)
			}
			continue
		}
		if err != nil || a.name != c.name || a.bind != c.bind || a.port != c.port {
			t.Errorf("%s: %+v %v, want name %q bind %q port %d", c.from, a, err, c.name, c.bind, c.port)
		}
	}
}
