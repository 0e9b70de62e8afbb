package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/metrics/atrest"
)

// scraper reads the admin listener's /metrics, a new connection each
// time so that none of pollproxy's descriptors is the scraper's between
// two reads. The admin listener checks Host: it is the listener's own
// address.
type scraper struct {
	admin  string // 127.0.0.1:PORT
	client *http.Client
}

func newScraper(admin string) *scraper {
	return &scraper{admin: admin, client: &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   5 * time.Second,
	}}
}

// text is the whole exposition.
func (s *scraper) text() (string, error) {
	resp, err := s.client.Get("http://" + s.admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), err
}

func (s *scraper) gauges() (atrest.Gauges, error) {
	t, err := s.text()
	if err != nil {
		return atrest.Gauges{}, err
	}
	return atrest.Parse(strings.NewReader(t))
}

// rssKiB is VmRSS of pid.
func rssKiB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, isRSS := strings.CutPrefix(line, "VmRSS:"); isRSS {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// descriptors is how many sockets pid holds: connections and listeners,
// what a leak would leave open. Other descriptors come and go for reasons
// of their own (an access log's file opens at its first entry, the Go
// runtime reads the cgroup's CPU limit, a loop switched to poll holds no
// poller descriptor and one on epoll or io_uring one) and are not counted.
func descriptors(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	d, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range d {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n, nil
}
