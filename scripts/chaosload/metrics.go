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

// descriptors is how many descriptors pid holds.
func descriptors(pid int) (int, error) {
	d, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(d), err
}
