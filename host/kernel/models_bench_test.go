package kernel

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"atelier/host/auth"
	"atelier/host/store"
)

// BenchmarkModels measures what a chat run pays to resolve its model (a store read and the
// key's AES-GCM open) and what listModels costs, with n models of the user's.
func BenchmarkModels(b *testing.B) {
	for _, n := range []int{1, 32} {
		dir := b.TempDir()
		db, err := store.Open(filepath.Join(dir, "a.db"))
		if err != nil {
			b.Fatal(err)
		}
		k := New(Config{Store: db, KeyFile: filepath.Join(dir, "vault.key"), Password: auth.TestParams, Logger: slog.New(slog.DiscardHandler)})
		a := &Authed{k: k, p: &principal{k: k, userID: "u_ada", username: "ada"}}
		ctx := context.Background()
		var id string
		for i := range n {
			info, err := a.AddModel(ctx, ModelInput{Name: fmt.Sprint("m", i), Provider: "openai", Model: "gpt-4o", APIKey: "sk-bench-0123456789"})
			if err != nil {
				b.Fatal(err)
			}
			id = info.ID
		}
		b.Run(fmt.Sprintf("modelSpec/models=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer CPUPerOp(b)()
			for b.Loop() {
				if _, err := k.modelSpec(ctx, "u_ada", id); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("listModels/models=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer CPUPerOp(b)()
			for b.Loop() {
				if _, err := a.ListModels(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		k.Close()
		db.Close()
	}
}
