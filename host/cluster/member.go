package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"atelier/capnweb"
	"atelier/host/store"
)

// Member is this process's part of the cluster, as the kernel and `atelier serve` use it: the
// node, its leases, the replicated store and the router to the other nodes. It implements
// kernel.Cluster.
type Member struct {
	node   *Node
	leases *Leases
	store  *Store
	router *Router
}

// Join starts the node (waiting for the cluster to form), its leases and the replicated store
// whose replica is the bbolt file at replicaPath.
func Join(ctx context.Context, cfg Config, replicaPath string) (*Member, error) {
	n, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m := &Member{node: n}
	if m.leases, err = NewLeases(ctx, n); err != nil {
		m.Close()
		return nil, fmt.Errorf("join the cluster as %s: %w", cfg.Name, err)
	}
	if m.store, err = NewStore(ctx, n, m.leases, replicaPath); err != nil {
		m.Close()
		return nil, fmt.Errorf("join the cluster as %s: %w", cfg.Name, err)
	}
	return m, nil
}

// Store is the replicated store (the kernel's store.Store in cluster mode).
func (m *Member) Store() *Store { return m.store }

// Serve answers the sessions other nodes open for their clients: main returns the API of the
// principal whose token hash the dialing node names.
func (m *Member) Serve(main func(ctx context.Context, tokenHash string) (any, error), opts capnweb.Options) error {
	r, err := NewRouter(m.node, func(ctx context.Context, h Hello) (any, error) { return main(ctx, h.TokenHash) }, opts)
	if err != nil {
		return fmt.Errorf("serve peer sessions: %w", err)
	}
	m.router = r
	return nil
}

// SetAddress publishes this node's HTTP address in its membership record.
func (m *Member) SetAddress(addr string) { m.leases.SetAddress(addr) }

// Self implements kernel.Cluster.
func (m *Member) Self() store.NodeID { return m.node.Name() }

// Holder implements kernel.Cluster.
func (m *Member) Holder(ctx context.Context, ws store.WorkspaceID) (store.NodeID, bool, error) {
	return m.leases.Holder(ctx, ws)
}

// Pick implements kernel.Cluster.
func (m *Member) Pick(ctx context.Context, ws store.WorkspaceID) (store.NodeID, error) {
	return m.leases.Pick(ctx, ws)
}

// Draining implements kernel.Cluster.
func (m *Member) Draining() bool { return m.leases.Draining() }

// SetDraining marks the node draining (no workspace starts on it; the kernel hands its
// running ones over), or serving again.
func (m *Member) SetDraining(ctx context.Context, on bool) error {
	return m.leases.SetDraining(ctx, on)
}

// Dial implements kernel.Cluster.
func (m *Member) Dial(ctx context.Context, node store.NodeID, tokenHash string) (*capnweb.Session, error) {
	if m.router == nil {
		return nil, fmt.Errorf("dial node %s: this node serves no peer sessions yet", node)
	}
	return m.router.Dial(ctx, node, Hello{From: m.Self(), TokenHash: tokenHash})
}

// LeaseTTL implements kernel.Cluster.
func (m *Member) LeaseTTL() time.Duration { return m.node.cfg.LeaseTTL }

// Status is what `atelier cluster status` shows.
type Status struct {
	Self  store.NodeID `json:"self"`
	Peers []string     `json:"peers"`
	// Nodes are the live nodes' membership records; this node's own has its current values.
	Nodes []NodeInfo `json:"nodes"`
	// Workspaces maps each leased workspace to the node running it.
	Workspaces map[store.WorkspaceID]store.NodeID `json:"workspaces"`
	// Applied is the last log entry this node's replica applied (Log.Lag: how many it is
	// behind).
	Applied      uint64 `json:"applied"`
	PeerSessions int    `json:"peerSessions"`
	// Log is the size of the replicated log and its newest snapshot.
	Log        LogInfo `json:"log"`
	Replicas   int     `json:"replicas"`
	SyncAlways bool    `json:"syncAlways"`
	LeaseTTL   string  `json:"leaseTTL"`
	// Problems lists the parts JetStream could not answer now (while a stream elects a new
	// leader, for instance); the other fields are still filled in.
	Problems []string `json:"problems,omitempty"`
}

