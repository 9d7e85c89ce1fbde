package gatekeeper_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/sdk/templates"
	"atelier/sdk/templates/builder"
	"atelier/tests/loadgen"
)

// BenchmarkFetch compares, in one run against the same loopback service, a plain Go HTTP GET
// (raw) with the same GET made by the probe gatekeeper through outbound-http (gatekeeper:
// session call -> guest -> host fetch -> guest -> JSON result; the probe is Go, and decodes
// its arguments and encodes its result with encoding/json), by the hop-c gatekeeper
// (gatekeeper-c: the same path with a C guest doing almost nothing of its own, so the hop is
// the host's), and with a full read of the notes gatekeeper (notes-list: fetch, JSON decoding,
// an observation recorded in the queue).
// The gatekeeper hop is the difference between gatekeeper and raw; gatekeeper-refused is the
// same call refused by the policy before any I/O (guest, canonical ABI and policy check only).
func BenchmarkFetch(b *testing.B) {
	svc := startService(b)
	url := svc.Origin + "/api/notebooks/work/whoami"
	rt := newRuntime(b, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	probe := install(b, rt, probeManifest(svc), guest(b, "tests/gatekeeper/guests/probe"))
	notes := install(b, rt, notesManifest(b, svc), guest(b, "gatekeepers/notes-go"))
	_, ps := start(b, probe, "probe", svc.Origin+"/notebooks/work", aliceToken, gatekeeper.NewMemoryQueue(), nil)
	_, ns := start(b, notes, "notes", svc.Origin+"/notebooks/work", aliceToken, gatekeeper.NewMemoryQueue(), nil)
	hop := probeManifest(svc)
	hop.Name = "hop-c"
	_, cs := start(b, install(b, rt, hop, hopC(b)), "hop-c", svc.Origin+"/notebooks/work", aliceToken, gatekeeper.NewMemoryQueue(), nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	ctx := context.Background()
	args := `["GET", "` + url + `", {}, ""]`
	refused := `["GET", "http://example.com/api/notebooks/work/whoami", {}, ""]`

	b.Run("raw", func(b *testing.B) {
		loadgen.Run(b, 1, func(int) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			io.ReadAll(resp.Body)
			return resp.Body.Close()
		})
	})
	b.Run("gatekeeper", func(b *testing.B) {
		loadgen.Run(b, 1, func(int) error {
			_, err := ps.Call(ctx, "fetch", args)
			return err
		})
	})
	b.Run("gatekeeper-c", func(b *testing.B) {
		loadgen.Run(b, 1, func(int) error {
			_, err := cs.Call(ctx, "whoami", "[]")
			return err
		})
	})
	b.Run("gatekeeper-refused", func(b *testing.B) {
		for b.Loop() {
			if _, err := ps.Call(ctx, "fetch", refused); err == nil {
				b.Fatal("a request outside the manifest was sent")
			}
		}
	})
	b.Run("notes-list", func(b *testing.B) {
		loadgen.Run(b, 1, func(int) error {
			_, err := ns.Call(ctx, "list", "[]")
			return err
		})
	})
}

// hopC builds the hop-c gatekeeper: the C gatekeeper template with guests/hop-c/main.c as its
// main.c, built by the authoring kit's builder (from its cache when warm).
func hopC(b *testing.B) []byte {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "hop-c")
	if _, err := templates.Create(dir, templates.Project{Kind: "gatekeeper", Lang: "c", Name: "hop-c"}); err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile("guests/hop-c/main.c")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.c"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	cache, err := builder.DefaultCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	res, err := builder.Build(context.Background(), dir, builder.Options{CacheDir: cache, Log: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	return res.Component
}
