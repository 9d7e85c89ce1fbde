package kernel

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"atelier/host/metrics"
	"atelier/host/quota"
	"atelier/host/store"
)

// callMetrics are the kernel's gadget call metrics since it started: per gadget, the calls
// that reached its actor (every path: connect() stubs, Code Mode bindings, schedules and
// gadget-to-gadget bindings all run through actor.run), the failed ones, their latency up to
// the released reply, its loaded instances and how many it started. The call path touches only its
// gadget's atomics; the map is locked when an actor loads and when the metrics are read.
type callMetrics struct {
	start time.Time

	mu      sync.Mutex
	gadgets map[store.GadgetID]*gadgetStats
}

func newCallMetrics() *callMetrics {
	return &callMetrics{start: time.Now(), gadgets: map[store.GadgetID]*gadgetStats{}}
}

// gadgetStats are one gadget's metrics.
type gadgetStats struct {
	ws      store.WorkspaceID
	name    atomic.Pointer[string] // the gadget's name when its actor last loaded (or it was renamed)
	calls   atomic.Uint64
	errors  atomic.Uint64
	live    atomic.Int64         // loaded actors: 0 or 1 (briefly 2 while one replaces another)
	started atomic.Uint64        // instances loaded since the server started
	latency prometheus.Histogram // seconds, in metrics.Buckets; exposed by kernelCollector with the gadget's labels
}

// newGadgetStats returns the metrics of a gadget of workspace ws.
func newGadgetStats(ws store.WorkspaceID) *gadgetStats {
	return &gadgetStats{ws: ws, latency: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "atelier_gadget_call_duration_seconds", Help: "Latency of the gadget's calls.", Buckets: metrics.Buckets})}
}

// latencySnapshot returns the latency histogram's state now.
func (s *gadgetStats) latencySnapshot() *dto.Histogram {
	var m dto.Metric
	_ = s.latency.Write(&m) // a plain histogram's Write cannot fail
	return m.GetHistogram()
}

// record counts one call that started at start.
func (s *gadgetStats) record(start time.Time, err error) {
	s.latency.Observe(time.Since(start).Seconds())
	s.calls.Add(1)
	if err != nil {
		s.errors.Add(1)
	}
}

// gadget returns the metrics of gadget id of workspace ws, named name, creating them.
func (m *callMetrics) gadget(ws store.WorkspaceID, id store.GadgetID, name string) *gadgetStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.gadgets[id]
	if s == nil {
		s = newGadgetStats(ws)
		m.gadgets[id] = s
	}
	s.name.Store(&name)
	return s
}

// lookup returns the metrics of gadget id, or nil when it has made no call since the start.
func (m *callMetrics) lookup(id store.GadgetID) *gadgetStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gadgets[id]
}

// renamed updates the name the metrics of gadget id are exposed under.
func (m *callMetrics) renamed(id store.GadgetID, name string) {
	if s := m.lookup(id); s != nil {
		s.name.Store(&name)
	}
}

// forget drops the metrics of a deleted gadget, or of every gadget of a deleted workspace
// (id "").
func (m *callMetrics) forget(ws store.WorkspaceID, id store.GadgetID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gid, s := range m.gadgets {
		if gid == id || (id == "" && s.ws == ws) {
			delete(m.gadgets, gid)
		}
	}
}

// WorkspaceMetrics is what Workspace.Metrics returns.
type WorkspaceMetrics struct {
	// UptimeSeconds is how long the server has run.
	UptimeSeconds float64 `json:"uptimeSeconds"`
	// Gadgets are the caller's gadgets of the workspace, in name order.
	Gadgets []GadgetMetrics `json:"gadgets"`
	// Quotas are the calling user's use of the user quotas and the workspace's of the
	// workspace quotas, each against its limit.
	Quotas []QuotaUsage `json:"quotas"`
}

// QuotaUsage is the use of one quota against its limit (-1: unlimited).
type QuotaUsage struct {
	Name  string      `json:"name"`
	Scope quota.Scope `json:"scope"`
	Used  int64       `json:"used"`
	Limit int64       `json:"limit"`
}

