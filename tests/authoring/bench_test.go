package authoring

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"atelier/host/capability/events"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/sdk/templates"
	"atelier/sdk/templates/builder"
)

// BenchmarkTemplateInstantiate measures, for each gadget template's component, a new instance
// (store + instantiate, with kv and log granted) and its first call (`get`), and reports the
// component's size. The components are built with the builder (from its cache when warm).
func BenchmarkTemplateInstantiate(b *testing.B) {
	ctx := context.Background()
	cache, err := builder.DefaultCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: b.TempDir(), Interfaces: kernel.HostInterfaces(events.NewBus())})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	for _, lang := range templates.Langs("gadget") {
		dir := filepath.Join(b.TempDir(), "bench-"+lang)
		if _, err := templates.Create(dir, templates.Project{Kind: "gadget", Lang: lang, Name: "bench-" + lang}); err != nil {
			b.Fatal(err)
		}
		res, err := builder.Build(ctx, dir, builder.Options{CacheDir: cache, Log: os.Stderr})
		if err != nil {
			b.Fatal(err)
		}
		comp, err := rt.Compile(ctx, res.Component)
		if err != nil {
			b.Fatal(err)
		}
		cfg := runtime.InstanceConfig{Name: lang, Grants: append(runtime.WASIBaseline(), templates.Grants("gadget", lang)...)}
		b.Run(lang, func(b *testing.B) {
			for b.Loop() {
				inst, err := rt.Instantiate(ctx, comp, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := inst.Call(ctx, "get"); err != nil {
					b.Fatal(err)
				}
				inst.Close()
			}
			b.ReportMetric(float64(len(res.Component)), "bytes")
		})
		comp.Close()
	}
}