// Status implements kernel.Cluster.
func (m *Member) Status(ctx context.Context) (any, error) {
	st := Status{Self: m.Self(), Peers: m.node.Peers(), Applied: m.store.Applied(), Replicas: m.node.cfg.Replicas,
		SyncAlways: m.node.cfg.SyncAlways, LeaseTTL: m.node.cfg.LeaseTTL.String()}
	var err error
	if st.Nodes, err = m.leases.Nodes(ctx); err != nil {
		st.Problems = append(st.Problems, err.Error())
	}
	for i, n := range st.Nodes {
		if n.Name == st.Self { // this node's own row shows what it knows now
			st.Nodes[i] = m.leases.current(n)
		}
	}
	if st.Workspaces, err = m.leases.Held(ctx); err != nil {
		st.Problems = append(st.Problems, err.Error())
	} else {
		// The records' counts are as old as their last heartbeat: count the table read now,
		// so that the two never disagree.
		held := map[store.NodeID]int{}
		for _, node := range st.Workspaces {
			held[node]++
		}
		for i := range st.Nodes {
			st.Nodes[i].Leases = held[st.Nodes[i].Name]
		}
	}
	if st.Log, err = m.store.LogInfo(ctx); err != nil {
		st.Problems = append(st.Problems, err.Error())
	}
	if m.router != nil {
		st.PeerSessions = m.router.Sessions()
	}
	return st, nil
}

// Compact implements kernel.Cluster (Store.Compact).
func (m *Member) Compact(ctx context.Context) (any, error) { return m.store.Compact(ctx) }

// The gauges of this node's view of the cluster (Member's prometheus.Collector).
var (
	appliedDesc  = gaugeDesc("atelier_cluster_applied_sequence", "The last log entry this node's replica applied.")
	lagDesc      = gaugeDesc("atelier_cluster_replica_lag", "Log entries this node's replica has not applied yet.")
	entriesDesc  = gaugeDesc("atelier_cluster_log_entries", "Entries the replicated log holds (compaction purges those before the snapshot before the newest).")
	logBytesDesc = gaugeDesc("atelier_cluster_log_bytes", "Bytes the replicated log holds, per replica.")
	snapshotDesc = gaugeDesc("atelier_cluster_snapshot_sequence", "The log entry the newest snapshot holds (0: none yet).")
	leasesDesc   = gaugeDesc("atelier_cluster_leases_held", "Workspaces this node runs (leases it holds).")
	nodesDesc    = gaugeDesc("atelier_cluster_nodes_live", "Nodes whose membership record is live.")
	drainingDesc = gaugeDesc("atelier_cluster_draining", "1 while this node hands its workspaces over.")
	peersDesc    = gaugeDesc("atelier_cluster_peer_sessions", "Cap'n Web sessions with other nodes, both directions.")
)

func gaugeDesc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

// Describe implements prometheus.Collector (kernel.Cluster).
func (m *Member) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{appliedDesc, lagDesc, entriesDesc, logBytesDesc, snapshotDesc, leasesDesc, nodesDesc, drainingDesc, peersDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector (kernel.Cluster): this node's view of the
// cluster as gauges. Those the store or the leases cannot give within a second are left out.
func (m *Member) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	gauge(appliedDesc, float64(m.store.Applied()))
	if li, err := m.store.LogInfo(ctx); err == nil {
		gauge(lagDesc, float64(li.Lag))
		gauge(entriesDesc, float64(li.Entries))
		gauge(logBytesDesc, float64(li.Bytes))
		gauge(snapshotDesc, float64(li.Snapshot))
	}
	gauge(leasesDesc, float64(m.leases.HeldHere()))
	if nodes, err := m.leases.Nodes(ctx); err == nil {
		gauge(nodesDesc, float64(len(nodes)))
	}
	draining := 0.0
	if m.Draining() {
		draining = 1
	}
	gauge(drainingDesc, draining)
	if m.router != nil {
		gauge(peersDesc, float64(m.router.Sessions()))
	}
}

// Close leaves the cluster: peer sessions end, the store and leases stop, the node shuts
// down. Workspaces still leased by this node are taken over by others after the lease TTL.
func (m *Member) Close() {
	if m.router != nil {
		m.router.Close()
	}
	if m.store != nil {
		m.store.Close()
	}
	if m.leases != nil {
		m.leases.Close()
	}
	if m.node != nil {
		m.node.Close()
	}
}
