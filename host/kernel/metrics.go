package kernel

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	live    atomic.Int64  // loaded actors: 0 or 1 (briefly 2 while one replaces another)
	started atomic.Uint64 // instances loaded since the server started
	latency metrics.Histogram
}

// record counts one call that started at start.
func (s *gadgetStats) record(start time.Time, err error) {
	s.latency.Observe(time.Since(start))
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
		s = &gadgetStats{ws: ws}
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
// milliseconds, estimated from a fixed-bucket histogram (metrics.Bounds), 0 without calls.
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
				lat := s.latency.Snapshot()
				gm.Calls, gm.Errors, gm.Instances, gm.Started = s.calls.Load(), s.errors.Load(), s.live.Load(), s.started.Load()
				gm.P50Ms, gm.P90Ms, gm.P99Ms = millis(lat.Quantile(0.5)), millis(lat.Quantile(0.9)), millis(lat.Quantile(0.99))
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

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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

// WriteMetrics writes the kernel's metrics in the Prometheus text format: uptime, gadget
// calls, errors, latency and instances started by workspace id and gadget name, and the live
// instances.
func (k *Kernel) WriteMetrics(t *metrics.TextWriter) {
	type series struct {
		ws    string
		name  string
		stats *gadgetStats
	}
	k.metrics.mu.Lock()
	all := make([]series, 0, len(k.metrics.gadgets))
	for _, s := range k.metrics.gadgets {
		all = append(all, series{string(s.ws), *s.name.Load(), s})
	}
	k.metrics.mu.Unlock()
	slices.SortFunc(all, func(a, b series) int { return cmp.Or(strings.Compare(a.ws, b.ws), strings.Compare(a.name, b.name)) })
	labels := func(s series) []metrics.Label {
		return []metrics.Label{{Name: "workspace", Value: s.ws}, {Name: "gadget", Value: s.name}}
	}

	t.Family("atelier_uptime_seconds", metrics.Gauge, "Seconds since the server started.")
	t.Sample("atelier_uptime_seconds", nil, time.Since(k.metrics.start).Seconds())
	t.Family("atelier_gadget_calls_total", metrics.Counter, "Gadget calls that reached the gadget, by every path (clients, Code Mode, schedules, bindings).")
	for _, s := range all {
		t.Sample("atelier_gadget_calls_total", labels(s), float64(s.stats.calls.Load()))
	}
	t.Family("atelier_gadget_call_errors_total", metrics.Counter, "Gadget calls that failed (error, trap, deadline, busy, failed commit).")
	for _, s := range all {
		t.Sample("atelier_gadget_call_errors_total", labels(s), float64(s.stats.errors.Load()))
	}
	t.Family("atelier_gadget_call_duration_seconds", metrics.Hist, "Latency of gadget calls, from arrival at the gadget to the released reply.")
	for _, s := range all {
		t.Histogram("atelier_gadget_call_duration_seconds", labels(s), s.stats.latency.Snapshot())
	}
	t.Family("atelier_gadget_instances_started_total", metrics.Counter, "Gadget instances loaded (first call, after an eviction, a trap or a deploy).")
	for _, s := range all {
		t.Sample("atelier_gadget_instances_started_total", labels(s), float64(s.stats.started.Load()))
	}
	var live int64
	for _, s := range all {
		live += s.stats.live.Load()
	}
	t.Family("atelier_gadget_instances_live", metrics.Gauge, "Gadget instances loaded now.")
	t.Sample("atelier_gadget_instances_live", nil, float64(live))
	t.Family("atelier_subscriptions", metrics.Gauge, "Live event and console subscriptions of clients, UIs and agents.")
	t.Sample("atelier_subscriptions", nil, float64(k.hub.count()))
	lim, used := k.limits(), k.hostUsage()
	hostQuotas := func(name, help string, value func(quota.Info) int64) {
		t.Family(name, metrics.Gauge, help)
		for _, q := range quota.Infos {
			if q.Scope == quota.Host {
				t.Sample(name, []metrics.Label{{Name: "quota", Value: q.Name}}, float64(value(q)))
			}
		}
	}
	hostQuotas("atelier_quota_limit", "The value of each host-wide quota (-1: unlimited); atelier admin quota changes it.", func(q quota.Info) int64 { return q.Get(lim) })
	hostQuotas("atelier_quota_used", "What the whole server uses of each host-wide quota.", func(q quota.Info) int64 { return used[q.Name] })
	if k.cfg.Cluster != nil {
		k.cfg.Cluster.WriteMetrics(t)
	}
}
