package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/h2"
	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/server"
)

// Source is what the collector reads at scrape time. A reload replaces it
// whole with SetSource.
type Source struct {
	// Pollers is the process's backend set, "epoll" or "epoll,poll".
	Pollers string
	Group   *netpoll.Group
	// Servers by listen address.
	Servers []NamedServer
	// Upstreams are every configured upstream, each once.
	Upstreams []observe.Upstream
	// AccessLogDropped, when set, counts access log records dropped
	// because the writer fell behind.
	AccessLogDropped func() uint64
	// WindowBudget, when set, is the h2 receive-window budget the
	// servers' connections share (h2.DefaultWindowBudget).
	WindowBudget *h2.WindowBudget
}

// NamedServer is one listener's server.
type NamedServer struct {
	Listen string
	Server *server.Server
}

// Metrics is pollproxy's registry.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	reused   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytesOut *prometheus.CounterVec
	tunnels  *prometheus.GaugeVec
	tunBytes *prometheus.CounterVec
	failures *prometheus.CounterVec
	hosts    *prometheus.CounterVec
	grpc     *prometheus.CounterVec
	source   atomic.Pointer[Source]
	ab       *ab.Recorders
}

// Status classes, the values of the code label: index status/100, and
// "reset" for a stream reset after its head was sent.
var classes = [...]string{"reset", "1xx", "2xx", "3xx", "4xx", "5xx"}

