package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/notessvc"
	"atelier/tests/serveproc"
)

// BenchmarkHookFire measures a hook firing end to end on a real `atelier serve` (its own
// process, a bbolt file): a webhook request signed as the notes service signs it, POSTed to
// /hooks/<id>; the server checks the signature, the real notes gatekeeper turns the request
// into the event's payload, the test gadget's hook method runs and commits its state, the
// fire is recorded, and the server answers 200. One request at a time; p50-ns is the median
// request's latency, server-cpu-ns/op the server process's CPU time per fire.
func BenchmarkHookFire(b *testing.B) {
	ctx := context.Background()
	svc := notessvc.Start(b)
	dir, err := os.MkdirTemp("", "atelier-bench-hooks-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bin := serveproc.Binary(b, dir)
	proc := serveproc.Launch(b, bin, filepath.Join(dir, "atelier.db"), filepath.Join(dir, "cache"),
		"--gatekeeper-allow-addr", svc.Addr, "--hook-rate", "1000000", "--hook-burst", "1000000").Wait(b)
	s, err := capnweb.DialWebSocket(ctx, proc.URL, capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	api := s.Main().Call(ctx, "authenticate", proc.AdminToken(b))
	gk := notessvc.Await(b, api.Call(ctx, "installGatekeeper", svc.Archive(b, svc.Manifest(b, 0)))).(map[string]any)["id"].(string)
	acct := notessvc.Await(b, api.Call(ctx, "connectAccount", gk, svc.Notebook(), map[string]any{"token": notessvc.Token})).(map[string]any)["id"].(string)
	ws := api.Call(ctx, "createWorkspace", "bench")
	notessvc.Await(b, ws.Call(ctx, "createGadget", "hooker", guesttest.Bytes(b, "tests/e2e/hookgadget"), []any{"atelier:host/kv", "atelier:host/log", "atelier:host/hooks"}))
	notessvc.Await(b, ws.Call(ctx, "bindGatekeeper", "hooker", "notes", acct))
	conn := ws.Call(ctx, "gadget", "hooker").Call(ctx, "connect")
	var hk struct{ URL, Secret string }
	if err := json.Unmarshal([]byte(notessvc.Await(b, conn.Call(ctx, "watch", "notes", "note-added", "tally", "")).(string)), &hk); err != nil {
		b.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(hk.Secret)
	body := notessvc.NoteEvent(1, "benchmark")
	fire := func() time.Duration {
		start := time.Now()
		if status, out, _ := notessvc.Post(b, hk.URL, body, secret, time.Now()); status != 200 {
			b.Fatalf("fire: %d %v", status, out)
		}
		return time.Since(start)
	}
	fire() // the gadget's and the gatekeeper's instances start
	lat := make([]time.Duration, 0, b.N)
	cpu0, err := capnwebtests.ProcessCPU(proc.Pid())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		lat = append(lat, fire())
	}
	b.StopTimer()
	cpu1, err := capnwebtests.ProcessCPU(proc.Pid())
	if err != nil {
		b.Fatal(err)
	}
	if n := notessvc.Await(b, conn.Call(ctx, "tallied")); n != float64(b.N+1) {
		b.Fatalf("the gadget tallied %v fires, want %d", n, b.N+1)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "server-cpu-ns/op")
}
