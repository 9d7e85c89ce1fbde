package gatekeeper_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/runtime"
)

// BenchmarkFormats compares, in one run against the same loopback service and notebook, the
// notes gatekeeper's `list` as a WIT component (component: notes-go) and as an Extism plugin
// (extism: notes-extism), each a full session call (fetch through the egress policy, JSON
// decoding, an observation recorded in the queue), with a plain Go HTTP GET of the same URL
// that decodes the same JSON (raw). The gatekeeper cost of a format is its time minus raw.
// start-* measure starting and closing an instance of each (the Extism plugin is compiled
// once, then instantiated from the engine's cache).
func BenchmarkFormats(b *testing.B) {
	svc := startService(b)
	ctx := context.Background()
	rt := newRuntime(b, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	e := newEngine(b, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	comp := install(b, rt, notesManifest(b, svc), guest(b, "gatekeepers/notes-go"))
	plug := installExtism(b, e, extismManifest(b, svc), notesExtism(b))
	resource := svc.Origin + "/notebooks/work"
	// Three notes, so that list decodes and encodes something.
	seed := gatekeeper.NewMemoryQueue()
	seed.AutoApprove("seed", "add-note")
	_, ss := start(b, comp, "seed", resource, aliceToken, seed, nil)
	for _, title := range []string{"one", "two", "three"} {
		call(b, ss, nil, "add", title, "body of "+title)
	}
	_, cs := start(b, comp, "component", resource, aliceToken, gatekeeper.NewMemoryQueue(), nil)
	_, xs := start(b, plug, "extism", resource, aliceToken, gatekeeper.NewMemoryQueue(), nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	url := svc.Origin + "/api/notebooks/work/notes"

	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var res struct{ Notes []note }
			if err := json.Unmarshal(body, &res); err != nil || len(res.Notes) != 3 {
				b.Fatalf("%s %v", body, err)
			}
		}
	})
	for _, f := range []struct {
		name string
		s    *gatekeeper.Session
	}{{"component", cs}, {"extism", xs}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.s.Call(ctx, "list", "[]"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, f := range []struct {
		name string
		g    *gatekeeper.Gatekeeper
	}{{"start-component", comp}, {"start-extism", plug}} {
		b.Run(f.name, func(b *testing.B) {
			acct := gatekeeper.Account{
				Name: "bench", Resource: resource, Credentials: map[string]string{"token": aliceToken},
				Queue: gatekeeper.NewMemoryQueue(), Limits: runtime.Limits{Timeout: 10 * time.Second},
			}
			for b.Loop() {
				in, err := f.g.Start(ctx, acct)
				if err != nil {
					b.Fatal(err)
				}
				in.Close()
			}
		})
	}
}