// GadgetMetrics are one gadget's call metrics since the server started. Latencies are in
// milliseconds, estimated from a fixed-bucket histogram (metrics.Buckets), 0 without calls.
type GadgetMetrics struct {
	Name   string  `json:"name"`
	Calls  uint64  `json:"calls"`
	Errors uint64  `json:"errors"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	// Instances is how many instances of the gadget are loaded now: 1 while it is live, 0
	// once evicted, briefly 2 while a new version's instance replaces the old one.
	Instances int64 `json:"instances"`
	// Started is how many instances were loaded since the server started: the first call's,
	// and one after each eviction, trap or deploy.
	Started uint64 `json:"started"`
}

// Metrics returns the call metrics of the workspace's gadgets (an agent sees those in its
// scope). Role use.
func (w *Workspace) Metrics(ctx context.Context) (out WorkspaceMetrics, err error) {
	out.Gadgets = []GadgetMetrics{}
	var live map[string]int64 // the workspace's use of its live quotas
	err = w.enter(ctx, store.RoleUse, "metrics", func(ov *overseer) error {
		gs, err := ov.gadgetsOf(w.p)
		if err != nil {
			return err
		}
		slices.SortFunc(gs, func(a, b store.Gadget) int { return strings.Compare(a.Name, b.Name) })
		for _, g := range gs {
			gm := GadgetMetrics{Name: g.Name}
			if s := w.k.metrics.lookup(g.ID); s != nil {
				lat := s.latencySnapshot()
				gm.Calls, gm.Errors, gm.Instances, gm.Started = s.calls.Load(), s.errors.Load(), s.live.Load(), s.started.Load()
				gm.P50Ms, gm.P90Ms, gm.P99Ms = millis(lat, 0.5), millis(lat, 0.9), millis(lat, 0.99)
			}
			out.Gadgets = append(out.Gadgets, gm)
		}
		live = ov.workspaceUsage()
		return nil
	})
	if err != nil {
		return out, err
	}
	out.UptimeSeconds = time.Since(w.k.metrics.start).Seconds()
	if out.Quotas, err = w.k.userQuotaUsage(ctx, w.p.userID); err != nil {
		return out, err
	}
	lim := w.k.limits()
	for _, q := range quota.Infos {
		if used, ok := live[q.Name]; ok {
			out.Quotas = append(out.Quotas, QuotaUsage{Name: q.Name, Scope: q.Scope, Used: used, Limit: q.Get(lim)})
		}
	}
	return out, nil
}

// millis is the q-quantile of latency histogram h in milliseconds.
func millis(h *dto.Histogram, q float64) float64 { return metrics.Quantile(h, q) * 1000 }

// AuthorizeMetrics checks the bearer token of a request for the server's metrics (GET
// /metrics): only the user admin, the server's operator, may read them. It fails with
// UNAUTHORIZED, counted against remoteAddr like a failed authenticate().
func (k *Kernel) AuthorizeMetrics(ctx context.Context, token, remoteAddr string) error {
	p, err := k.authenticateAt(ctx, token, remoteAddr)
	if err != nil {
		return err
	}
	if !p.admin() {
		return fail(CodeUnauthorized, "the metrics are for the server's operator: use the token of the user %s", AdminName)
	}
	return nil
}

// kernelCollector exposes the kernel's metrics on its registry (Config.Metrics): uptime,
// gadget calls, errors, latency and instances started by workspace id and gadget name (one
// series per gadget that made a call since the start; a deleted gadget's are dropped, a
// renamed one's follow its name), the live instances, subscriptions and host quotas.
type kernelCollector struct{ k *Kernel }

var (
	gadgetLabels   = []string{"workspace", "gadget"}
	uptimeDesc     = prometheus.NewDesc("atelier_uptime_seconds", "Seconds since the server started.", nil, nil)
	callsDesc      = prometheus.NewDesc("atelier_gadget_calls_total", "Gadget calls that reached the gadget, by every path (clients, Code Mode, schedules, bindings).", gadgetLabels, nil)
	callErrorsDesc = prometheus.NewDesc("atelier_gadget_call_errors_total", "Gadget calls that failed (error, trap, deadline, busy, failed commit).", gadgetLabels, nil)
	durationDesc   = prometheus.NewDesc("atelier_gadget_call_duration_seconds", "Latency of gadget calls, from arrival at the gadget to the released reply.", gadgetLabels, nil)
	startedDesc    = prometheus.NewDesc("atelier_gadget_instances_started_total", "Gadget instances loaded (first call, after an eviction, a trap or a deploy).", gadgetLabels, nil)
	liveDesc       = prometheus.NewDesc("atelier_gadget_instances_live", "Gadget instances loaded now.", nil, nil)
	subsDesc       = prometheus.NewDesc("atelier_subscriptions", "Live event and console subscriptions of clients, UIs and agents.", nil, nil)
	quotaLimitDesc = prometheus.NewDesc("atelier_quota_limit", "The value of each host-wide quota (-1: unlimited); atelier admin quota changes it.", []string{"quota"}, nil)
	quotaUsedDesc  = prometheus.NewDesc("atelier_quota_used", "What the whole server uses of each host-wide quota.", []string{"quota"}, nil)
)

// Describe implements prometheus.Collector.
func (kernelCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{uptimeDesc, callsDesc, callErrorsDesc, durationDesc, startedDesc, liveDesc, subsDesc, quotaLimitDesc, quotaUsedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c kernelCollector) Collect(ch chan<- prometheus.Metric) {
	k := c.k
	k.metrics.mu.Lock()
	all := make([]*gadgetStats, 0, len(k.metrics.gadgets))
	for _, s := range k.metrics.gadgets {
		all = append(all, s)
	}
	k.metrics.mu.Unlock()

	ch <- prometheus.MustNewConstMetric(uptimeDesc, prometheus.GaugeValue, time.Since(k.metrics.start).Seconds())
	var live int64
	for _, s := range all {
		ws, name := string(s.ws), *s.name.Load()
		ch <- prometheus.MustNewConstMetric(callsDesc, prometheus.CounterValue, float64(s.calls.Load()), ws, name)
		ch <- prometheus.MustNewConstMetric(callErrorsDesc, prometheus.CounterValue, float64(s.errors.Load()), ws, name)
		ch <- prometheus.MustNewConstMetric(startedDesc, prometheus.CounterValue, float64(s.started.Load()), ws, name)
		h := s.latencySnapshot()
		buckets := make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		ch <- prometheus.MustNewConstHistogram(durationDesc, h.GetSampleCount(), h.GetSampleSum(), buckets, ws, name)
		live += s.live.Load()
	}
	ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(live))
	ch <- prometheus.MustNewConstMetric(subsDesc, prometheus.GaugeValue, float64(k.hub.count()))
	lim, used := k.limits(), k.hostUsage()
	for _, q := range quota.Infos {
		if q.Scope == quota.Host {
			ch <- prometheus.MustNewConstMetric(quotaLimitDesc, prometheus.GaugeValue, float64(q.Get(lim)), q.Name)
			ch <- prometheus.MustNewConstMetric(quotaUsedDesc, prometheus.GaugeValue, float64(used[q.Name]), q.Name)
		}
	}
}
