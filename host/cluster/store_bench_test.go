package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"atelier/host/store"
)

// BenchmarkCommit measures commits to one workspace: Sequential is one commit at a time (the
// latency of a gadget call's commit), Chains submits from 16 chains at once (the throughput of
// one workspace, whose concurrent commits share log entries).
func BenchmarkCommit(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", n), func(b *testing.B) {
			ms := testStores(b, n)
			ctx := context.Background()
			ws := store.WorkspaceID(store.NewID("ws"))
			if err := ms[0].store.CreateWorkspace(ctx, store.Workspace{ID: ws, Name: "bench", Owner: "u", Created: time.Now()}); err != nil {
				b.Fatal(err)
			}
			l, err := ms[0].store.Acquire(ctx, ws)
			if err != nil {
				b.Fatal(err)
			}
			w, err := ms[0].store.Open(ctx, ws, l)
			if err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 256)
			b.Run("Sequential", func(b *testing.B) {
				took := make([]time.Duration, b.N)
				for i := range b.N {
					start := time.Now()
					if err := w.Commit(ctx, []store.Mutation{store.SetKV("g", []byte(strconv.Itoa(i)), value)}); err != nil {
						b.Fatal(err)
					}
					took[i] = time.Since(start)
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[b.N/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(took[b.N*99/100].Microseconds()), "p99-µs")
			})
			b.Run("Chains", func(b *testing.B) {
				const chains = 16
				cs := make([]store.CommitChain, chains)
				for i := range cs {
					cs[i] = w.Chain()
				}
				ps := make([]*store.Pending, 0, b.N)
				for i := range b.N {
					ps = append(ps, cs[i%chains].Submit([]store.Mutation{store.SetKV("g", []byte(strconv.Itoa(i)), value)}))
				}
				for _, p := range ps {
					if err := p.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRebuild measures a starting node's rebuild of its replica (NewStore on a new file)
// after 10,000 log entries (commits of a 256-byte value each, to 1,000 keys, so the state is a
// tenth of the log): replaying the whole log, and loading the newest snapshot of a compacted one. One
// node (R1); ns/op is one rebuild.
func BenchmarkRebuild(b *testing.B) {
	const entries, keys = 10_000, 1_000
	m := testStores(b, 1)[0]
	ctx := context.Background()
	_, w := open(b, m, newWorkspace(b, m, "u"))
	value := make([]byte, 256)
	for i := range entries { // one at a time: an entry each
		if err := w.Commit(ctx, []store.Mutation{store.SetKV("g", []byte(strconv.Itoa(i%keys)), value)}); err != nil {
			b.Fatal(err)
		}
	}
	rebuild := func(b *testing.B) {
		for range b.N {
			s, err := NewStore(ctx, m.node, m.leases, filepath.Join(b.TempDir(), "replica.db"))
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		li, err := m.store.LogInfo(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(li.Entries), "log-entries")
	}
	b.Run("replay", rebuild)
	for range 2 { // the second compaction purges up to the first snapshot
		if _, err := m.store.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		if err := w.Commit(ctx, []store.Mutation{store.SetKV("g", []byte("last"), value)}); err != nil {
			b.Fatal(err)
		}
		m.leases.SetApplied(m.store.Applied())
		if err := m.leases.publish(ctx); err != nil {
			b.Fatal(err)
		}
		awaitApplied(b, m, m.store.Applied())
	}
	b.Run("snapshot", rebuild)
}
