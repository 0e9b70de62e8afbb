package atrest

import (
	"strings"
	"testing"
)

const exposition = `# HELP pollproxy_build_info the build
# TYPE pollproxy_build_info gauge
pollproxy_build_info{version="dev"} 1
# TYPE pollproxy_connections_active gauge
pollproxy_connections_active{poller="epoll",loop="0"} 0
pollproxy_connections_active{poller="poll",loop="1"} 2
# TYPE pollproxy_loop_descriptors gauge
pollproxy_loop_descriptors{poller="epoll",loop="0"} 3
pollproxy_loop_descriptors{poller="poll",loop="1"} 4
# TYPE pollproxy_requests_total counter
pollproxy_requests_total{code="200"} 77
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestParse(t *testing.T) {
	g, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Value) != 5 || g.Sum("pollproxy_loop_descriptors") != 7 || g.Sum("pollproxy_connections_active") != 2 {
		t.Errorf("gauges %v", g.Value)
	}
	if _, err := Parse(strings.NewReader("# TYPE pollproxy_x gauge\npollproxy_x one\n")); err == nil {
		t.Error("a value that is no number was read")
	}
}

// TestNotAtRest: a counting gauge off 0 is not at rest; a summed one is
// compared with the start whatever its labels now; build_info never.
func TestNotAtRest(t *testing.T) {
	start, _ := Parse(strings.NewReader(exposition))
	rest := strings.NewReplacer(`loop="1"} 2`, `loop="1"} 0`, `poller="epoll",loop="0"} 3`, `poller="poll",loop="0"} 3`).Replace(exposition)
	g, _ := Parse(strings.NewReader(rest))
	if bad := g.NotAtRest(start); len(bad) != 0 {
		t.Errorf("at rest, relabelled: %v", bad)
	}
	if bad := start.NotAtRest(start); len(bad) != 1 || bad[0] != `pollproxy_connections_active{poller="poll",loop="1"} 2` {
		t.Errorf("a connection open: %v", bad)
	}
	more := strings.Replace(rest, `loop="1"} 4`, `loop="1"} 5`, 1)
	g, _ = Parse(strings.NewReader(more))
	if bad := g.NotAtRest(start); len(bad) != 1 || !strings.HasPrefix(bad[0], "pollproxy_loop_descriptors summed 8, 7") {
		t.Errorf("a descriptor more: %v", bad)
	}
}

// TestAboveRest: fewer loop timers than at the start is at rest, more is
// not; a counting gauge off 0 never is.
func TestAboveRest(t *testing.T) {
	start, _ := Parse(strings.NewReader(exposition))
	fewer, _ := Parse(strings.NewReader(strings.NewReplacer(`loop="1"} 2`, `loop="1"} 0`, `loop="1"} 4`, `loop="1"} 1`).Replace(exposition)))
	if bad := fewer.AboveRest(start); len(bad) != 0 {
		t.Errorf("fewer descriptors: %v", bad)
	}
	if bad := fewer.NotAtRest(start); len(bad) != 1 {
		t.Errorf("NotAtRest of fewer descriptors: %v", bad)
	}
	if bad := start.AboveRest(fewer); len(bad) != 2 {
		t.Errorf("more descriptors and a connection open: %v", bad)
	}
}
