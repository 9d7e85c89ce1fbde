package main

import (
	"atelier/host/cluster"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func clusterCommand() command {
	return command{
		name:    "cluster",
		summary: "show a cluster's nodes and workspace placement, drain a node, or compact the log",
		details: `A cluster is several "atelier serve --cluster" nodes (docs/cluster.md). These commands
talk to the node named by --server, as the admin user.

Examples:
  atelier cluster status --server http://10.0.0.1:8787
  atelier cluster drain --server http://10.0.0.2:8787
  atelier cluster compact --server http://10.0.0.1:8787`,
		subcommands: []command{clusterStatusCommand(), clusterDrainCommand(), clusterCompactCommand()},
	}
}

func clusterStatusCommand() command {
	return command{
		name:    "status",
		usage:   "[--server URL] [--json]",
		summary: "list the nodes, which node runs each workspace, and replication lag (admin only)",
		details: "Asks one node for the cluster as it sees it: live nodes with the number of workspaces each runs (counted from the same lease table as the list below), draining flag and the last log entry each has applied (as of its last heartbeat), the node running each active workspace, that node's replica lag (log entries it has not applied yet), and the log's size and newest snapshot.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the status as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"cluster status takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				st, err := await[cluster.Status](ctx, c, c.api.Call(ctx, "clusterStatus"))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				if *asJSON {
					return printJSON(out, st)
				}
				sync := "every 2 min (acknowledged writes survive losing a minority of nodes)"
				if st.SyncAlways {
					sync = "always (acknowledged writes survive losing any nodes' power at once)"
				}
				fmt.Fprintf(out, "node %s: replica applied %d (lag %d), %d peer sessions; replicas %d, sync %s, lease TTL %s\n",
					st.Self, st.Applied, st.Log.Lag, st.PeerSessions, st.Replicas, sync, st.LeaseTTL)
				snapshot := "no snapshot yet"
				if st.Log.Snapshot > 0 {
					snapshot = fmt.Sprintf("newest snapshot at entry %d", st.Log.Snapshot)
				}
				fmt.Fprintf(out, "log: %d entries, %s; %s\n\n", st.Log.Entries, formatSize(int64(st.Log.Bytes)), snapshot)
				for _, p := range st.Problems {
					fmt.Fprintf(out, "incomplete (try again in a few seconds): %s\n", p)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tWORKSPACES\tAPPLIED\tUP\tLAST SEEN")
				for _, n := range st.Nodes {
					state := "serving"
					if n.Draining {
						state = "draining"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s ago\n", n.Name, n.Address, state, n.Leases, n.Applied,
						time.Since(n.Started).Round(time.Second), time.Since(n.Seen).Round(100*time.Millisecond))
				}
				tw.Flush()
				if len(st.Workspaces) > 0 {
					fmt.Fprintln(out)
					tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "WORKSPACE\tNODE")
					for _, id := range slices.Sorted(maps.Keys(st.Workspaces)) {
						fmt.Fprintf(tw, "%s\t%s\n", id, st.Workspaces[id])
					}
					tw.Flush()
				}
				return nil
			}
		},
	}
}

func clusterDrainCommand() command {
	return command{
		name:    "drain",
		usage:   "[--server URL]",
		summary: "move every workspace off the node (admin only), so it can be stopped",
		details: `Marks the node named by --server draining: no workspace starts on it any more, and each
one running there stops once its calls in flight finished, to start on another node at its
next call. Its clients keep working through it. Stop the node afterwards (Ctrl-C or SIGTERM,
which also drains first).`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"cluster drain takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				start := time.Now()
				if _, err := await[any](ctx, c, c.api.Call(ctx, "drainNode")); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "drained %s in %s: its workspaces start on other nodes at their next call\n",
					strings.TrimSuffix(*server, "/"), time.Since(start).Round(time.Millisecond))
				return nil
			}
		},
	}
}

func clusterCompactCommand() command {
	return command{
		name:    "compact",
		usage:   "[--server URL]",
		summary: "snapshot the cluster's state and compact its log now (admin only)",
		details: `Asks the node named by --server to snapshot its replica and compact the log, as the
compacting node does on its own every --snapshot-every entries: the log is purged up to the
snapshot before the new one (the first compaction only snapshots), never past what a live node
has applied. Nodes that start afterwards load the new snapshot and replay only what follows it.`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"cluster compact takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				done, err := await[cluster.Compaction](ctx, c, c.api.Call(ctx, "compactLog"))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				switch {
				case done.Snapshot == 0:
					fmt.Fprintln(out, "nothing to do: the newest snapshot holds every entry applied")
				case done.PurgedBelow == 0:
					fmt.Fprintf(out, "snapshot at entry %d; nothing purged yet (the next compaction purges up to it, once every node applied it)\n", done.Snapshot)
				default:
					fmt.Fprintf(out, "snapshot at entry %d; the log was purged below entry %d\n", done.Snapshot, done.PurgedBelow)
				}
				return nil
			}
		},
	}
}