// DurationBuckets are the latency histogram's bounds, in seconds.
var DurationBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns a registry with pollproxy's metrics and the Go runtime and
// process collectors (process_cpu_seconds_total gives CPU per request).
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), ab: ab.NewRecorders()}
	loopLabels := []string{"poller", "loop", "upstream"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_requests_total",
		Help: "Finished requests by status class (code: 1xx..5xx, reset), upstream and the loop's poller backend.",
	}, []string{"poller", "loop", "upstream", "code"})
	m.reused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_upstream_reused_requests_total",
		Help: "Requests sent over a kept-alive upstream connection; divide by pollproxy_requests_total for the reuse ratio per poller.",
	}, loopLabels)
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pollproxy_request_duration_seconds",
		Help:    "Time from a request's head to the end of its response.",
		Buckets: DurationBuckets,
	}, loopLabels)
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_response_body_bytes_total",
		Help: "Response body bytes handed to clients.",
	}, loopLabels)
	m.tunnels = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pollproxy_tunnels_active",
		Help: "Tunnels (WebSockets over HTTP/1.1 Upgrade or RFC 8441) open now, under the poller their request started on.",
	}, loopLabels)
	m.tunBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_tunnel_bytes_total",
		Help: "Bytes carried by tunnels that ended, by direction (in: client to origin, out: origin to client).",
	}, []string{"poller", "loop", "upstream", "direction"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_upstream_failures_total",
		Help: "Upstream failures by reason: connect, connect_timeout, header_timeout, write_timeout, bad_response, bad_body, broken, broken_mid_response, bad_handshake, unhealthy.",
	}, []string{"poller", "loop", "upstream", "reason"})
	m.hosts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_host_requests_total",
		Help: "Finished requests by the host they named, as Caddy's per_host labels them, and status class, with metrics { per_host }.",
	}, []string{"poller", "loop", "host", "code"})
	m.grpc = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pollproxy_grpc_responses_total",
		Help: "Finished responses that carried a grpc-status (in trailers or a trailers-only head), by its code (grpc_code: OK, Canceled, ... Unauthenticated; a value outside gRPC's codes counts as Unknown).",
	}, []string{"poller", "loop", "upstream", "grpc_code"})
	m.reg.MustRegister(m.tunnels, m.tunBytes, m.failures, m.hosts, m.grpc)
	m.reg.MustRegister(m.requests, m.reused, m.duration, m.bytesOut, &collector{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildVersion = version
	return m
}

var buildVersion string

// Registry is the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// LatencyRecorders are the per-loop latency histograms the observers
// fill, for the A/B sampler.
func (m *Metrics) LatencyRecorders() *ab.Recorders { return m.ab }

// SetSource replaces what the collector reads.
func (m *Metrics) SetSource(s Source) { m.source.Store(&s) }

// SetPollers changes the process's backend set after a poller switch,
// keeping the rest of the source. Calls must not race with SetSource.
func (m *Metrics) SetPollers(set string) {
	if old := m.source.Load(); old != nil {
		s := *old
		s.Pollers = set
		m.source.Store(&s)
	}
}

// LoopObserver counts the requests of one loop. Build it on (or for) the
// loop whose handler uses it; Observe runs on that loop.
type LoopObserver struct {
	ups   []upstreamChildren
	other map[string]*upstreamChildren // upstreams not known at build time
	m     *Metrics
	loop  string
	bknd  string
	l     *netpoll.Loop
	gen   uint64        // the loop's switch count when bknd was read
	hist  *ab.Histogram // this loop's, shared by its sites' observers
	// hosts are the per-host series (CountHosts): the site's names, the
	// names requests gave where every name counts on its own, and _other
	// for the rest.
	hosts    map[string]*hostChildren
	catchAll bool // every name counts on its own (observe_catchall_hosts)
}

// OtherHost is the host label of requests for a name no site has.
const OtherHost = "_other"

type hostChildren struct {
	name  string
	codes [len(classes)]prometheus.Counter
}

type upstreamChildren struct {
	name     string
	codes    [len(classes)]prometheus.Counter
	reused   prometheus.Counter
	duration prometheus.Observer
	bytes    prometheus.Counter
	// failures are resolved at a reason's first failure: most upstreams
	// never see most reasons, and a series that stays 0 is noise.
	failures [observe.NumReasons]prometheus.Counter
	// grpc are resolved at a code's first response, likewise: most
	// upstreams speak no gRPC at all.
	grpc [len(observe.GRPCCodes)]prometheus.Counter
}

// ForLoop returns an observer for loop l that knows ups (requests that
// name another upstream, or none, are still counted).
func (m *Metrics) ForLoop(l *netpoll.Loop, ups []observe.Upstream) *LoopObserver {
	o := &LoopObserver{m: m, loop: strconv.Itoa(l.ID()), l: l, gen: l.SwitchCount(), hist: m.ab.For(l.ID())}
	o.bknd = l.Backend()
	for _, u := range ups {
		o.ups = append(o.ups, o.children(u.Stats().Name))
	}
	return o
}

func (o *LoopObserver) children(name string) upstreamChildren {
	c := upstreamChildren{name: name}
	for i, class := range classes {
		c.codes[i] = o.m.requests.WithLabelValues(o.bknd, o.loop, name, class)
	}
	c.reused = o.m.reused.WithLabelValues(o.bknd, o.loop, name)
	c.duration = o.m.duration.WithLabelValues(o.bknd, o.loop, name)
	c.bytes = o.m.bytesOut.WithLabelValues(o.bknd, o.loop, name)
	return c
}

// CountHosts counts the observer's requests by host too (Caddy's
// metrics { per_host }), labelled as Caddy labels them: by the host the
// request gave, in lower case and with its port if it had one. A request
// over TLS counts under its own host, and so does any request with
// catchAll (observe_catchall_hosts); otherwise only a host that is one of
// names (a site's own names, not wildcards, which a host with a port never
// is) counts on its own, and any other as OtherHost, so that a client
// inventing names on plain HTTP cannot grow the series.
func (o *LoopObserver) CountHosts(names []string, catchAll bool) {
	o.hosts, o.catchAll = map[string]*hostChildren{}, catchAll
	for _, n := range append(names, OtherHost) {
		n = strings.ToLower(n)
		o.hosts[n] = o.hostSeries(n)
	}
}

func (o *LoopObserver) hostSeries(name string) *hostChildren {
	h := &hostChildren{name: name}
	for i, class := range classes {
		h.codes[i] = o.m.hosts.WithLabelValues(o.bknd, o.loop, name, class)
	}
	return h
}

// hostSeriesFor is the series a request for authority counts under.
// Only a name met for the first time allocates.
func (o *LoopObserver) hostSeriesFor(authority string, tls bool) *hostChildren {
	h := lower(authority)
	if c := o.hosts[h]; c != nil {
		return c
	}
	if !tls && !o.catchAll {
		return o.hosts[OtherHost]
	}
	c := o.hostSeries(h)
	o.hosts[h] = c
	return c
}

// lower is s in lower case; s already is, mostly, and is then returned
// as it is.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// relabel moves the observer's series to the loop's backend after a
// poller switch: requests finished from now on count under the new label.
func (o *LoopObserver) relabel(gen uint64) {
	o.gen, o.bknd = gen, o.l.Backend()
	for _, h := range o.hosts {
		*h = *o.hostSeries(h.name)
	}
	for i := range o.ups {
		o.ups[i] = o.children(o.ups[i].name)
	}
	for name, c := range o.other {
		*c = o.children(name)
	}
}

// upstream is the series of the named upstream, under the loop's
// current backend.
func (o *LoopObserver) upstream(name string) *upstreamChildren {
	if gen := o.l.SwitchCount(); gen != o.gen {
		o.relabel(gen)
	}
	for i := range o.ups {
		if o.ups[i].name == name {
			return &o.ups[i]
		}
	}
	c := o.other[name]
	if c == nil {
		// Only requests that reached no upstream ("") get here in
		// practice: once per loop.
		if o.other == nil {
			o.other = map[string]*upstreamChildren{}
		}
		cc := o.children(name)
		c = &cc
		o.other[name] = c
	}
	return c
}

// Observe counts one finished request; it never blocks.
func (o *LoopObserver) Observe(r *observe.RequestLog) {
	c := o.upstream(r.Upstream)
	class := r.Status / 100
	if class < 0 || class >= len(classes) {
		class = 0
	}
	c.codes[class].Inc()
	if o.hosts != nil {
		o.hostSeriesFor(r.Authority, r.TLS != nil).codes[class].Inc()
	}
	if r.Reused {
		c.reused.Inc()
	}
	if r.GRPC && int(r.GRPCStatus) < len(c.grpc) {
		g := c.grpc[r.GRPCStatus]
		if g == nil {
			g = o.m.grpc.WithLabelValues(o.bknd, o.loop, c.name, observe.GRPCCodes[r.GRPCStatus])
			c.grpc[r.GRPCStatus] = g
		}
		g.Inc()
	}
	if r.Tunnel {
		o.tunnelEnded(r)
		return // a tunnel's life is no request latency
	}
	c.duration.Observe(r.Duration.Seconds())
	o.hist.Record(r.Duration)
	if r.BytesOut > 0 {
		c.bytes.Add(float64(r.BytesOut))
	}
}

// UpstreamFailed implements observe.FailureObserver: one more failure of
// the upstream, labelled with its reason.
func (o *LoopObserver) UpstreamFailed(upstream string, r observe.Reason) {
	if !r.Failure() {
		return
	}
	c := o.upstream(upstream)
	f := c.failures[r]
	if f == nil {
		f = o.m.failures.WithLabelValues(o.bknd, o.loop, upstream, r.String())
		c.failures[r] = f
	}
	f.Inc()
}

// TunnelOpened implements observe.TunnelObserver. Tunnels are rare next
// to requests, so their series are looked up by label here.
func (o *LoopObserver) TunnelOpened(r *observe.RequestLog) {
	o.m.tunnels.WithLabelValues(o.tunnelPoller(r), o.loop, r.Upstream).Inc()
}

// tunnelPoller is the poller label of a tunnel's gauge: the backend its
// request started on, fixed for its life, so that a tunnel that outlives
// a live poller switch is taken off the series it was added to (the
// loop's current backend would leave +1 under the old label and -1
// under the new one).
func (o *LoopObserver) tunnelPoller(r *observe.RequestLog) string {
	if r.Poller != "" {
		return r.Poller
	}
	return o.bknd
}

func (o *LoopObserver) tunnelEnded(r *observe.RequestLog) {
	o.m.tunnels.WithLabelValues(o.tunnelPoller(r), o.loop, r.Upstream).Dec()
	o.m.tunBytes.WithLabelValues(o.bknd, o.loop, r.Upstream, "in").Add(float64(r.BytesIn))
	o.m.tunBytes.WithLabelValues(o.bknd, o.loop, r.Upstream, "out").Add(float64(r.BytesOut))
}

var (
	descWaits       = loopDesc("pollproxy_poller_waits_total", "Poller waits (epoll_wait, kevent, poll calls).")
	descEvents      = loopDesc("pollproxy_poller_events_total", "Readiness events delivered.")
	descWakeups     = loopDesc("pollproxy_poller_wakeups_total", "Waits ended by a cross-loop wake-up.")
	descAdds        = loopDesc("pollproxy_poller_adds_total", "Descriptor registrations (epoll_ctl ADD, EV_ADD, pollfd added).")
	descMods        = loopDesc("pollproxy_poller_mods_total", "Interest changes that reached the poller.")
	descDels        = loopDesc("pollproxy_poller_dels_total", "Descriptor removals.")
	descDescriptors = loopDesc("pollproxy_loop_descriptors", "Descriptors registered with the loop now: client and upstream connections, listeners.")
	descTimers      = loopDesc("pollproxy_loop_timers", "Timers pending on the loop now.")
	descPanics      = loopDesc("pollproxy_panics_total", "Panics the loop contained: the connection whose work panicked was abandoned (its streams reset, its origin connections closed) and the loop went on.")
	descLoopCPU     = loopDesc("pollproxy_loop_cpu_seconds_total", "CPU time of the loop's thread (user and system); divided by the loop's requests, CPU per request per poller.")

	srvLabels      = []string{"poller", "listen"}
	descActive     = prometheus.NewDesc("pollproxy_connections_active", "Client connections open now.", srvLabels, nil)
	descAccepted   = prometheus.NewDesc("pollproxy_connections_accepted_total", "Client connections accepted.", srvLabels, nil)
	descHandshakeE = prometheus.NewDesc("pollproxy_tls_handshake_errors_total", "TLS handshakes that failed.", srvLabels, nil)
	descRejected   = prometheus.NewDesc("pollproxy_connections_rejected_total", "Connections refused (handshake queue full, registration failed).", srvLabels, nil)

	upLabels       = []string{"poller", "upstream"}
	descOpen       = prometheus.NewDesc("pollproxy_upstream_open_connections", "Upstream connections open now, on every loop.", upLabels, nil)
	descReuseRatio = prometheus.NewDesc("pollproxy_upstream_reuse_ratio", "Share of an upstream's requests sent over a kept-alive connection, since start.", upLabels, nil)
	descUpRequests = prometheus.NewDesc("pollproxy_upstream_requests_total", "Requests sent to the upstream.", upLabels, nil)
	descConnects   = prometheus.NewDesc("pollproxy_upstream_connects_total", "New upstream connections opened.", upLabels, nil)
	descRetries    = prometheus.NewDesc("pollproxy_upstream_retries_total", "Requests retried after a reused connection failed.", upLabels, nil)
	descBroken     = prometheus.NewDesc("pollproxy_upstream_broken_responses_total", "Responses the upstream broke off after their head went to the client (the client's stream was reset).", upLabels, nil)

	descBudget      = prometheus.NewDesc("pollproxy_h2_window_budget_bytes", "Receive-window credit h2 connections may hold beyond their default windows, all together.", []string{"poller"}, nil)
	descBudgetUsed  = prometheus.NewDesc("pollproxy_h2_window_budget_used_bytes", "Of the window budget, the credit granted to connections now.", []string{"poller"}, nil)
	descBudgetShort = prometheus.NewDesc("pollproxy_h2_window_budget_shortfalls_total", "Window growths the budget granted in part or not at all: uploads held to smaller windows.", []string{"poller"}, nil)
	descBudgetGone  = prometheus.NewDesc("pollproxy_h2_window_budget_goaways_total", "Idle h2 connections that went away (GOAWAY) to give their grant back to refused ones.", []string{"poller"}, nil)

	descDropped = prometheus.NewDesc("pollproxy_accesslog_dropped_total", "Access log records dropped because the writer fell behind.", []string{"poller"}, nil)
	descInfo    = prometheus.NewDesc("pollproxy_build_info", "Always 1; poller is the process's backend set (join with process_cpu_seconds_total on instance).", []string{"poller", "version"}, nil)
)

func loopDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"poller", "loop"}, nil)
}

