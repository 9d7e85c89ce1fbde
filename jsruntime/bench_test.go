package jsruntime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"atelier/host/capability/kv"
	"atelier/jsruntime"
)

// fiftyLines is a 50-line snippet: classes, closures, a regexp, JSON and two binding calls.
const fiftyLines = `class Vec {
  constructor(x, y) { this.x = x; this.y = y; }
  add(o) { return new Vec(this.x + o.x, this.y + o.y); }
  len() { return Math.hypot(this.x, this.y); }
}
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const words = "the quick brown fox jumps over the lazy dog".split(" ");
function histogram(list) {
  const h = new Map();
  for (const w of list) h.set(w, (h.get(w) ?? 0) + 1);
  return [...h.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}
function parseDates(text) {
  const re = /(\d{4})-(\d{2})-(\d{2})/g;
  const out = [];
  for (const m of text.matchAll(re)) out.push({ y: +m[1], m: +m[2], d: +m[3] });
  return out;
}
export default async function (env, ctx) {
  let v = new Vec(0, 0);
  for (let i = 0; i < 100; i++) v = v.add(new Vec(1, 2));
  const f = fib(15);
  const h = histogram(words);
  const dates = parseDates("from 2024-01-02 to 2025-03-04, then 2026-05-06");
  const doc = JSON.parse(JSON.stringify({ v, f, h, dates }));
  const sum = await env.calc.add(doc.f, doc.v.x);
  const product = await env.calc.mul(2, 21);
  const summary = {
    length: Math.round(v.len()),
    fib: f,
    top: h[0][0],
    years: dates.map((d) => d.y),
    sum,
    product,
  };
  console.log("summary", summary);
  const labels = [];
  for (const [word, count] of h) {
    if (count > 1) labels.push(word.toUpperCase());
  }
  const set = new Set(labels);
  const grouped = {};
  for (const d of dates) {
    grouped[d.y % 2 ? "odd" : "even"] ??= [];
    grouped[d.y % 2 ? "odd" : "even"].push(d);
  }
  return { summary, labels: [...set], grouped };
}
`

// benchLatency runs op b.N times and reports the p50 and p99 of its latency.
func benchLatency(b *testing.B, op func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkExecuteCodeTrivial(b *testing.B) {
	e := engine(b)
	code := jsruntime.Code{Source: "export default async function (env, ctx) { return 1 + 1 }"}
	benchLatency(b, func() error {
		_, err := e.ExecuteCode(context.Background(), code, jsruntime.Env{}, jsruntime.Limits{})
		return err
	})
}

func BenchmarkExecuteCode50Lines(b *testing.B) {
	e := engine(b)
	env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": &calc{}}}
	code := jsruntime.Code{Source: fiftyLines}
	benchLatency(b, func() error {
		_, err := e.ExecuteCode(context.Background(), code, env, jsruntime.Limits{})
		return err
	})
}

func BenchmarkGadgetCall(b *testing.B) {
	f := &gadgetFixture{store: kv.NewMemory(0)}
	g, err := engine(b).NewGadget(f.config(map[string]string{"server.js": `export class Gadget {
  echo(s) { return s }
}`}))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	benchLatency(b, func() error {
		_, err := g.Call(ctx, "echo", "hello")
		return err
	})
}
