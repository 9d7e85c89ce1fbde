package browser

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterScreen runs the server as a cluster of one node (embedded NATS JetStream, no
// routes): the admin finds the Cluster screen in the menu, sees the node and the log, compacts
// the log and drains the node (accepting the confirmation), as `atelier cluster` does.
func TestClusterScreen(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "--cluster", "--node", "n1", "--cluster-secret-file", filepath.Join(dir, "secret"))
	admin := h.adminTab(h.base)
	acceptDialogs(admin)
	h.createWorkspace(admin, "ops")
	h.run(admin, "open the cluster screen", click("#nav-cluster"), visible(`#cluster-nodes tr[data-node="n1"]`), visible("#cluster-log"))
	var node, log string
	h.run(admin, "read the node and the log", text(`#cluster-nodes tr[data-node="n1"]`, &node), text("#cluster-log", &log))
	if !strings.Contains(node, "n1 (this node)") || !strings.Contains(node, "serving") {
		t.Errorf("the node's row reads %q, want n1, this node, serving", node)
	}
	if !strings.HasPrefix(log, "Log: ") || !strings.Contains(log, "entries") {
		t.Errorf("the log line reads %q", log)
	}
	// The node's own row is current, not a heartbeat old: its workspace and its applied entry.
	var self, leases, applied string
	h.run(admin, "read this node's row", text("#cluster-self", &self),
		text(`#cluster-nodes tr[data-node="n1"] td:nth-child(4)`, &leases), text(`#cluster-nodes tr[data-node="n1"] td:nth-child(5)`, &applied))
	if leases != "1" || !strings.Contains(self, "applied entry "+applied+" ") {
		t.Errorf("this node's row shows %s workspaces and entry %s applied; want 1 and the entry of %q", leases, applied, self)
	}
	h.shot(admin, "17-cluster")
	h.run(admin, "compact the log", click("#cluster-compact"),
		toastShown(`t.textContent.startsWith("snapshot at entry") || t.textContent.startsWith("nothing to do")`))
	h.run(admin, "drain the node", visible("#cluster-drain"), click("#cluster-drain"),
		toastShown(`t.textContent.startsWith("drained n1")`))
}