type collector struct{ m *Metrics }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWaits, descEvents, descWakeups, descAdds, descMods, descDels,
		descDescriptors, descTimers, descPanics, descLoopCPU, descActive, descAccepted, descHandshakeE, descRejected,
		descOpen, descReuseRatio, descUpRequests, descConnects, descRetries, descBroken, descDropped, descInfo,
		descBudget, descBudgetUsed, descBudgetShort, descBudgetGone} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.source.Load()
	if s == nil {
		return
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descInfo, 1, s.Pollers, buildVersion)
	if s.Group != nil {
		for _, st := range s.Group.Stats() {
			l := []string{st.Backend, strconv.Itoa(st.Loop)}
			counter(descWaits, st.Waits, l...)
			counter(descEvents, st.Events, l...)
			counter(descWakeups, st.Wakeups, l...)
			counter(descAdds, st.Adds, l...)
			counter(descMods, st.Mods, l...)
			counter(descDels, st.Dels, l...)
			gauge(descDescriptors, float64(st.Descriptors), l...)
			gauge(descTimers, float64(st.Timers), l...)
			counter(descPanics, st.Panics, l...)
			if netpoll.ThreadCPUSupported {
				ch <- prometheus.MustNewConstMetric(descLoopCPU, prometheus.CounterValue, st.CPU.Seconds(), l...)
			}
		}
	}
	for _, ns := range s.Servers {
		st := ns.Server.Stats()
		gauge(descActive, float64(st.Active), s.Pollers, ns.Listen)
		counter(descAccepted, st.Accepted, s.Pollers, ns.Listen)
		counter(descHandshakeE, st.HandshakeErrors, s.Pollers, ns.Listen)
		counter(descRejected, st.Rejected, s.Pollers, ns.Listen)
	}
	for _, up := range s.Upstreams {
		u := up.Stats()
		gauge(descOpen, float64(u.OpenConns), s.Pollers, u.Name)
		gauge(descReuseRatio, u.ReuseRatio(), s.Pollers, u.Name)
		counter(descUpRequests, u.Requests, s.Pollers, u.Name)
		counter(descConnects, u.Connects, s.Pollers, u.Name)
		counter(descRetries, u.Retries, s.Pollers, u.Name)
		counter(descBroken, u.Broken, s.Pollers, u.Name)
	}
	if s.AccessLogDropped != nil {
		counter(descDropped, s.AccessLogDropped(), s.Pollers)
	}
	if b := s.WindowBudget; b != nil {
		gauge(descBudget, float64(b.Limit()), s.Pollers)
		gauge(descBudgetUsed, float64(b.Used()), s.Pollers)
		counter(descBudgetShort, b.Shortfalls(), s.Pollers)
		counter(descBudgetGone, b.GoAways(), s.Pollers)
	}
}
